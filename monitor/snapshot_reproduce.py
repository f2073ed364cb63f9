"""Reproduce a snapshot: re-score its responses with the pinned scorer and compare every score table.

The snapshot's SQLite copy is copied to a scratch folder, its scores and cells are deleted,
and the scoring stage (monitor.scoring.cells.score_batch) runs again on each batch with the
embedder and statistics settings the snapshot records. The recomputed per-response scores,
embeddings, cells and derived tables are then compared with the exported ones: floats within
an absolute tolerance, everything else exactly. Timestamps of the computation are not compared.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from monitor import config as config_mod
from monitor import snapshot_tables as tables_mod
from monitor.config import Config, ConfigError, StatsConfig
from monitor.snapshot import (DEFAULT_TOLERANCE, SnapshotError, check_database, opened, read_versions,
                              verify_snapshot)
from store import open_writer
from store import snapshot as store

SKIP_COLUMNS = {"scored_at", "computed_at"}
"""When the numbers were computed is not part of what they are."""
GRID_COLUMNS = ("q_value", "significant")
"""Depend on every cell of the batch: compared only for batches exported with all their deployments."""
KEYS = {"scores": ["response_id"], "cells": ["id"]}
MAX_EXAMPLES = 5


@dataclass(frozen=True, slots=True)
class TableDiff:
    table: str
    compared_rows: int
    compared_values: int
    missing: int
    """Rows in the snapshot that the recomputation did not produce."""
    extra: int
    """Rows the recomputation produced that the snapshot does not have."""
    differences: int
    """Values that differ beyond the tolerance (floats) or at all (others)."""
    max_abs_diff: float
    examples: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.differences)


@dataclass(frozen=True, slots=True)
class ReproduceReport:
    tolerance: float
    scorer_version: str
    tables: tuple[TableDiff, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tables)

    @property
    def differences(self) -> int:
        return sum(t.differences + t.missing + t.extra for t in self.tables)

    def lines(self) -> list[str]:
        head = "reproduced: zero differences" if self.ok else f"NOT reproduced: {self.differences} difference(s)"
        out = [f"{head} (scorer {self.scorer_version}, float tolerance {self.tolerance:g} absolute; other values exact)"]
        for t in self.tables:
            out.append(f"  {t.table:<15} {t.compared_rows:>6} rows, {t.compared_values:>7} values: "
                       f"{t.differences} differ, {t.missing} missing, {t.extra} extra, max |diff| {t.max_abs_diff:.3g}")
            out.extend(f"      {e}" for e in t.examples)
        out.extend(f"  note: {n}" for n in self.notes)
        return out


def reproduce_snapshot(path: str | Path, *, embedder=None, tolerance: float | None = None) -> ReproduceReport:
    """Recompute every score table of the snapshot at ``path`` (folder or .zip) and compare. Raises SnapshotError."""
    with opened(path) as folder:
        verified = verify_snapshot(folder)
        if not verified.ok:
            raise SnapshotError("the snapshot fails verification, so reproducing it would prove nothing:\n"
                                + "\n".join(verified.lines()[1:]))
        versions = read_versions(folder)
        if not versions.get("with_text"):
            raise SnapshotError(f"{path} was exported without response text, and re-scoring needs it. Export it again "
                                "with `framewatch snapshot export --with-text ...`.")
        tolerance = versions.get("tolerance", DEFAULT_TOLERANCE) if tolerance is None else tolerance
        with tempfile.TemporaryDirectory(prefix="framewatch-reproduce-") as tmp:
            return _reproduce(folder, versions, Path(tmp), embedder, tolerance)


def _reproduce(folder: Path, versions: dict, tmp: Path, embedder, tolerance: float) -> ReproduceReport:
    from monitor.scoring.cells import score_batch, scorer_version

    work_path = tmp / "work.db"
    shutil.copyfile(check_database(folder), work_path)
    db = open_writer(work_path)
    try:
        pinned = versions.get("scorer_version")
        embedder = embedder or embedder_for(versions.get("embedder"))
        installed = scorer_version(embedder)
        notes = []
        if isinstance(pinned, list):
            notes.append(f"the snapshot mixes scorer versions {pinned}; re-scored with {installed} only")
        elif pinned and installed != pinned:
            notes.append(f"pinned scorer {pinned} but this installation scores as {installed}: differences may come "
                         "from the scorer change, not from the data")
        cfg = snapshot_config(folder, tmp)
        with db.conn:
            db.execute("delete from cells")
            db.execute("delete from scores")
        for batch_id in versions["batches"]:
            score_batch(db, _with_stats(cfg, db, batch_id), batch_id, embedder=embedder)
        diffs = _compare_all(folder, db, cfg, versions, tolerance, notes)
    finally:
        db.conn.close()
    return ReproduceReport(tolerance, installed, tuple(diffs), tuple(notes))


def embedder_for(name: str | None):
    """The embedder a snapshot was scored with, by the name stored in its scorer version."""
    from monitor.scoring.embed import MINILM_NAME, FakeEmbedder, default_embedder

    if name == MINILM_NAME:
        return default_embedder()
    match = re.fullmatch(r"fake-hash-(\d+)", name or "")
    if match:
        return FakeEmbedder(int(match.group(1)))
    raise SnapshotError(f"the snapshot was scored with embedder {name!r}, which this installation cannot load.")


def snapshot_config(folder: Path, tmp: Path) -> Config:
    """The snapshot's (scrubbed) configuration; only its statistics settings matter for scoring."""
    raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    try:
        return config_mod.parse(raw, where=str(folder / "config.json"), base=tmp, db_path=tmp / "work.db")
    except ConfigError:
        cfg = config_mod.load(None, db_path=tmp / "work.db")
        return dataclasses.replace(cfg, stats=_stats(raw.get("stats"), cfg.stats))


