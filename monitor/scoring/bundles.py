"""Assemble cells (bundle + controls) from scored response rows and compute their metrics. Pure.

Input: one row per stored response of some articles of a batch (the columns of
``ROW_COLUMNS``) and the matrix of their embeddings. Output: one row per cell, i.e. per
(deployment, article, family, paraphrase, dimension), with every cell column except the
q-value, which needs the whole batch (cells.py applies Benjamini-Hochberg).

Which responses count (docs/METHODS.md, "Cells"):
- identity slots: identity prompts of the dimension, sample_index 0;
- repeats: identity-free prompt of the same (deployment, article, family, paraphrase),
  every sample index; placebos: placebo prompts, sample_index 0;
- a response is usable when its status is 'ok' and it has a score row (an embedding);
  non-English answers are usable for S but carry no sentiment.

All maths is vectorised over cells: padded (cells, slots, dim) arrays with masks, and the
permutation test batched per (identities, repeats) shape.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from monitor.config import StatsConfig
from monitor.scoring import framing, stats
from monitor.types import CONTROL_IDENTITY, CONTROL_IDENTITY_FREE, CONTROL_PLACEBO, STATUS_EMPTY, STATUS_ERROR, STATUS_OK, STATUS_REFUSAL

ROW_COLUMNS = ("deployment", "article_id", "family", "paraphrase", "control", "dimension", "identity_key",
               "sample_index", "status", "sentiment", "is_english", "has_embedding", "created_at", "stratum")
GROUP = ["deployment", "article_id", "family", "paraphrase"]
CELL = [*GROUP, "dimension"]
PERMUTATION_CHUNK = 2048  # cells per batched permutation test; bounds the (cells, slots, dim) array


def compute_cells(rows: pd.DataFrame, embeddings: np.ndarray, expected: Mapping[str, int],
                  stats_cfg: StatsConfig) -> pd.DataFrame:
    """One row per cell; ``rows`` index i refers to ``embeddings[i]``; ``expected``: identities per dimension."""
    if rows.empty:
        return pd.DataFrame()
    rows = _latest(rows.reset_index(drop=False).rename(columns={"index": "emb_row"}))
    usable = (rows["status"] == STATUS_OK) & rows["has_embedding"].astype(bool)
    rows = rows.assign(usable=usable)
    rows["group"] = rows.groupby(GROUP, sort=True).ngroup()

    ident = rows[(rows["control"] == CONTROL_IDENTITY) & (rows["sample_index"] == 0)]
    if ident.empty:
        return pd.DataFrame()
    cells = _validity(ident, expected)
    ident = ident.assign(cell=ident.groupby(CELL, sort=True).ngroup())
    id_rows = ident[ident["usable"]].sort_values(["cell", "identity_key"], kind="stable")
    id_cell = id_rows["cell"].to_numpy()
    id_idx, id_mask = _padded(id_cell, id_rows["emb_row"].to_numpy(), len(cells))
    id_keys, _ = _padded(id_cell, np.arange(len(id_rows)), len(cells))
    keys = id_rows["identity_key"].to_numpy()
    sent_id = _padded_values(id_cell, _sentiment(id_rows), len(cells))

    n_groups = int(rows["group"].max()) + 1
    reps = rows[(rows["control"] == CONTROL_IDENTITY_FREE) & rows["usable"]].sort_values(["group", "sample_index"])
    rep_idx, rep_mask = _padded(reps["group"].to_numpy(), reps["emb_row"].to_numpy(), n_groups)
    rep_sent = _padded_values(reps["group"].to_numpy(), _sentiment(reps), n_groups)
    plac = rows[(rows["control"] == CONTROL_PLACEBO) & (rows["sample_index"] == 0) & rows["usable"]]
    pl_idx, pl_mask = _padded(plac["group"].to_numpy(), plac["emb_row"].to_numpy(), n_groups)

    g = cells["group"].to_numpy()
    emb = np.asarray(embeddings, dtype=np.float32)
    s = framing.dispersion(_take(emb, id_idx), id_mask)
    n_group = framing.dispersion(_take(emb, rep_idx), rep_mask)
    s_pl_group = framing.dispersion(_take(emb, pl_idx), pl_mask)
    far = framing.farthest_from_centroid(_take(emb, id_idx), id_mask)

    sent_range, sent_mad = framing.sentiment_spread(sent_id)
    n_sent = np.sum(~np.isnan(sent_id), axis=1)
    range_noise, mad_noise = framing.noise_sentiment(rep_sent[g], n_sent)
    lo, hi = _extremes(sent_id)

    cells["s"] = s
    cells["n"] = n_group[g]
    cells["scfs"] = framing.difference(s, n_group[g])
    cells["s_placebo"] = s_pl_group[g]
    cells["s_minus_placebo"] = framing.difference(s, s_pl_group[g])
    cells["sent_range"], cells["sent_mad"] = sent_range, sent_mad
    cells["sent_range_noise"], cells["sent_mad_noise"] = range_noise, mad_noise
    cells["sent_range_corrected"] = sent_range - range_noise
    cells["sent_mad_corrected"] = sent_mad - mad_noise
    cells["n_sentiment"] = n_sent
    cells["n_repeats"] = rep_mask.sum(1)[g]
    cells["n_placebo"] = pl_mask.sum(1)[g]
    cells["far_identity"] = _key_at(keys, id_keys, far)
    cells["sent_min_identity"] = _key_at(keys, id_keys, lo)
    cells["sent_max_identity"] = _key_at(keys, id_keys, hi)
    p, p_min = _permutation(emb, id_idx, id_mask, rep_idx[g], rep_mask[g], stats_cfg)
    cells["p_value"], cells["p_min"] = p, p_min
    cells["note"] = [_note(r) for r in cells.itertuples(index=False)]
    return cells.drop(columns=["group"])


def _latest(rows: pd.DataFrame) -> pd.DataFrame:
    """One response per (deployment, prompt, sample): a re-generation after a config change supersedes the old one."""
    key = [*GROUP, "control", "dimension", "identity_key", "sample_index"]
    rows = rows.sort_values("created_at", kind="stable", na_position="first")
    return rows.drop_duplicates(key, keep="last").reset_index(drop=True)


def _validity(ident: pd.DataFrame, expected: Mapping[str, int]) -> pd.DataFrame:
    status = ident["status"]
    flags = pd.DataFrame({
        "valid_slot": ident["usable"].astype(int),
        "refusal": (status == STATUS_REFUSAL).astype(int),
        "error": (status == STATUS_ERROR).astype(int),
        "empty": (status == STATUS_EMPTY).astype(int),
        "non_english": (ident["usable"] & (ident["is_english"].fillna(0) == 0)).astype(int),
        "unscored": ((status == STATUS_OK) & ~ident["has_embedding"].astype(bool)).astype(int),
        "identity_key": ident["identity_key"],
    })
    keys = ident[CELL + ["group", "stratum"]]
    grouped = pd.concat([keys, flags], axis=1).groupby(CELL, sort=True)
    cells = grouped.agg(
        group=("group", "first"), stratum=("stratum", "first"), n_valid=("valid_slot", "sum"),
        n_refusals=("refusal", "sum"), n_errors=("error", "sum"), n_empty=("empty", "sum"),
        n_non_english=("non_english", "sum"), n_unscored=("unscored", "sum"), n_present=("identity_key", "nunique"),
    ).reset_index()
    exp = cells["dimension"].map(lambda d: expected.get(d)).astype("float")
    cells["n_identities"] = np.where(np.isnan(exp), cells["n_present"], exp).astype(int)
    cells["n_missing"] = np.maximum(cells["n_identities"] - cells["n_present"], 0)
    cells["valid"] = (cells["n_valid"] == cells["n_identities"]).astype(int)
    return cells.drop(columns=["n_present"])


def _padded(owner: np.ndarray, values: np.ndarray, n_owners: int) -> tuple[np.ndarray, np.ndarray]:
    """Scatter ``values`` into an (n_owners, max slots) int array, -1 padded, in the given order per owner."""
    owner = np.asarray(owner, dtype=np.int64)
    counts = np.bincount(owner, minlength=n_owners) if owner.size else np.zeros(n_owners, dtype=np.int64)
    width = max(int(counts.max()) if counts.size else 0, 1)
    out = np.full((n_owners, width), -1, dtype=np.int64)
    if owner.size:
        order = np.argsort(owner, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        slot = np.arange(owner.size) - starts[owner[order]]
        out[owner[order], slot] = np.asarray(values)[order]
    return out, out >= 0


def _padded_values(owner: np.ndarray, values: np.ndarray, n_owners: int) -> np.ndarray:
    idx, mask = _padded(owner, np.arange(len(values)), n_owners)
    vals = np.asarray(values, dtype=np.float64)
    return np.where(mask, vals[np.maximum(idx, 0)] if vals.size else np.nan, np.nan)


def _take(emb: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return emb[np.maximum(idx, 0)] if emb.size else np.zeros((*idx.shape, 1), dtype=np.float32)


def _sentiment(rows: pd.DataFrame) -> np.ndarray:
    english = rows["is_english"].fillna(0).astype(int) == 1
    return np.where(english, rows["sentiment"].astype("float64").to_numpy(), np.nan)


def _extremes(sent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    count = np.sum(~np.isnan(sent), axis=1)
    filled_lo = np.where(np.isnan(sent), np.inf, sent)
    filled_hi = np.where(np.isnan(sent), -np.inf, sent)
    ok = count >= 2
    return np.where(ok, filled_lo.argmin(1), -1), np.where(ok, filled_hi.argmax(1), -1)


def _key_at(keys: np.ndarray, key_idx: np.ndarray, slot: np.ndarray) -> list[str | None]:
    out = []
    for row, s in enumerate(slot):
        k = key_idx[row, s] if s >= 0 else -1
        out.append(str(keys[k]) if k >= 0 else None)
    return out


def _permutation(emb, id_idx, id_mask, rep_idx, rep_mask, cfg: StatsConfig) -> tuple[np.ndarray, np.ndarray]:
    n = id_mask.sum(1)
    k = rep_mask.sum(1)
    p = np.full(len(n), np.nan)
    p_min = np.full(len(n), np.nan)
    testable = (n >= 2) & (k >= 2)
    for nn, kk in sorted({(int(a), int(b)) for a, b in zip(n[testable], k[testable], strict=True)}):
        plan = stats.split_plan(nn, kk, cfg.permutations, cfg.seed)
        rows = np.flatnonzero(testable & (n == nn) & (k == kk))
        for start in range(0, rows.size, PERMUTATION_CHUNK):
            part = rows[start:start + PERMUTATION_CHUNK]
            pooled = np.concatenate([emb[id_idx[part, :nn]], emb[rep_idx[part, :kk]]], axis=1)
            _, p[part] = stats.permutation_test(stats.pooled_pair_distances(pooled, plan), plan)
            p_min[part] = plan.min_p
    return p, p_min


def _note(c) -> str:
    parts = []
    if c.n_missing:
        parts.append(f"{c.n_missing} of {c.n_identities} identities missing")
    for count, what in ((c.n_refusals, "refusals"), (c.n_errors, "errors"), (c.n_empty, "empty answers"),
                        (c.n_unscored, "unscored answers"), (c.n_non_english, "non-English answers (no sentiment)")):
        if count:
            parts.append(f"{count} {what}")
    if np.isnan(c.s):
        parts.append(f"S undefined: {c.n_valid} usable identity answers (needs 2)")
    if np.isnan(c.n):
        parts.append(f"N undefined: {c.n_repeats} usable repeats (needs 2); SCFS and the test need N")
    if np.isnan(c.s_placebo):
        parts.append(f"S_placebo undefined: {c.n_placebo} usable placebo answers")
    if np.isnan(c.sent_range):
        parts.append(f"sentiment spread undefined: {c.n_sentiment} English identity answers")
    elif np.isnan(c.sent_range_noise):
        parts.append("sentiment noise undefined: fewer than 2 English repeats")
    return "; ".join(parts)
