"""Alert rules as pure functions: stored facts in, findings (conditions that hold now) out.

A finding's ``condition_key`` names the condition, not the moment: the same hotspot seen in
the next batch has the same key, which is what lets monitor.alerts notify it once. Every
finding carries the numbers that made it true (``data``) and the dashboard view to open.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlencode

import pandas as pd

from monitor.alerts_config import Rule
from monitor.ids import parse_iso


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    kind: str
    condition_key: str
    """Stable name of the condition (rule + subject), the unit of de-duplication."""
    title: str
    message: str
    data: dict
    """The values that triggered it, stored with the alert."""
    page: str
    """Dashboard url_path of the view to open."""
    params: dict = field(default_factory=dict)
    """Query parameters for that view (the dashboard's filter keys: batch, dep, dim, fam)."""
    batch_id: str | None = None
    deployment: str | None = None
    dimension: str | None = None
    family: str | None = None
    feed: str | None = None
    run_id: str | None = None


def view_link(base_url: str, page: str, params: dict) -> str:
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")}, doseq=True)
    return f"{base_url.rstrip('/')}/{page}{'?' + query if query else ''}"


def _fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4f}"


def _selected(rule: Rule, deployment: str, dimension: str | None = None, family: str | None = None) -> bool:
    return ((not rule.deployments or deployment in rule.deployments)
            and (dimension is None or not rule.dimensions or dimension in rule.dimensions)
            and (family is None or not rule.families or family in rule.families))


def threshold(rule: Rule, groups: pd.DataFrame, batch: dict) -> list[Finding]:
    """Groups (deployment x dimension x family) of the latest batch whose metric is above ``rule.above``.

    ``groups``: one row per group with columns deployment, dimension, family, value, n, hotspot.
    """
    out = []
    for g in groups.itertuples(index=False):
        if not _selected(rule, g.deployment, g.dimension, g.family) or pd.isna(g.value) or g.value <= rule.above:
            continue
        if rule.hotspots_only and not bool(g.hotspot):
            continue
        data = {"metric": rule.metric, "value": float(g.value), "ci_low": _num(g.ci_low), "ci_high": _num(g.ci_high),
                "above": rule.above, "cells": int(g.n), "invalid_cells": int(g.n_invalid),
                "batch_id": batch["id"], "batch_label": batch["label"]}
        if rule.hotspots_only:
            data["hotspot"] = True
        out.append(Finding(
            rule.name, rule.kind, f"{rule.name}|{g.deployment}|{g.dimension}|{g.family}",
            f"{rule.metric} {_fmt(g.value)} > {rule.above:g}: {g.deployment} / {g.dimension} / {g.family}",
            f"In batch {batch['label']}, mean {rule.metric} over {int(g.n)} cells of deployment {g.deployment}, "
            f"dimension {g.dimension}, family {g.family} is {_fmt(g.value)} (95% CI {_fmt(g.ci_low)} to "
            f"{_fmt(g.ci_high)}), above the threshold {rule.above:g}.",
            data, "hotspots", {"batch": batch["id"], "dep": g.deployment, "dim": g.dimension, "fam": g.family},
            batch_id=batch["id"], deployment=g.deployment, dimension=g.dimension, family=g.family,
        ))
    return out


def change(rule: Rule, current: pd.DataFrame, previous: pd.DataFrame, batch: dict, prev_batch: dict) -> list[Finding]:
    """Groups whose metric moved by more than ``rule.delta`` since the previous scored batch (in ``rule.direction``)."""
    if previous.empty:
        return []
    merged = current.merge(previous, on=["deployment", "dimension", "family"], suffixes=("", "_prev"))
    out = []
    for g in merged.itertuples(index=False):
        if not _selected(rule, g.deployment, g.dimension, g.family) or pd.isna(g.value) or pd.isna(g.value_prev):
            continue
        moved = float(g.value) - float(g.value_prev)
        hit = {"up": moved > rule.delta, "down": -moved > rule.delta, "any": abs(moved) > rule.delta}[rule.direction]
        if not hit:
            continue
        data = {"metric": rule.metric, "value": float(g.value), "previous": float(g.value_prev), "change": moved,
                "delta": rule.delta, "direction": rule.direction, "batch_id": batch["id"], "batch_label": batch["label"],
                "previous_batch_id": prev_batch["id"], "previous_batch_label": prev_batch["label"]}
        out.append(Finding(
            rule.name, rule.kind, f"{rule.name}|{g.deployment}|{g.dimension}|{g.family}",
            f"{rule.metric} changed {moved:+.4f}: {g.deployment} / {g.dimension} / {g.family}",
            f"Mean {rule.metric} of deployment {g.deployment}, dimension {g.dimension}, family {g.family} went from "
            f"{_fmt(g.value_prev)} (batch {prev_batch['label']}) to {_fmt(g.value)} (batch {batch['label']}): "
            f"a change of {moved:+.4f}, beyond the allowed {rule.delta:g}.",
            data, "hotspots", {"batch": batch["id"], "dep": g.deployment, "dim": g.dimension, "fam": g.family},
            batch_id=batch["id"], deployment=g.deployment, dimension=g.dimension, family=g.family,
        ))
    return out


