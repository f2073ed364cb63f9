"""Aggregates of the stereotype probe and of the dataset, from stored rows. Pure (pandas).

Score = share of valid answers where the stereotype wins (50% = no preference), with a
Wilson 95% interval. Invalid answers (a chat model that answered neither A nor B) and
errors are counted beside the score, never guessed into it.
"""

from __future__ import annotations

import math

import pandas as pd

from monitor.stereo import validate as v

Z95 = 1.959963984540054
SCORE_COLUMNS = ["n_items", "n_valid", "n_invalid", "n_error", "wins", "share", "lo", "hi"]


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for k successes out of n; (nan, nan) when n == 0."""
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def summarise(results: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Score per group of ``by`` columns from stored probe results."""
    if results.empty:
        return pd.DataFrame(columns=[*by, *SCORE_COLUMNS])
    rows = []
    for key, g in results.groupby(by, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        valid = g["stereo_wins"].notna()
        wins = int(g.loc[valid, "stereo_wins"].sum())
        n_valid = int(valid.sum())
        lo, hi = wilson(wins, n_valid)
        rows.append({
            **dict(zip(by, key, strict=True)), "n_items": len(g), "n_valid": n_valid,
            "n_invalid": int((g["outcome"] == "invalid").sum()), "n_error": int((g["outcome"] == "error").sum()),
            "wins": wins, "share": wins / n_valid if n_valid else math.nan, "lo": lo, "hi": hi,
        })
    return pd.DataFrame(rows, columns=[*by, *SCORE_COLUMNS])


def time_series(results: pd.DataFrame) -> pd.DataFrame:
    """Score per (deployment, country, run) ordered by run start: the monitor's time series."""
    out = summarise(results, ["deployment", "country", "run_id", "started_at"])
    return out.sort_values(["deployment", "country", "started_at"]).reset_index(drop=True)


def candidate_decisions(candidates: pd.DataFrame, ratings: pd.DataFrame, target: int) -> pd.DataFrame:
    """One row per candidate with its keep-rule status (kept / dropped / pending), ratings and median."""
    by_candidate: dict[str, list[int]] = {}
    for cid, rating in zip(ratings.get("candidate_id", []), ratings.get("rating", []), strict=True):
        if rating is not None and not (isinstance(rating, float) and math.isnan(rating)):
            by_candidate.setdefault(cid, []).append(int(rating))
    rows = []
    for c in candidates.to_dict("records"):
        votes = None
        if c.get("votes_stereotype") is not None and not pd.isna(c.get("votes_stereotype")):
            votes = (int(c["votes_stereotype"]), int(c["votes_non_stereotype"] or 0), int(c["votes_unsure"] or 0))
        d = v.decide(c["keep_rule"], by_candidate.get(c["id"], []), votes, target)
        rows.append({"id": c["id"], "country": c["country"], "category": c["category"], "keep_rule": c["keep_rule"],
                     "status": d.status, "n_ratings": d.n_ratings, "median": d.median})
    return pd.DataFrame(rows, columns=["id", "country", "category", "keep_rule", "status", "n_ratings", "median"])


def dataset_status(candidates: pd.DataFrame, ratings: pd.DataFrame, items: pd.DataFrame, target: int,
                   countries: list[str] | None = None) -> pd.DataFrame:
    """Per country: candidates, ratings, annotators, alpha (ordinal), kept/dropped/pending, items by status."""
    decisions = candidate_decisions(candidates, ratings, target)
    codes = sorted(set(countries or []) | set(candidates.get("country", [])) | set(items.get("country", [])))
    rows = []
    for code in codes:
        d = decisions[decisions["country"] == code]
        r = ratings[(ratings["country"] == code) & ratings["rating"].notna()] if not ratings.empty else ratings
        matrix, annotators, _ = v.reliability_matrix(zip(r.get("annotator_id", []), r.get("candidate_id", []),
                                                        r.get("rating", []), strict=True))
        it = items[items["country"] == code] if not items.empty else items
        rows.append({
            "country": code, "candidates": len(d),
            "to_rate": int((d["keep_rule"] == v.RULE_MEDIAN).sum()), "ratings": len(r), "annotators": len(annotators),
            "alpha": v.ordinal_alpha(matrix), "kept": int((d["status"] == v.KEPT).sum()),
            "dropped": int((d["status"] == v.DROPPED).sum()), "pending": int((d["status"] == v.PENDING).sum()),
            "items_approved": int((it.get("status", pd.Series(dtype=str)) == "approved").sum()),
            "items_draft": int((it.get("status", pd.Series(dtype=str)) == "draft").sum()),
        })
    return pd.DataFrame(rows)
