"""Validation of candidate stereotypes by in-country annotators. Pure (numpy; krippendorff lazily).

Rules, versioned by VALIDATION_VERSION and documented in docs/ESPANSTEREO.md:

- **Likert** (``median_likert``): each candidate is rated 1-5 for how common it is in the
  annotator's country; a skip is not a rating. A candidate is decided once it has the
  configured number of ratings (``[stereo] ratings_per_item``, default 3); it is **kept**
  when the median rating is above 2, otherwise dropped.
- **Votes** (``majority_votes``, SeeGULL): kept when the 'stereotype' votes are a strict
  majority of all votes cast (stereotype + non_stereotype + unsure), i.e. 2 of 3.
- **Curated** (the demo seed, a published validated dataset): kept as published.

Agreement per country is Krippendorff's alpha at the ordinal level, computed by the
maintained ``krippendorff`` package on the annotator x candidate matrix.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from monitor.ids import make_id

VALIDATION_VERSION = "1"
LIKERT_MIN, LIKERT_MAX = 1, 5
KEEP_MEDIAN_ABOVE = 2
DEFAULT_RATINGS_PER_ITEM = 3

RULE_MEDIAN = "median_likert"
RULE_MAJORITY = "majority_votes"
RULE_CURATED = "curated"

PENDING, KEPT, DROPPED = "pending", "kept", "dropped"

LIKERT_LABELS: dict[int, str] = {
    1: "1 · Nunca lo he observado",
    2: "2 · Lo he oído muy pocas veces",
    3: "3 · Algo común",
    4: "4 · Común",
    5: "5 · Muy extendido",
}
"""Anchored labels shown to annotators (1 never observed ... 5 very widespread)."""

AGE_BANDS = ("18-24", "25-34", "35-44", "45-54", "55-64", "65+")


class ValidationError(ValueError):
    """An annotation is not acceptable; the message says what to change."""


@dataclass(frozen=True, slots=True)
class Decision:
    status: str
    """PENDING, KEPT or DROPPED."""
    n_ratings: int
    median: float | None


def median_keep(ratings: Iterable[int]) -> bool | None:
    """True when the median of ``ratings`` is above 2; None without ratings."""
    values = [int(r) for r in ratings]
    return None if not values else median(values) > KEEP_MEDIAN_ABOVE


def majority_keep(stereotype: int, non_stereotype: int, unsure: int) -> bool | None:
    """True when 'stereotype' votes are a strict majority of all votes; None without votes."""
    total = stereotype + non_stereotype + unsure
    return None if total == 0 else 2 * stereotype > total


def decide(keep_rule: str, ratings: Iterable[int], votes: tuple[int, int, int] | None, target: int) -> Decision:
    """Status of one candidate under its keep rule."""
    values = [int(r) for r in ratings]
    med = float(median(values)) if values else None
    if keep_rule == RULE_CURATED:
        return Decision(KEPT, len(values), med)
    if keep_rule == RULE_MAJORITY and votes is not None:
        kept = majority_keep(*votes)
        return Decision(PENDING if kept is None else (KEPT if kept else DROPPED), len(values), med)
    if len(values) < target:
        return Decision(PENDING, len(values), med)
    return Decision(KEPT if median_keep(values) else DROPPED, len(values), med)


def check_rating(rating: int | None) -> int | None:
    if rating is None:
        return None
    if isinstance(rating, bool) or int(rating) != rating or not LIKERT_MIN <= int(rating) <= LIKERT_MAX:
        raise ValidationError(f"la valoración debe ser un entero de {LIKERT_MIN} a {LIKERT_MAX} (recibido {rating!r})")
    return int(rating)


def check_onboarding(name: str, country: str, born_raised: bool, fluent: bool, countries: Iterable[str]) -> str:
    """The cleaned annotator name; raises ValidationError when a requirement is not met."""
    clean = " ".join((name or "").split())
    if not clean:
        raise ValidationError("escribe un nombre o seudónimo para identificarte")
    if len(clean) > 80:
        raise ValidationError("el nombre o seudónimo debe tener como máximo 80 caracteres")
    if country not in set(countries):
        raise ValidationError(f"país desconocido {country!r}; elige uno de la lista")
    if not born_raised:
        raise ValidationError("solo pueden anotar personas nacidas y criadas en el país que evalúan")
    if not fluent:
        raise ValidationError("hace falta hablar español con fluidez para anotar")
    return clean


def next_candidates(annotator_id: str, pool: Iterable[tuple[str, int]], done: set[str], target: int,
                    limit: int = 1) -> list[str]:
    """Balanced assignment: candidates below ``target`` ratings that this annotator has not rated or
    skipped, fewest ratings first; ties in an order particular to the annotator, so that two people
    working at once tend to cover different candidates."""
    eligible = [(n, make_id("assign", annotator_id, cid), cid) for cid, n in pool if cid not in done and n < target]
    eligible.sort()
    return [cid for _, _, cid in eligible[:limit]]


def reliability_matrix(ratings: Iterable[tuple[str, str, int]]) -> tuple[list[list[float]], list[str], list[str]]:
    """Annotator x candidate matrix (NaN where not rated) from (annotator, candidate, rating) rows."""
    rows = [(a, c, int(r)) for a, c, r in ratings if r is not None]
    annotators = sorted({a for a, _, _ in rows})
    items = sorted({c for _, c, _ in rows})
    ai = {a: i for i, a in enumerate(annotators)}
    ci = {c: i for i, c in enumerate(items)}
    matrix = [[math.nan] * len(items) for _ in annotators]
    for a, c, r in rows:
        matrix[ai[a]][ci[c]] = float(r)
    return matrix, annotators, items


def ordinal_alpha(matrix: list[list[float]]) -> float | None:
    """Krippendorff's alpha (ordinal) from the ``krippendorff`` package; None when undefined
    (fewer than two annotators, no candidate rated twice, or no variation at all)."""
    import numpy as np

    data = np.asarray(matrix, dtype=float)
    if data.ndim != 2 or data.shape[0] < 2:
        return None
    if not ((~np.isnan(data)).sum(axis=0) >= 2).any():
        return None
    values = data[~np.isnan(data)]
    if len(np.unique(values)) < 2:
        return None
    import krippendorff

    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"))
    except (ValueError, ZeroDivisionError):  # e.g. the pairable ratings hold a single value
        return None
    return None if math.isnan(value) or math.isinf(value) else value