def stability(rule: Rule, per_deployment: pd.DataFrame, tau: float | None, batch: dict, prev_batch: dict | None) -> list[Finding]:
    """A stability drop: a deployment's CV across batches above ``max_cv``, or the rank agreement below ``min_tau``.

    ``per_deployment``: deployment, n_batches, mean_of_batch_means, sd, cv (monitor.scoring.aggregate.stability).
    ``tau``: Kendall tau between the last two batches.
    """
    out = []
    if rule.max_cv is not None:
        for d in per_deployment.itertuples(index=False):
            if not _selected(rule, d.deployment) or pd.isna(d.cv) or d.cv <= rule.max_cv:
                continue
            data = {"metric": rule.metric, "cv": float(d.cv), "sd": float(d.sd), "mean": float(d.mean_of_batch_means),
                    "batches": int(d.n_batches), "max_cv": rule.max_cv}
            out.append(Finding(
                rule.name, rule.kind, f"{rule.name}|cv|{d.deployment}",
                f"{d.deployment}: {rule.metric} unstable across batches (CV {_fmt(d.cv)} > {rule.max_cv:g})",
                f"Across {int(d.n_batches)} batches the batch means of {rule.metric} for deployment {d.deployment} have "
                f"SD {_fmt(d.sd)} around {_fmt(d.mean_of_batch_means)}: a coefficient of variation of {_fmt(d.cv)}, "
                f"above {rule.max_cv:g}.",
                data, "stability", {"dep": d.deployment}, batch_id=batch["id"], deployment=d.deployment,
            ))
    if rule.min_tau is not None and tau is not None and not math.isnan(tau) and tau < rule.min_tau and prev_batch:
        data = {"metric": rule.metric, "tau": float(tau), "min_tau": rule.min_tau, "batch_id": batch["id"],
                "previous_batch_id": prev_batch["id"]}
        out.append(Finding(
            rule.name, rule.kind, f"{rule.name}|tau",
            f"Deployment ranking changed: Kendall tau {tau:.3f} < {rule.min_tau:g}",
            f"Ranking the deployments by mean {rule.metric}, batches {prev_batch['label']} and {batch['label']} agree "
            f"with Kendall tau {tau:.3f}, below {rule.min_tau:g}.",
            data, "stability", {}, batch_id=batch["id"],
        ))
    return out


def feed_failing(rule: Rule, feeds: list[dict], now: datetime) -> list[Finding]:
    """Feeds whose every poll has failed for longer than ``rule.minutes``."""
    out = []
    for f in feeds:
        if rule.feeds and f["name"] not in rule.feeds:
            continue
        since = parse_iso(f.get("failing_since"))
        if f.get("last_poll_status") != "failed" or since is None:
            continue
        minutes = (now - since).total_seconds() / 60
        if minutes <= rule.minutes:
            continue
        data = {"feed": f["name"], "failing_since": f["failing_since"], "failed_polls": int(f.get("failed_polls") or 0),
                "minutes": round(minutes, 1), "limit_minutes": rule.minutes, "last_error": f.get("last_poll_error"),
                "last_success_at": f.get("last_success_at")}
        out.append(Finding(
            rule.name, rule.kind, f"{rule.name}|{f['name']}",
            f"Feed {f['name']} failing for {minutes / 60:.1f} h",
            f"Every poll of feed {f['name']} since {f['failing_since']} failed ({data['failed_polls']} polls, "
            f"{minutes:.0f} minutes, limit {rule.minutes:g}). Last error: {f.get('last_poll_error') or 'none recorded'}. "
            f"Last success: {f.get('last_success_at') or 'never'}.",
            data, "runs", {}, feed=f["name"],
        ))
    return out


def failed_cycle(rule: Rule, run: dict | None) -> list[Finding]:
    """The latest finished cycle failed. One condition for the whole streak of failures, not one per cycle."""
    if not run or run["status"] != "failed":
        return []
    data = {"run_id": run["id"], "status": run["status"], "stage": run.get("stage"), "error": run.get("error"),
            "started_at": run.get("started_at"), "finished_at": run.get("finished_at"), "batch_id": run.get("batch_id")}
    return [Finding(
        rule.name, rule.kind, f"{rule.name}|cycle",
        "Monitoring cycle failed",
        f"The cycle started {run.get('started_at')} failed: {run.get('error') or 'no error recorded'}.",
        data, "runs", {}, batch_id=run.get("batch_id"), run_id=run["id"],
    )]


def budget(rule: Rule, run: dict | None, spent: float, max_cost: float | None) -> list[Finding]:
    """The latest cycle spent ``fraction`` of its cost budget, or generation stopped on a budget limit."""
    if not run:
        return []
    skipped = _json(run.get("skipped_json"))
    reasons = sorted({str(v.get("reason")) for v in skipped.values()
                      if isinstance(v, dict) and str(v.get("reason", "")).startswith("budget")})
    by_cost = max_cost is not None and max_cost > 0 and spent >= rule.fraction * max_cost
    if not reasons and not by_cost:
        return []
    data = {"run_id": run["id"], "spent": spent, "max_cost_per_cycle": max_cost, "fraction": rule.fraction,
            "budget_stops": reasons, "pending": {k: v.get("pending") for k, v in skipped.items() if isinstance(v, dict)},
            "batch_id": run.get("batch_id")}
    what = "; ".join(reasons) if reasons else f"spent {spent:.4f} of {max_cost:g} ({spent / max_cost:.0%})"
    return [Finding(
        rule.name, rule.kind, f"{rule.name}|budget",
        "Cycle budget reached",
        f"The cycle started {run.get('started_at')} reached its budget: {what}.",
        data, "runs", {}, batch_id=run.get("batch_id"), run_id=run["id"],
    )]


def _num(x) -> float | None:
    return None if x is None or pd.isna(x) else float(x)


def _json(text: object) -> dict:
    try:
        value = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
