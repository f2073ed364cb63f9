"""Aggregates the dashboard shows, each with a bootstrap CI: pure numpy/pandas over the cells table.

The dashboard imports this module, so it must never import torch, sentence_transformers or
anything that loads a model. Inputs are DataFrames with the columns of the ``cells`` table
(``store.queries`` reads them); nothing here touches the database.

Conventions (docs/METHODS.md, "Aggregates"):
- a mean is over the cells where the metric is defined (not NaN); invalid cells with a
  defined metric are included and counted in ``n_invalid``; ``valid_only=True`` drops them;
- CIs are percentile bootstraps that resample articles (cells of one article are not
  independent); with a single article they resample cells and ``ci_unit`` says 'cell';
- group significance combines the cells' permutation p-values with Fisher's method and
  applies Benjamini-Hochberg across the groups of each batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from monitor.scoring import stats

METRICS = ("scfs", "s", "n", "s_placebo", "s_minus_placebo", "sent_range", "sent_mad", "sent_range_corrected",
           "sent_mad_corrected")
GROUP_KEYS = ("batch_id", "deployment", "dimension", "family")
SUMMARY_COLUMNS = ("mean", "ci_low", "ci_high", "ci_unit", "n_cells", "n_defined", "n_invalid", "n_articles",
                   "n_significant", "share_significant")


def summarize(cells: pd.DataFrame, by: Sequence[str], metric: str = "scfs", *, n_boot: int = 1000, seed: int = 7,
              level: float = 0.95, valid_only: bool = False) -> pd.DataFrame:
    """Mean of ``metric`` per group of ``by`` with a cluster-bootstrap CI and validity/significance counts."""
    _check(cells, metric)
    by = list(by)
    if cells.empty:
        return pd.DataFrame(columns=[*by, *SUMMARY_COLUMNS])
    data = cells[cells["valid"] == 1] if valid_only else cells
    rows = []
    for key, group in (data.groupby(by, sort=True, dropna=False) if by else [((), data)]):
        key = key if isinstance(key, tuple) else (key,)
        ci = stats.bootstrap_mean(group[metric].to_numpy(dtype=float), group["article_id"].to_numpy(),
                                  n_boot=n_boot, seed=seed, level=level)
        sig = _significant(group)
        rows.append({**dict(zip(by, key, strict=True)), "mean": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
                     "ci_unit": ci.unit, "n_cells": len(group), "n_defined": ci.n,
                     "n_invalid": int((group["valid"] == 0).sum()),
                     "n_articles": int(group["article_id"].nunique()), "n_significant": int(sig.sum()),
                     "share_significant": float(sig.mean()) if len(group) else float("nan")})
    return pd.DataFrame(rows, columns=[*by, *SUMMARY_COLUMNS])


def timeseries(cells: pd.DataFrame, metric: str = "scfs", *, batch_order: Sequence[str] | None = None,
               **kwargs) -> pd.DataFrame:
    """Per (deployment, batch): mean with CI, in batch order (``batch_order`` or the order batches first appear)."""
    out = summarize(cells, ["deployment", "batch_id"], metric, **kwargs)
    order = _batch_order(cells, batch_order)
    out["batch_index"] = out["batch_id"].map({b: i for i, b in enumerate(order)})
    return out.sort_values(["deployment", "batch_index"]).reset_index(drop=True)


def compare_strata(cells: pd.DataFrame, metric: str = "scfs", by: Sequence[str] = ("deployment",), *,
                   first: str = "identity_relevant", second: str = "identity_neutral", n_boot: int = 1000,
                   seed: int = 7, level: float = 0.95) -> pd.DataFrame:
    """Identity-relevant vs identity-neutral articles: both means and their difference with a bootstrap CI."""
    _check(cells, metric)
    by = list(by)
    cols = [*by, "mean_" + first, "mean_" + second, "difference", "ci_low", "ci_high", "n_" + first, "n_" + second]
    if cells.empty or "stratum" not in cells:
        return pd.DataFrame(columns=cols)
    rows = []
    for key, group in (cells.groupby(by, sort=True, dropna=False) if by else [((), cells)]):
        key = key if isinstance(key, tuple) else (key,)
        a, b = group[group["stratum"] == first], group[group["stratum"] == second]
        ci = stats.bootstrap_difference(a[metric].to_numpy(dtype=float), a["article_id"].to_numpy(),
                                        b[metric].to_numpy(dtype=float), b["article_id"].to_numpy(),
                                        n_boot=n_boot, seed=seed, level=level)
        rows.append({**dict(zip(by, key, strict=True)), "mean_" + first: _mean(a[metric]),
                     "mean_" + second: _mean(b[metric]), "difference": ci.mean, "ci_low": ci.low, "ci_high": ci.high,
                     "n_" + first: int(a[metric].notna().sum()), "n_" + second: int(b[metric].notna().sum())})
    return pd.DataFrame(rows, columns=cols)


def hotspot_cells(cells: pd.DataFrame, *, top: int | None = 50, metric: str = "scfs") -> pd.DataFrame:
    """Cells significant after FDR, largest effect first, with the identities that drive them."""
    _check(cells, metric)
    if cells.empty:
        return cells.iloc[0:0]
    hot = cells[_significant(cells)].sort_values([metric, "q_value"], ascending=[False, True])
    return (hot.head(top) if top else hot).reset_index(drop=True)


def hotspot_groups(cells: pd.DataFrame, *, fdr: float = 0.10, top: int | None = 50, only_significant: bool = True,
                   n_boot: int = 1000, seed: int = 7, level: float = 0.95, metric: str = "scfs") -> pd.DataFrame:
    """(batch, deployment, dimension, family) groups: mean effect with CI, Fisher p over their cells, BH q per batch.

    Ranked significant first, then by mean effect. ``far_identities`` lists the identities that
    most often lie farthest from their bundle's centroid, ``low_identities``/``high_identities``
    the most frequent sentiment extremes, as "key (cells)".
    """
    _check(cells, metric)
    keys = [k for k in GROUP_KEYS if k in cells]
    cols = [*keys, "n_cells", "n_tested", "n_significant_cells", "mean", "ci_low", "ci_high", "ci_unit", "p_value",
            "q_value", "significant", "far_identities", "low_identities", "high_identities"]
    if cells.empty:
        return pd.DataFrame(columns=cols)
    p = pd.to_numeric(cells["p_value"], errors="coerce")
    work = cells.assign(_sig=_significant(cells).astype(int), _chi=-2.0 * np.log(p.clip(lower=1e-300)))
    grouped = work.groupby(keys, sort=True, dropna=False)
    summary = grouped.agg(n_cells=("id", "size"), n_tested=("p_value", "count"), mean=(metric, "mean"),
                          n_significant_cells=("_sig", "sum"), chi=("_chi", "sum")).reset_index()
    # Fisher: -2 sum ln p ~ chi-square(2k) over the k tested cells of the group.
    summary["p_value"] = [stats.chi2_sf_even(x, 2 * k) if k else np.nan
                          for x, k in zip(summary["chi"], summary["n_tested"], strict=True)]
    summary = summary.drop(columns=["chi"])
    summary["q_value"] = np.nan
    for _, idx in summary.groupby("batch_id", dropna=False).groups.items():
        summary.loc[idx, "q_value"] = stats.benjamini_hochberg(summary.loc[idx, "p_value"].to_numpy())
    summary["significant"] = (summary["q_value"] <= fdr).astype(int)
    if only_significant:
        summary = summary[summary["significant"] == 1]
    summary = summary.sort_values(["significant", "mean"], ascending=[False, False])
    if top:
        summary = summary.head(top)
    extra = []
    for row in summary.itertuples(index=False):
        group = grouped.get_group(tuple(getattr(row, k) for k in keys))
        ci = stats.bootstrap_mean(group[metric].to_numpy(dtype=float), group["article_id"].to_numpy(), n_boot=n_boot,
                                  seed=seed, level=level)
        extra.append({"ci_low": ci.low, "ci_high": ci.high, "ci_unit": ci.unit,
                      "far_identities": _top_keys(group.get("far_identity")),
                      "low_identities": _top_keys(group.get("sent_min_identity")),
                      "high_identities": _top_keys(group.get("sent_max_identity"))})
    summary = pd.concat([summary.reset_index(drop=True), pd.DataFrame(extra, index=range(len(extra)))], axis=1)
    return summary.reindex(columns=cols)


def stability(cells: pd.DataFrame, metric: str = "scfs", *, batch_order: Sequence[str] | None = None,
              valid_only: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per deployment: SD and CV of batch means, per consecutive batch pair: Kendall tau of deployment ranking)."""
    _check(cells, metric)
    per_dep_cols = ["deployment", "n_batches", "mean_of_batch_means", "sd", "cv"]
    pair_cols = ["batch_from", "batch_to", "n_deployments", "kendall_tau"]
    if cells.empty:
        return pd.DataFrame(columns=per_dep_cols), pd.DataFrame(columns=pair_cols)
    data = cells[cells["valid"] == 1] if valid_only else cells
    means = data.groupby(["deployment", "batch_id"])[metric].mean().unstack("batch_id")
    order = [b for b in _batch_order(cells, batch_order) if b in means.columns]
    means = means.reindex(columns=order)
    rows = []
    for dep, values in means.iterrows():
        sd, cv = stats.sd_cv(values.to_numpy(dtype=float))
        rows.append({"deployment": dep, "n_batches": int(values.notna().sum()),
                     "mean_of_batch_means": _mean(values), "sd": sd, "cv": cv})
    pairs = []
    for before, after in zip(order, order[1:], strict=False):
        both = means[[before, after]].dropna()
        pairs.append({"batch_from": before, "batch_to": after, "n_deployments": len(both),
                      "kendall_tau": stats.kendall_tau(both[before].to_numpy(), both[after].to_numpy())})
    return pd.DataFrame(rows, columns=per_dep_cols), pd.DataFrame(pairs, columns=pair_cols)


