"""Aggregates the pages show, computed from cell rows or per-article sums. Pure numpy/pandas.

The statistics of record are monitor.scoring.aggregate (summarize, stability) on top of
monitor.scoring.stats. Those take every cell as a DataFrame, which at a million responses
costs seconds per page; the dashboard instead sums per article in SQL and bootstraps over
those sums (same draws, same numbers: tests/test_dashboard.py checks means, intervals,
SD/CV and Kendall tau against aggregate.summarize and aggregate.stability). Primitives
(bootstrap over clusters, SD/CV, Kendall tau) delegate to monitor.scoring.stats; the local
fallbacks implement the same definitions for an install without it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

try:  # the statistics of record (issue 5); numpy only, safe for the dashboard
    from monitor.scoring import stats as _engine
except ImportError:  # pragma: no cover - only while that module is not installed
    _engine = None

CI_LEVEL = 0.95
RESAMPLES = 1000
"""Bootstrap resamples per aggregate. Fixed seed: the same data always draws the same interval."""
SEED = 7


def bootstrap_mean_ci(values: Sequence[float], clusters: Sequence[object] | None = None, *,
                      resamples: int = RESAMPLES, level: float = CI_LEVEL, seed: int = SEED) -> tuple[float, float, float, int]:
    """(mean, low, high, n): percentile bootstrap that resamples whole clusters (articles) when given.

    Cells of one article share that article, so they are resampled together. n = 0 gives
    NaNs; with a single value or cluster there is no interval (NaN bounds), never a fake one.
    """
    x = np.asarray(values, dtype=float)
    cl = None if clusters is None else np.asarray(clusters, dtype=object)
    if _engine is not None:
        iv = _engine.bootstrap_mean(x, None if cl is None else _codes(cl), n_boot=resamples, seed=seed, level=level)
        return (float(iv.mean), float(iv.low), float(iv.high), int(iv.n))
    return _bootstrap_local(x, cl, resamples, level, seed)


def _codes(clusters: np.ndarray) -> np.ndarray:
    return pd.factorize(pd.Series(clusters, dtype=object))[0]


def _bootstrap_local(x: np.ndarray, clusters: np.ndarray | None, resamples: int, level: float,
                     seed: int) -> tuple[float, float, float, int]:
    keep = np.isfinite(x)
    x = x[keep]
    if x.size == 0:
        return (float("nan"), float("nan"), float("nan"), 0)
    labels = _codes(clusters[keep]) if clusters is not None else np.arange(x.size)
    g = int(labels.max()) + 1
    if g < 2:
        labels, g = np.arange(x.size), x.size
    if g < 2:
        return (float(x.mean()), float("nan"), float("nan"), int(x.size))
    sums = np.bincount(labels, weights=x, minlength=g)
    counts = np.bincount(labels, minlength=g).astype(float)
    weights = np.random.default_rng(seed).multinomial(g, np.full(g, 1.0 / g), size=resamples).astype(float)
    boot = (weights @ sums) / np.maximum(weights @ counts, 1.0)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return (float(x.mean()), float(lo), float(hi), int(x.size))


def grouped_mean_ci(df: pd.DataFrame, by: Sequence[str], value: str, *, cluster: str | None = "article_id",
                    resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """One row per group: the group keys, mean, ci_low, ci_high, n (valid values only)."""
    cols = [*by, "mean", "ci_low", "ci_high", "n"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    use_cluster = cluster if cluster and cluster in df.columns else None
    for keys, group in df.groupby(list(by), sort=True, dropna=False):
        keys = keys if isinstance(keys, tuple) else (keys,)
        clusters = group[use_cluster].to_numpy() if use_cluster else None
        rows.append((*keys, *bootstrap_mean_ci(group[value].to_numpy(dtype=float), clusters, resamples=resamples,
                                               seed=seed)))
    return pd.DataFrame(rows, columns=cols)


def batch_series(cells: pd.DataFrame, value: str, *, resamples: int = RESAMPLES) -> pd.DataFrame:
    """Per batch x deployment mean of ``value`` over the cells where it is defined, with its CI, in batch order."""
    cols = ["batch_id", "batch_label", "opened_at", "deployment", "mean", "ci_low", "ci_high", "n"]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    out = grouped_mean_ci(cells, ["batch_id", "batch_label", "opened_at", "deployment"], value, resamples=resamples)
    return out.sort_values(["opened_at", "deployment"]).reset_index(drop=True)[cols]


def ci_from_cluster_sums(sums: np.ndarray, counts: np.ndarray, *, resamples: int = RESAMPLES, level: float = CI_LEVEL,
                         seed: int = SEED) -> tuple[float, float, float, int]:
    """The cluster bootstrap of monitor.scoring.stats.bootstrap_mean, from per-cluster sums and counts.

    Resampling whole articles only ever needs each article's sum and count, so the mean and
    interval are the same as bootstrap_mean(values, clusters) when the clusters are given in
    sorted order of their ids (its np.unique order): same draws, same numbers.
    """
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    keep = counts > 0
    sums, counts = sums[keep], counts[keep]
    n = int(counts.sum())
    if n == 0:
        return (float("nan"), float("nan"), float("nan"), 0)
    mean = float(sums.sum() / n)
    g = len(sums)
    if g < 2:
        return (mean, float("nan"), float("nan"), n)
    weights = np.random.default_rng(seed).multinomial(g, np.full(g, 1.0 / g), size=resamples).astype(float)
    boot = (weights @ sums) / np.maximum(weights @ counts, 1.0)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return (mean, float(lo), float(hi), n)


def grouped_ci_from_sums(sums: pd.DataFrame, by: Sequence[str], metric: str, *, resamples: int = RESAMPLES,
                         level: float = CI_LEVEL, seed: int = SEED) -> pd.DataFrame:
    """Rows of store.queries.cluster_sums -> one row per group: keys, mean, ci_low, ci_high, n.

    Vectorised over groups: every group with g articles gets the same bootstrap weights
    (a fresh generator with the same seed, as ci_from_cluster_sums draws them), so one
    weight matrix per distinct g serves all those groups at once.
    """
    cols = [*by, "mean", "ci_low", "ci_high", "n"]
    n_col, s_col = f"n_{metric}", f"sum_{metric}"
    d = sums[sums[n_col] > 0].sort_values([*by, "article_id"]) if not sums.empty else sums
    if d.empty:
        return pd.DataFrame(columns=cols)
    grouped = d.groupby(list(by), sort=True, dropna=False)
    gid, pos = grouped.ngroup().to_numpy(), grouped.cumcount().to_numpy()
    keys = grouped.size().reset_index()[list(by)]
    size = np.bincount(gid)
    smat = np.zeros((len(size), size.max()))
    cmat = np.zeros_like(smat)
    smat[gid, pos] = d[s_col].fillna(0).to_numpy(dtype=float)
    cmat[gid, pos] = d[n_col].to_numpy(dtype=float)
    n = cmat.sum(axis=1)
    mean = smat.sum(axis=1) / n
    lo, hi = np.full(len(size), np.nan), np.full(len(size), np.nan)
    alpha = (1.0 - level) / 2.0
    for g in np.unique(size[size >= 2]):
        rows = size == g
        w = np.random.default_rng(seed).multinomial(g, np.full(g, 1.0 / g), size=resamples).astype(float)
        boot = (smat[rows, :g] @ w.T) / np.maximum(cmat[rows, :g] @ w.T, 1.0)
        lo[rows], hi[rows] = np.quantile(boot, [alpha, 1.0 - alpha], axis=1)
    out = keys.assign(mean=mean, ci_low=lo, ci_high=hi, n=n.astype(int))
    return out[cols]


def series_from_sums(sums: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per batch x deployment mean with CI (the columns of batch_series) from cluster sums."""
    cols = ["batch_id", "batch_label", "opened_at", "deployment", "mean", "ci_low", "ci_high", "n"]
    if sums.empty:
        return pd.DataFrame(columns=cols)
    out = grouped_ci_from_sums(sums, ["batch_id", "batch_label", "opened_at", "deployment"], metric)
    out = out[out["n"] > 0]
    return out.sort_values(["opened_at", "deployment"]).reset_index(drop=True)[cols]