def _with_stats(cfg: Config, db, batch_id: str) -> Config:
    """The statistics settings of the cycle that scored the batch (a later config change must not move its numbers)."""
    row = next(db.query("select config_json from runs where batch_id = ? and config_json is not null "
                        "order by started_at desc limit 1", [batch_id]), None)
    if not row:
        return cfg
    try:
        raw = json.loads(row["config_json"])
    except ValueError:
        return cfg
    return dataclasses.replace(cfg, stats=_stats(raw.get("stats"), cfg.stats))


def _stats(raw: object, default: StatsConfig) -> StatsConfig:
    if not isinstance(raw, dict):
        return default
    known = {f.name for f in dataclasses.fields(StatsConfig)}
    values = {k: v for k, v in raw.items() if k in known}
    try:
        return dataclasses.replace(default, **values)
    except TypeError:
        return default


def _compare_all(folder: Path, db, cfg: Config, versions: dict, tol: float, notes: list[str]) -> list[TableDiff]:
    rows = {t: list(db.query(f"select * from {t}")) for t in ("scores", "cells")}
    frames = {t: tables_mod.frame(rows[t], store.column_types(db, t), t) for t in rows}
    complete = versions.get("complete_batches", {})
    partial = [b for b, full in complete.items() if not full]
    diffs = [compare("scores", _expected(folder, "scores"), frames["scores"], KEYS["scores"], tol)]
    diffs.append(_embeddings(folder, rows["scores"], tol))
    expected_cells = _expected(folder, "cells")
    skip = {}
    cells = frames["cells"]
    if partial:
        notes.append(f"q_value and significant not compared for batches {partial}: they were exported without all "
                     "their deployments, and BH adjusts across the whole grid of a batch; the aggregate tables use "
                     "the exported values for them")
        skip = {"rows": expected_cells["batch_id"].isin(partial), "columns": GRID_COLUMNS}
        cells = _keep_grid_values(cells, expected_cells, partial)
    diffs.append(compare("cells", expected_cells, frames["cells"], KEYS["cells"], tol, partial_skip=skip))
    derived = tables_mod.derived_tables(cells, cfg, list(versions["batches"]))
    for name, actual in derived.items():
        diffs.append(compare(name, _expected(folder, name), actual, tables_mod.DERIVED_KEYS[name], tol))
    return diffs


def _keep_grid_values(cells: pd.DataFrame, exported: pd.DataFrame, batches: list[str]) -> pd.DataFrame:
    """Recomputed cells with the exported q_value/significant for batches whose full grid is not in the snapshot."""
    out = cells.copy()
    known = exported.set_index("id")
    rows = out["batch_id"].isin(batches) & out["id"].isin(known.index)
    for col in GRID_COLUMNS:
        out.loc[rows, col] = known.loc[out.loc[rows, "id"], col].to_numpy()
    return out