def identity_label(key: str | None) -> str:
    """Human label of an identity key (``religion.muslim`` -> ``Muslim``); the key itself when unknown."""
    if not key:
        return ""
    import prompts as prompt_data

    try:
        return prompt_data.load_taxonomy().identity(key).label
    except KeyError:
        return key


def _significant(cells: pd.DataFrame) -> pd.Series:
    return cells["significant"].fillna(0).astype(int) == 1


def _top_keys(values: pd.Series | None, n: int = 3) -> str:
    if values is None:
        return ""
    counts = values.dropna().value_counts()
    return ", ".join(f"{k} ({c})" for k, c in counts.head(n).items())


def _batch_order(cells: pd.DataFrame, batch_order: Sequence[str] | None) -> list[str]:
    if batch_order is not None:
        return list(batch_order)
    for column in ("batch_opened_at", "opened_at"):
        if column in cells:
            return list(cells.sort_values(column)["batch_id"].drop_duplicates())
    return list(pd.unique(cells["batch_id"]))


def _mean(values: pd.Series) -> float:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return float(v.mean()) if len(v) else float("nan")


def _check(cells: pd.DataFrame, metric: str) -> None:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {METRICS}")
    if not cells.empty and metric not in cells:
        raise ValueError(f"cells frame has no column {metric!r}; read it with the cells table's columns")
