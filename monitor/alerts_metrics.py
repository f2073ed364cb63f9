"""The numbers alert rules compare with their thresholds, from cell rows, by the statistics of record
(monitor.scoring.aggregate), so an alert quotes the same mean and interval the dashboard shows."""

from __future__ import annotations

import pandas as pd

from monitor.config import Config
from monitor.scoring import aggregate

GROUP = ["deployment", "dimension", "family"]
COLUMNS = [*GROUP, "value", "ci_low", "ci_high", "n", "n_invalid", "hotspot"]


def groups(cells: pd.DataFrame, batch_id: str, metric: str, cfg: Config, *, hotspots: bool = False) -> pd.DataFrame:
    """One row per (deployment, dimension, family) of the batch: the metric's mean with its bootstrap CI, the cells
    it is over, and (when ``hotspots``) whether the group is significant after FDR across the batch's groups."""
    batch = cells[cells["batch_id"] == batch_id] if len(cells) else cells
    if batch.empty:
        return pd.DataFrame(columns=COLUMNS)
    share = metric == "significant_share"
    s = aggregate.summarize(batch, GROUP, "scfs" if share else metric, n_boot=cfg.stats.bootstrap, seed=cfg.stats.seed)
    out = pd.DataFrame({
        **{k: s[k] for k in GROUP},
        "value": s["share_significant"] if share else s["mean"],
        "ci_low": float("nan") if share else s["ci_low"], "ci_high": float("nan") if share else s["ci_high"],
        "n": s["n_cells"] if share else s["n_defined"], "n_invalid": s["n_invalid"],
    })
    flagged = hotspot_groups(batch, cfg) if hotspots else None
    out["hotspot"] = [None if flagged is None else tuple(k) in flagged for k in out[GROUP].itertuples(index=False)]
    return out[COLUMNS]


def hotspot_groups(batch_cells: pd.DataFrame, cfg: Config) -> set[tuple[str, str, str]]:
    """Groups of one batch that are significant after FDR (Fisher over their cells, BH across the batch's groups)."""
    table = aggregate.hotspot_groups(batch_cells, fdr=cfg.stats.fdr, top=None, only_significant=True,
                                     n_boot=2, seed=cfg.stats.seed)  # the CI is not used here
    return {tuple(k) for k in table[GROUP].itertuples(index=False)}


def stability(cells: pd.DataFrame, metric: str, batch_order: list[str]) -> tuple[pd.DataFrame, float]:
    """Per deployment SD and CV of its batch means, and Kendall tau of deployment ranks between the last two batches."""
    per_dep, pairs = aggregate.stability(cells, metric, batch_order=batch_order)
    tau = float(pairs.iloc[-1]["kendall_tau"]) if len(pairs) else float("nan")
    return per_dep, tau
