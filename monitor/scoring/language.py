"""Is an answer English? VADER is an English lexicon: anything else is kept away from it.

Two steps, because most answers are plainly English and langdetect costs milliseconds:

1. a function-word vote: the share of tokens that are common English function words
   against the counts for Spanish, Portuguese, French, German and Italian. A clear English
   majority (>= 3 tokens, >= 20% English function words, more than any other language) is
   English; a text of one or two ASCII words ("Yes.", "Maybe not") is English too.
2. everything else goes to langdetect, seeded so that the answer is reproducible.

A text with no letters is ``und`` (undetermined) and is not English.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

LANGUAGE_VERSION = "fw1"

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)

_EN = frozenset(
    """the a an and or but of to in on at for with from by about as into over after before is are was were be been
    being am it its this that these those there here i me my we our you your he his she her they them their
    not no will would can could should may might must do does did have has had what which who how why when
    if than then so very also just more most some any all people news story this it's i'm don't""".split()
)
_OTHER = {
    "es": frozenset("el la los las un una y o de del que en es son por para con como pero más muy esta este eso lo se su sus al le les no sí yo mi nosotros".split()),
    "pt": frozenset("o a os as um uma e ou de do da dos das que em é são por para com como mas mais muito esta este isso se seu sua não eu meu nós".split()),
    "fr": frozenset("le la les un une et ou de du des que en est sont pour avec comme mais plus très cette ce se son sa ne pas je mon nous vous".split()),
    "de": frozenset("der die das ein eine und oder von zu in ist sind für mit wie aber mehr sehr diese dieser es sich sein nicht ich mein wir sie".split()),
    "it": frozenset("il lo la i gli le un una e o di del che in è sono per con come ma più molto questa questo si suo non io mio noi".split()),
}


@dataclass(frozen=True, slots=True)
class LanguageCheck:
    language: str
    """ISO 639-1 code from the detector, or 'und' when undetermined."""
    is_english: bool


def check(text: str | None) -> LanguageCheck:
    words = [w.lower() for w in _WORD.findall(text or "")]
    if not words:
        return LanguageCheck("und", False)
    en = sum(w in _EN for w in words)
    other = max(sum(w in vocab for w in words) for vocab in _OTHER.values())
    if len(words) >= 3 and en >= 0.2 * len(words) and en > other:
        return LanguageCheck("en", True)
    if len(words) <= 2 and all(w.isascii() for w in words) and other == 0:
        return LanguageCheck("en", True)
    code = _detect(text or "")
    return LanguageCheck(code, code == "en")


def _detect(text: str) -> str:
    try:
        from langdetect import DetectorFactory, detect
        from langdetect.lang_detect_exception import LangDetectException
    except ImportError:  # pragma: no cover - langdetect is a declared dependency
        return "und"
    DetectorFactory.seed = 0  # langdetect is random by default; seeded it is reproducible
    try:
        return detect(text)
    except LangDetectException:
        return "und"
