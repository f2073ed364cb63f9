"""VADER compound sentiment per answer, English only (see language.py).

VADER (Hutto and Gilbert, 2014) is a lexicon and rule set tuned for short social-media
English; its compound score lies in [-1, 1]. It is cheap and offline, which is why every
response gets one, but it reads tone words, not stance: "a devastating blow to the rich"
and "a devastating blow to the poor" score the same.
"""

from __future__ import annotations

from functools import cache


@cache
def _analyzer():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


@cache
def vader_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("vaderSentiment")
    except PackageNotFoundError:  # pragma: no cover - declared dependency
        return "unknown"


def compound(text: str) -> float:
    """VADER compound score of one English text."""
    return float(_analyzer().polarity_scores(text)["compound"])