def _expected(folder: Path, table: str) -> pd.DataFrame:
    path = folder / "tables" / f"{table}.parquet"
    if not path.is_file():
        raise SnapshotError(f"{path} is missing; the snapshot is incomplete.")
    return pd.read_parquet(path)


def _embeddings(folder: Path, recomputed: list[dict], tol: float) -> TableDiff:
    """The stored embedding vectors (snapshot.db) against the recomputed ones."""
    import sqlite3

    conn = sqlite3.connect(f"{(folder / 'snapshot.db').resolve().as_uri()}?mode=ro", uri=True)
    try:
        stored = dict(conn.execute("select response_id, embedding from scores").fetchall())
    finally:
        conn.close()
    new = {r["response_id"]: r["embedding"] for r in recomputed}
    missing = [k for k in stored if k not in new]
    extra = [k for k in new if k not in stored]
    worst, bad, examples, values = 0.0, 0, [], 0
    for key in sorted(set(stored) & set(new)):
        a, b = stored[key], new[key]
        if a is None or b is None:
            bad += (a is None) != (b is None)
            continue
        va, vb = np.frombuffer(a, dtype=np.float32), np.frombuffer(b, dtype=np.float32)
        values += len(va)
        if va.shape != vb.shape:
            bad += 1
            examples.append(f"{key}: dimension {len(va)} vs {len(vb)}")
            continue
        d = float(np.max(np.abs(va.astype(np.float64) - vb))) if len(va) else 0.0
        worst = max(worst, d)
        if d > tol:
            bad += 1
            if len(examples) < MAX_EXAMPLES:
                examples.append(f"{key}: max |diff| {d:.3g}")
    return TableDiff("embeddings", len(set(stored) & set(new)), values, len(missing), len(extra), bad, worst,
                     tuple(examples))


def compare(table: str, expected: pd.DataFrame, actual: pd.DataFrame, keys: list[str], tol: float, *,
            partial_skip: dict | None = None) -> TableDiff:
    """Row-by-row comparison on ``keys``: floats within ``tol`` (NaN equals NaN), other values exactly."""
    columns = [c for c in expected.columns if c not in SKIP_COLUMNS]
    missing_cols = [c for c in columns if c not in actual.columns]
    exp = expected.reset_index(drop=True)
    skip_rows = set(exp.index[partial_skip["rows"].to_numpy()]) if partial_skip else set()
    skip_cols = set(partial_skip["columns"]) if partial_skip else set()
    exp_index = {_key(r, keys): i for i, r in exp.iterrows()}
    act = actual.reset_index(drop=True)
    act_index = {_key(r, keys): i for i, r in act.iterrows()}
    missing = [k for k in exp_index if k not in act_index]
    extra = [k for k in act_index if k not in exp_index]
    examples = [f"column {c} missing from the recomputation" for c in missing_cols]
    examples += [f"row {k} missing from the recomputation" for k in missing[:MAX_EXAMPLES]]
    examples += [f"row {k} not in the snapshot" for k in extra[:MAX_EXAMPLES]]
    diffs = len(missing_cols)
    worst, values, rows = 0.0, 0, 0
    for key, i in exp_index.items():
        j = act_index.get(key)
        if j is None:
            continue
        rows += 1
        for col in columns:
            if col in missing_cols or col in keys or (i in skip_rows and col in skip_cols):
                continue
            values += 1
            a, b = exp.at[i, col], act.at[j, col]
            same, gap = _same(a, b, tol)
            worst = max(worst, gap)
            if not same:
                diffs += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(f"{key} {col}: snapshot {a!r}, recomputed {b!r}")
    return TableDiff(table, rows, values, len(missing), len(extra), diffs, worst, tuple(examples))


def _key(row: pd.Series, keys: list[str]) -> tuple:
    return tuple(None if _isna(row[k]) else (int(row[k]) if isinstance(row[k], (np.integer, bool)) else row[k])
                 for k in keys)


def _isna(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _same(a, b, tol: float) -> tuple[bool, float]:
    if _isna(a) or _isna(b):
        return _isna(a) and _isna(b), 0.0
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        try:
            fa, fb = float(a), float(b)
        except (TypeError, ValueError):
            return a == b, 0.0
        if math.isinf(fa) or math.isinf(fb):
            return fa == fb, 0.0
        gap = abs(fa - fb)
        return gap <= tol, gap
    if isinstance(a, (np.integer, int)) and isinstance(b, (np.integer, int)):
        return int(a) == int(b), 0.0
    return a == b, 0.0