def grid_from_sums(sums: pd.DataFrame, counts: pd.DataFrame) -> pd.DataFrame:
    """The hotspot grid (columns of hotspot_grid) from cluster sums and store.queries.grid_counts."""
    keys = ["deployment", "dimension", "family"]
    cols = [*keys, "mean", "ci_low", "ci_high", "n", "cells", "significant", "top_cell_id", "top_scfs"]
    if counts.empty:
        return pd.DataFrame(columns=cols)
    agg = grouped_ci_from_sums(sums, keys, "scfs") if not sums.empty else pd.DataFrame(
        columns=[*keys, "mean", "ci_low", "ci_high", "n"])
    out = counts.merge(agg, on=keys, how="left")
    out["n"] = out["n"].fillna(0).astype(int)
    return out[cols]


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
        m = g["mean"].to_numpy(dtype=float)
        m = m[np.isfinite(m)]
        sd, cv = sd_cv(m)
        rows.append((dep, len(m), float(m.mean()) if len(m) else float("nan"), sd, cv))
    return pd.DataFrame(rows, columns=cols)


def sd_cv(values: Sequence[float]) -> tuple[float, float]:
    """Sample SD and CV = SD / |mean|; NaN with fewer than two values or a mean of about zero."""
    if _engine is not None:
        return _engine.sd_cv(np.asarray(values, dtype=float))
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size < 2:
        return float("nan"), float("nan")
    sd, mean = float(np.std(v, ddof=1)), float(np.mean(v))
    return sd, (sd / abs(mean) if abs(mean) > 1e-12 else float("nan"))


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two paired samples; NaN with fewer than two pairs or a constant side."""
    if _engine is not None:
        return _engine.kendall_tau(np.asarray(x, dtype=float), np.asarray(y, dtype=float))
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(a) & np.isfinite(b)
    a, b = a[ok], b[ok]
    if len(a) < 2:
        return float("nan")
    i, j = np.triu_indices(len(a), 1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    free_a, free_b = float(np.sum(da != 0)), float(np.sum(db != 0))
    if free_a == 0 or free_b == 0:
        return float("nan")
    return float(np.sum(da * db)) / float(np.sqrt(free_a * free_b))


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
    agg = grouped_mean_ci(cells, keys, "scfs")
    counts = cells.groupby(keys).agg(cells=("id", "size"), significant=("significant", "sum")).reset_index()
    ranked = cells.assign(_s=cells["scfs"].fillna(-np.inf)).sort_values(["significant", "_s"], ascending=[False, False])
    top = ranked.drop_duplicates(keys)[[*keys, "id", "scfs"]].rename(columns={"id": "top_cell_id", "scfs": "top_scfs"})
    out = counts.merge(agg, on=keys, how="left").merge(top, on=keys, how="left")
    out["n"] = out["n"].fillna(0).astype(int)
    return out[cols]
