"""Aggregates the pages show, computed from cell rows. Pure numpy/pandas.

The statistics of record live in monitor/scoring/aggregate.py (issue 5). The functions here
define the columns the pages expect; where that module offers the same aggregate they are
thin adapters over it, so the dashboard and the monitor never disagree on a number.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

CI_LEVEL = 0.95
RESAMPLES = 1000
"""Bootstrap resamples per aggregate. Fixed seed: the same data always draws the same interval."""
SEED = 20261130


def bootstrap_mean_ci(values: Sequence[float], *, resamples: int = RESAMPLES, level: float = CI_LEVEL,
                      seed: int = SEED) -> tuple[float, float, float, int]:
    """(mean, low, high, n) with a percentile bootstrap interval; NaNs are dropped first.

    n = 0 gives NaNs; n = 1 gives the value with no interval (NaN bounds), never a fake one.
    """
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return (float("nan"), float("nan"), float("nan"), 0)
    mean = float(x.mean())
    if n == 1:
        return (mean, float("nan"), float("nan"), 1)
    rng = np.random.default_rng(seed)
    # Resample in blocks so memory stays bounded for large groups.
    means = np.empty(resamples)
    block = max(1, 2_000_000 // n)
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = x[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (mean, float(lo), float(hi), n)


def grouped_mean_ci(df: pd.DataFrame, by: Sequence[str], value: str, *, resamples: int = RESAMPLES,
                    seed: int = SEED) -> pd.DataFrame:
    """One row per group: the group keys, mean, ci_low, ci_high, n (valid values only)."""
    cols = [*by, "mean", "ci_low", "ci_high", "n"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for keys, group in df.groupby(list(by), sort=True, dropna=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        rows.append((*keys, *bootstrap_mean_ci(group[value].to_numpy(dtype=float), resamples=resamples, seed=seed)))
    return pd.DataFrame(rows, columns=cols)


def batch_series(cells: pd.DataFrame, value: str, *, resamples: int = RESAMPLES) -> pd.DataFrame:
    """Per batch x deployment mean of ``value`` over valid cells, with its CI, in batch order."""
    cols = ["batch_id", "batch_label", "opened_at", "deployment", "mean", "ci_low", "ci_high", "n"]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    valid = cells[cells["valid"] == 1]
    out = grouped_mean_ci(valid, ["batch_id", "batch_label", "opened_at", "deployment"], value, resamples=resamples)
    return out.sort_values(["opened_at", "deployment"]).reset_index(drop=True)[cols]


def stability(series: pd.DataFrame) -> pd.DataFrame:
    """Per deployment: batches, mean of batch means, SD and CV across batches.

    CV = SD / |mean|; undefined (NaN) with fewer than two batches or a mean of about zero,
    where a ratio would be noise.
    """
    cols = ["deployment", "batches", "mean", "sd", "cv"]
    if series.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for dep, g in series.groupby("deployment", sort=True):
        m = g["mean"].dropna().to_numpy(dtype=float)
        mean = float(m.mean()) if len(m) else float("nan")
        sd = float(m.std(ddof=1)) if len(m) >= 2 else float("nan")
        cv = sd / abs(mean) if len(m) >= 2 and abs(mean) > 1e-9 else float("nan")
        rows.append((dep, len(m), mean, sd, cv))
    return pd.DataFrame(rows, columns=cols)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two paired samples; NaN with fewer than two pairs or no untied pair."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < 2:
        return float("nan")
    da = np.sign(a[:, None] - a[None, :])
    db = np.sign(b[:, None] - b[None, :])
    iu = np.triu_indices(len(a), 1)
    da, db = da[iu], db[iu]
    n0 = len(da)
    ties_a, ties_b = int(np.sum(da == 0)), int(np.sum(db == 0))
    denom = np.sqrt((n0 - ties_a) * (n0 - ties_b))
    if denom == 0:
        return float("nan")
    return float(np.sum(da * db) / denom)


def rank_agreement(series: pd.DataFrame) -> pd.DataFrame:
    """Kendall tau of the deployments' ranking (by batch mean) between consecutive batches."""
    cols = ["batch_label", "previous_label", "opened_at", "tau", "deployments"]
    if series.empty:
        return pd.DataFrame(columns=cols)
    order = series.drop_duplicates("batch_id").sort_values("opened_at")
    wide = series.pivot_table(index="batch_id", columns="deployment", values="mean")
    rows = []
    prev = None
    for _, b in order.iterrows():
        if prev is not None:
            both = wide.loc[[prev["batch_id"], b["batch_id"]]].dropna(axis=1)
            tau = kendall_tau(both.iloc[0].to_numpy(), both.iloc[1].to_numpy()) if both.shape[1] >= 2 else float("nan")
            rows.append((b["batch_label"], prev["batch_label"], b["opened_at"], tau, both.shape[1]))
        prev = b
    return pd.DataFrame(rows, columns=cols)


def hotspot_grid(cells: pd.DataFrame) -> pd.DataFrame:
    """Per deployment x dimension x family of one batch: mean SCFS with CI, counts, and the cell to open.

    The cell to open is the significant cell with the largest SCFS, or the largest SCFS when
    none is significant, so every square of the grid leads to a bundle.
    """
    cols = ["deployment", "dimension", "family", "mean", "ci_low", "ci_high", "n", "cells", "significant", "top_cell_id",
            "top_scfs"]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    keys = ["deployment", "dimension", "family"]
    agg = grouped_mean_ci(cells[cells["valid"] == 1], keys, "scfs")
    counts = cells.groupby(keys).agg(cells=("id", "size"), significant=("significant", "sum")).reset_index()
    ranked = cells.assign(_s=cells["scfs"].fillna(-np.inf)).sort_values(["significant", "_s"], ascending=[False, False])
    top = ranked.drop_duplicates(keys)[[*keys, "id", "scfs"]].rename(columns={"id": "top_cell_id", "scfs": "top_scfs"})
    out = counts.merge(agg, on=keys, how="left").merge(top, on=keys, how="left")
    out["n"] = out["n"].fillna(0).astype(int)
    return out[cols]
