"""Run records: every cycle stores when it ran, what it used, what it produced and how it ended."""

from __future__ import annotations

import json

from sqlite_utils import Database

import prompts as prompt_data
from monitor.config import Config
from monitor.ids import iso, utcnow

RUNNING, OK, PARTIAL, FAILED, ABANDONED = "running", "ok", "partial", "failed", "abandoned"


def start_run(db: Database, cfg: Config, run_id: str, *, kind: str = "cycle", scorer_version: str | None = None) -> None:
    """Create the run row, or mark an existing (interrupted) one as running again: a resume keeps its id."""
    versions = prompt_data.versions()
    now = iso(utcnow())
    existing = db["runs"].count_where("id = ?", [run_id])
    row = {
        "id": run_id, "kind": kind, "status": RUNNING, "heartbeat_at": now, "finished_at": None, "error": None,
        "config_json": json.dumps(cfg.raw, sort_keys=True, default=str), "config_version": cfg.version(),
        "taxonomy_version": versions["taxonomy"], "families_version": versions["families"],
        "frames_version": versions["frames"], "scorer_version": scorer_version,
    }
    if not existing:
        row["started_at"] = now
    with db.conn:
        db["runs"].upsert(row, pk="id")


def set_stage(db: Database, run_id: str, stage: str, *, done: int = 0, total: int = 0, batch_id: str | None = None) -> None:
    row = {"id": run_id, "stage": stage, "progress_done": done, "progress_total": total, "heartbeat_at": iso(utcnow())}
    if batch_id:
        row["batch_id"] = batch_id
    with db.conn:
        db["runs"].upsert(row, pk="id")


def finish_run(db: Database, run_id: str, status: str, *, counts: dict | None = None, skipped: dict | None = None,
               error: str | None = None) -> None:
    with db.conn:
        db["runs"].upsert(
            {"id": run_id, "status": status, "finished_at": iso(utcnow()), "heartbeat_at": iso(utcnow()),
             "counts_json": json.dumps(counts or {}, sort_keys=True), "skipped_json": json.dumps(skipped or {}, sort_keys=True),
             "error": error, "stage": "done" if status in (OK, PARTIAL) else "stopped"},
            pk="id",
        )


def batch_counts(db: Database, batch_id: str) -> dict:
    """Counts recomputed from the stored rows, so a run record always matches the data."""
    row = next(db.query(
        """
        select
          (select count(*) from articles where batch_id = :b) as articles,
          (select count(*) from articles where batch_id = :b and sampled = 1) as articles_sampled,
          (select count(distinct prompt_id) from responses where batch_id = :b) as prompts,
          count(*) as responses,
          coalesce(sum(status = 'ok'), 0) as ok,
          coalesce(sum(status = 'error'), 0) as errors,
          coalesce(sum(status = 'refusal'), 0) as refusals,
          coalesce(sum(status = 'empty'), 0) as empty,
          coalesce(sum(tokens_in), 0) as tokens_in,
          coalesce(sum(tokens_out), 0) as tokens_out,
          coalesce(sum(cost), 0.0) as cost
        from responses where batch_id = :b
        """,
        {"b": batch_id},
    ))
    cells = next(db.query("select count(*) as c, coalesce(sum(significant), 0) as sig from cells where batch_id = ?", [batch_id]))
    return {**row, "cells": cells["c"], "significant_cells": cells["sig"]}
