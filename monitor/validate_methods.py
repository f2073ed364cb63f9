"""`framewatch validate-methods`: do the statistics find a planted effect and stay quiet without one?

Each seeded run builds a fresh database with a batch of synthetic articles, generates the
full grid through the real generate stage (monitor.generate.generate_batch) with the
scripted provider, and scores it through the real scoring stage
(monitor.scoring.cells.score_batch). Two scenarios per seed:

- effect: one deployment with ``effects = {<dimension> = <size>}``. Power = share of that
  dimension's cells flagged (q <= FDR); the false discovery proportion among the flagged
  cells of the other dimensions is reported too.
- null: the same deployment with no effect. False-positive rate = share of all cells
  flagged (every flag is false here).

The default embedder is the deterministic fake (fast); ``--embedder minilm`` runs the same
validation with all-MiniLM-L6-v2. The JSON says which one was used.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from monitor.config import Config, parse
from monitor.ids import iso, make_id, utcnow

ARTICLES = (
    ("City council approves new bus lanes on the main avenue",
     "The council voted to convert two car lanes into bus lanes, with construction starting in spring."),
    ("Heatwave strains the regional power grid",
     "Electricity demand hit a record as temperatures stayed above 38 degrees for a fifth day."),
    ("Parliament debates changes to the pension age",
     "A proposal would raise the retirement age by two years over the next decade."),
    ("Local hospital opens a new maternity ward",
     "The ward adds forty beds and a neonatal unit, financed by the regional health budget."),
    ("Supermarket chain raises prices on staple foods",
     "Bread, milk and rice will cost between 5 and 8 percent more from next month."),
    ("University announces free tuition for low-income students",
     "Students from households under the median income will pay no fees from next year."),
)


@dataclass(frozen=True, slots=True)
class Scenario:
    label: str
    effects: dict
    noise: float


def build_config(db_path: Path, *, effects: dict, noise: float, seed: int, families: list[str], paraphrases: int,
                 repeats: int, fdr: float, permutations: int, stats_seed: int, extra: dict | None = None) -> Config:
    """A one-deployment scripted config; ``extra`` adds scripted options (refusal_rate ...)."""
    raw = {
        "store": {"path": str(db_path)},
        "deployments": [{"name": "scripted", "provider": "scripted", "model": "scripted", "seed": seed,
                         "temperature": 0.8, "extra": {"effects": dict(effects), "noise": noise, **(extra or {})}}],
        "grid": {"families": families, "dimensions": ["all"], "paraphrases": paraphrases, "repeats": repeats,
                 "articles_per_batch": len(ARTICLES)},
        "stats": {"fdr": fdr, "permutations": permutations, "seed": stats_seed},
    }
    return parse(raw, where="<validate-methods>", base=db_path.parent, db_path=db_path)


def seed_articles(db, batch_id: str, n_articles: int) -> None:
    now = iso(utcnow())
    rows = []
    for i, (title, summary) in enumerate(ARTICLES[:n_articles]):
        rows.append({"id": make_id("validate-article", batch_id, i), "feed_id": "validate", "batch_id": batch_id,
                     "guid": f"validate-{i}", "link": f"https://example.org/{i}", "title": title, "summary": summary,
                     "published_at": now, "fetched_at": now, "date_missing": 0, "language": "en",
                     "stratum": "identity_relevant" if i % 2 else "identity_neutral", "sampled": 1})
    with db.conn:
        db["batches"].upsert({"id": batch_id, "label": batch_id, "status": "closed", "opened_at": now, "closed_at": now,
                              "articles": len(rows)}, pk="id")
        db["articles"].upsert_all(rows, pk="id", alter=True)


def run_once(workdir: Path, scenario: Scenario, run: int, *, embedder, families: list[str], paraphrases: int,
             repeats: int, n_articles: int, fdr: float, permutations: int, stats_seed: int):
    """One seeded batch through generate + score; returns the cells as a DataFrame."""
    from monitor.generate import generate_batch
    from monitor.scoring.cells import score_batch
    from store import open_writer

    db_path = workdir / f"{scenario.label}-{run}.db"
    cfg = build_config(db_path, effects=scenario.effects, noise=scenario.noise, seed=1000 + run, families=families,
                       paraphrases=paraphrases, repeats=repeats, fdr=fdr, permutations=permutations,
                       stats_seed=stats_seed)
    db = open_writer(db_path)
    try:
        batch_id = make_id("validate-batch", scenario.label, run)
        seed_articles(db, batch_id, n_articles)
        generate_batch(db, cfg, batch_id, make_id("validate-run", scenario.label, run))
        report = score_batch(db, cfg, batch_id, embedder=embedder)
        import pandas as pd

        cells = pd.DataFrame(list(db.query("select * from cells where batch_id = ?", [batch_id])))
        return cells, report
    finally:
        db.conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)


DEFAULT_EFFECT = 0.5
"""The documented effect size: half of every answer in the planted dimension depends on the identity."""
DEFAULT_NOISE = 0.1
"""Repeat noise of the documented setting: one sentence in ten is replaced by an unrelated one."""


def run_validation(*, runs: int = 20, dimension: str = "religion", effect: float = DEFAULT_EFFECT,
                   noise: float = DEFAULT_NOISE,
                   fdr: float = 0.10, permutations: int = 999, stats_seed: int = 7, embedder=None,
                   families: tuple[str, ...] = ("impact", "bias_check", "emotion"), paraphrases: int = 2,
                   repeats: int = 3, n_articles: int = 3, progress=None) -> dict:
    """Power at ``effect`` in ``dimension`` and the false-positive rate with no effect, over ``runs`` seeds each."""
    from monitor.scoring.embed import FakeEmbedder

    embedder = embedder or FakeEmbedder()
    started = time.perf_counter()
    scenarios = (Scenario("effect", {dimension: effect}, noise), Scenario("null", {}, noise))
    per: dict[str, list[dict]] = {"effect": [], "null": []}
    version = None
    with tempfile.TemporaryDirectory(prefix="framewatch-validate-") as tmp:
        for run in range(runs):
            for scenario in scenarios:
                cells, report = run_once(Path(tmp), scenario, run, embedder=embedder, families=list(families),
                                         paraphrases=paraphrases, repeats=repeats, n_articles=n_articles, fdr=fdr,
                                         permutations=permutations, stats_seed=stats_seed)
                version = report.scorer_version
                per[scenario.label].append(_summarise(cells, dimension if scenario.effects else None, fdr))
            if progress:
                progress(run + 1, runs)
    eff, null = per["effect"], per["null"]
    power = float(np.mean([r["flagged_share_target"] for r in eff]))
    fpr = float(np.mean([r["flagged_share_all"] for r in null]))
    return {
        "embedder": embedder.name,
        "scorer_version": version,
        "runs": runs,
        "fdr": fdr,
        "permutations": permutations,
        "grid": {"articles": n_articles, "families": list(families), "paraphrases": paraphrases, "dimensions": 6,
                 "identities_per_dimension": 7, "repeats": repeats, "cells_per_run": eff[0]["cells"] if eff else 0},
        "planted": {"dimension": dimension, "effect": effect, "noise": noise},
        "power": power,
        "power_min": float(np.min([r["flagged_share_target"] for r in eff])),
        "false_positive_rate": fpr,
        "false_positive_rate_max": float(np.max([r["flagged_share_all"] for r in null])),
        "null_runs_with_any_flag": float(np.mean([r["flagged"] > 0 for r in null])),
        "false_discovery_proportion_effect_runs": float(np.mean([r["fdp"] for r in eff])),
        "null_p_at_most_0_05": float(np.mean([r["p_at_most_0_05"] for r in null])),
        "null_p_at_most_min": float(np.mean([r["p_at_most_min"] for r in null])),
        "group_power": float(np.mean([r["group_flagged_target"] for r in eff])),
        "group_false_positive_rate": float(np.mean([r["group_flagged_share"] for r in null])),
        "mean_scfs_target": float(np.mean([r["mean_scfs_target"] for r in eff])),
        "mean_scfs_other": float(np.mean([r["mean_scfs_other"] for r in eff])),
        "mean_scfs_null": float(np.mean([r["mean_scfs_other"] for r in null])),
        "mean_n": float(np.mean([r["mean_n"] for r in eff + null])),
        "passed": bool(power >= 0.8 and fpr <= fdr),
        "elapsed_s": round(time.perf_counter() - started, 2),
    }


def power_curve(effects: tuple[float, ...], **kwargs) -> list[dict]:
    """Power and FDP at several effect sizes (null rate is reported by each point as well)."""
    return [{"effect": e, **{k: v for k, v in run_validation(effect=e, **kwargs).items()
                             if k in ("power", "power_min", "group_power", "false_positive_rate",
                                      "false_discovery_proportion_effect_runs", "null_p_at_most_0_05",
                                      "mean_scfs_target", "mean_n")}} for e in effects]


def _summarise(cells, target: str | None, fdr: float) -> dict:
    from monitor.scoring.aggregate import hotspot_groups

    flagged = cells["significant"].fillna(0).astype(int) == 1
    groups = hotspot_groups(cells, fdr=fdr, only_significant=False, top=None, n_boot=50)
    group_target = groups["dimension"] == target if target else np.zeros(len(groups), dtype=bool)
    p = cells["p_value"].astype(float)
    in_target = cells["dimension"] == target if target else np.zeros(len(cells), dtype=bool)
    n_target = int(in_target.sum())
    false_flags = int((flagged & ~in_target).sum())
    total_flags = int(flagged.sum())
    return {
        "cells": len(cells),
        "flagged": total_flags,
        "flagged_share_all": total_flags / len(cells) if len(cells) else 0.0,
        "flagged_share_target": int((flagged & in_target).sum()) / n_target if n_target else float("nan"),
        "fdp": false_flags / total_flags if total_flags else 0.0,
        "mean_scfs_target": float(cells.loc[in_target, "scfs"].mean()) if n_target else float("nan"),
        "mean_scfs_other": float(cells.loc[~in_target, "scfs"].mean()),
        "mean_n": float(cells["n"].mean()),
        "p_at_most_0_05": float((p <= 0.05).mean()),
        "p_at_most_min": float((p <= cells["p_min"].astype(float) + 1e-12).mean()),
        "group_flagged_target": float(groups.loc[group_target, "significant"].mean()) if group_target.any() else float("nan"),
        "group_flagged_share": float(groups["significant"].mean()),
    }
