"""The numbers alert rules compare with their thresholds, computed from cell rows. Pure pandas.

A group's value is the mean of the metric over the group's valid cells (invalid cells are
counted elsewhere and never averaged in), the same definition the dashboard shows. Stability
uses the statistics of record in monitor.scoring.stats (SD/CV of batch means, Kendall tau).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from monitor.config import Config
from monitor.scoring import stats

GROUP = ["deployment", "dimension", "family"]
COLUMNS = [*GROUP, "value", "n", "hotspot"]


def _metric(valid: pd.DataFrame, metric: str) -> pd.Series:
    if metric == "significant_share":
        return pd.to_numeric(valid["significant"], errors="coerce").fillna(0).astype(float)
    return pd.to_numeric(valid[metric], errors="coerce").astype(float)


def groups(cells: pd.DataFrame, batch_id: str, metric: str, cfg: Config, *, hotspots: bool = False) -> pd.DataFrame:
    """One row per (deployment, dimension, family) of the batch: mean metric over valid cells, n, and (when
    ``hotspots``) whether monitor.scoring.aggregate flags the group as a hotspot (else None)."""
    if cells.empty:
        return pd.DataFrame(columns=COLUMNS)
    batch = cells[(cells["batch_id"] == batch_id) & (cells["valid"] == 1)].copy()
    if batch.empty:
        return pd.DataFrame(columns=COLUMNS)
    batch["_value"] = _metric(batch, metric)
    out = batch.groupby(GROUP, sort=True).agg(value=("_value", "mean"), n=("_value", "size")).reset_index()
    flagged = hotspot_groups(batch, cfg) if hotspots else None
    out["hotspot"] = [None if flagged is None else tuple(k) in flagged for k in out[GROUP].itertuples(index=False)]
    return out[COLUMNS]


def hotspot_groups(batch_cells: pd.DataFrame, cfg: Config) -> set[tuple[str, str, str]]:
    """Groups of one batch that monitor.scoring.aggregate flags as hotspots (significant and large)."""
    from monitor.scoring import aggregate

    table = aggregate.hotspots(batch_cells, cfg)
    flagged = table[table["hotspot"].astype(bool)] if len(table) else table
    return {tuple(k) for k in flagged[GROUP].itertuples(index=False)}


def batch_means(cells: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per batch x deployment: mean metric over valid cells, batches in order."""
    valid = cells[cells["valid"] == 1].copy()
    if valid.empty:
        return pd.DataFrame(columns=["batch_id", "opened_at", "deployment", "mean"])
    valid["_value"] = _metric(valid, metric)
    keys = ["batch_id", "opened_at", "batch_order", "deployment"] if "batch_order" in valid else ["batch_id", "opened_at", "deployment"]
    out = valid.groupby(keys, sort=False)["_value"].mean().reset_index(name="mean")
    return out.sort_values([k for k in keys if k != "batch_id"]).reset_index(drop=True)


def stability(cells: pd.DataFrame, metric: str, cfg: Config) -> tuple[pd.DataFrame, float]:
    """Per deployment SD and CV of its batch means, and Kendall tau of deployment ranks between the last two batches."""
    means = batch_means(cells, metric)
    rows = []
    for dep, g in means.groupby("deployment", sort=True):
        values = g["mean"].to_numpy(dtype=float)
        sd, cv = stats.sd_cv(values)
        rows.append((dep, int(np.sum(~np.isnan(values))), float(np.nanmean(values)) if len(values) else np.nan, sd, cv))
    per_dep = pd.DataFrame(rows, columns=["deployment", "batches", "mean", "sd", "cv"])
    order = list(dict.fromkeys(means["batch_id"]))
    if len(order) < 2:
        return per_dep, float("nan")
    wide = means.pivot_table(index="batch_id", columns="deployment", values="mean")
    prev, last = wide.loc[order[-2]], wide.loc[order[-1]]
    return per_dep, stats.kendall_tau(prev.to_numpy(dtype=float), last.to_numpy(dtype=float))
