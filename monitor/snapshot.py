"""Versioned snapshots: export chosen batches x deployments to a folder (and a .zip), verify it, reproduce it.

A snapshot is self-describing (README with every file and column, versions.json) and
tamper-evident (manifest.json: SHA-256 per file). Tables are written as CSV and Parquet,
plus snapshot.db, a SQLite store with the same schema holding only the exported rows, which
the dashboard opens read-only. No secret leaves: see monitor/snapshot_scrub.py; the written
folder is scanned for secret values before it is sealed, and the export fails if one is found.
Reproduction lives in monitor/snapshot_reproduce.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sqlite3
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pandas as pd
from sqlite_utils import Database

import prompts as prompt_data
from monitor import snapshot_readme as readme
from monitor import snapshot_tables as tables_mod
from monitor.config import Config
from monitor.ids import iso, utcnow
from monitor.redact import secrets_in_env
from monitor.snapshot_scrub import env_secrets, find_leaks, scrub_config
from store import open_writer
from store import snapshot as store

FORMAT = "framewatch-snapshot/1"
MANIFEST = "manifest.json"
DEFAULT_TOLERANCE = 1e-6
"""Absolute tolerance for floats in reproduce: far below any difference a reader would act on, far above
the last-bit wobble of float32 embeddings computed on another CPU."""
FILE_TABLES = ("batches", "runs", "feeds", "deployments", "articles", "templates", "frames", "identities", "prompts",
               "responses", "scores", "cells")
LIBRARIES = ("framewatch", "numpy", "pandas", "scipy", "vaderSentiment", "sentence-transformers", "torch", "langdetect",
             "pyarrow", "sqlite-utils")


class SnapshotError(RuntimeError):
    """The snapshot cannot be written or read; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class ExportResult:
    folder: Path
    zip_path: Path | None
    batches: tuple[str, ...]
    deployments: tuple[str, ...]
    rows: dict
    """Table -> rows exported."""
    files: int
    with_text: bool


@dataclass(frozen=True, slots=True)
class Problem:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    checked: int
    problems: tuple[Problem, ...]

    def lines(self) -> list[str]:
        if self.ok:
            return [f"snapshot OK: {self.checked} files match manifest.json"]
        return [f"snapshot FAILED verification ({len(self.problems)} problem(s)):",
                *(f"  {p.path}: {p.reason}" for p in self.problems)]


def export_snapshot(db: Database, cfg: Config, out: str | Path, *, batches: Sequence[str] = (),
                    deployments: Sequence[str] = (), with_text: bool = False, make_zip: bool = True,
                    overwrite: bool = False, tolerance: float = DEFAULT_TOLERANCE) -> ExportResult:
    """Write the snapshot folder ``out`` (and ``out``.zip). ``batches``: ids or labels (all when empty)."""
    folder = Path(out)
    if folder.exists() and any(folder.iterdir()) and not overwrite:
        raise SnapshotError(f"{folder} exists and is not empty; choose another --out or pass --overwrite.")
    with store.consistent_read(db):
        try:
            batch_ids = store.resolve_batches(db, batches)
            if not batch_ids:
                raise SnapshotError("the store has no batch with responses yet; run `framewatch run-once` first.")
            deps = store.resolve_deployments(db, batch_ids, deployments)
        except store.SelectionError as exc:
            raise SnapshotError(str(exc)) from exc
        raw_rows = store.select_rows(db, batch_ids, deps)
        types = {t: store.column_types(db, t) for t in raw_rows}
        complete = {b: set(store.batch_deployments(db, b)) <= set(deps) for b in batch_ids}
    secrets = sorted(set(env_secrets(cfg.raw)) | set(secrets_in_env(cfg)))
    raw_rows["deployments"] += _configured_deployments(cfg, set(deps) - {r["name"] for r in raw_rows["deployments"]})
    rows = {t: tables_mod.scrub_rows(t, r, secrets, with_text=with_text) for t, r in raw_rows.items()}
    frames = {t: tables_mod.frame(rows[t], types[t], t) for t in rows}
    frames.update(tables_mod.prompt_tables())
    derived = tables_mod.derived_tables(frames["cells"], cfg, batch_ids)
    all_tables = {**{t: frames[t] for t in FILE_TABLES}, **derived}
    versions = _versions(cfg, batch_ids, deps, rows, with_text, complete, tolerance)

    if folder.exists():
        shutil.rmtree(folder)  # only now: a failed selection above leaves the previous snapshot in place
    folder.mkdir(parents=True)
    try:
        _write_db(folder / "snapshot.db", rows)
        for name, df in all_tables.items():
            _write_table(folder / "tables", name, df)
        for name, text in tables_mod.prompt_file_texts().items():
            _write_text(folder / "prompts" / name, text)
        _write_text(folder / "config.json", json.dumps(scrub_config(cfg.raw, secrets), indent=2, sort_keys=True,
                                                       ensure_ascii=False, default=str))
        _write_text(folder / "versions.json", json.dumps(versions, indent=2, sort_keys=True))
        _write_text(folder / "README.md", readme.render({t: list(df.columns) for t, df in all_tables.items()},
                                                        versions, with_text=with_text, tolerance=tolerance))
        leaks = find_leaks(folder, secrets)
        if leaks:
            raise SnapshotError(f"a secret value was found in {', '.join(leaks)} after scrubbing; nothing was exported. "
                                "Report this as a bug, with the file name (not the file).")
        _write_manifest(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    zip_path = _zip(folder) if make_zip else None
    counts = {t: len(df) for t, df in all_tables.items()}
    return ExportResult(folder, zip_path, tuple(batch_ids), tuple(deps), counts, len(_listed(folder)), with_text)


def _configured_deployments(cfg: Config, names: set[str]) -> list[dict]:
    """Rows for deployments that answered but were never recorded in the deployments table (a store written by
    run_cycle alone): taken from the configuration, in the same shape as store.writes.record_config writes them."""
    from dataclasses import asdict

    from monitor.ids import make_id

    rows = []
    for d in cfg.deployments:
        if d.name in names:
            params = {k: v for k, v in asdict(d).items()
                      if k not in ("name", "provider", "model", "prompt_style", "system_prompt")}
            rows.append({"name": d.name, "provider": d.provider, "model": d.model, "prompt_style": d.prompt_style,
                         "system_prompt": d.system_prompt, "params_json": json.dumps(params, sort_keys=True),
                         "config_hash": make_id(asdict(d)), "updated_at": None})
    return rows


def _versions(cfg: Config, batch_ids, deps, rows, with_text, complete, tolerance) -> dict:
    scorer_versions = sorted({r["scorer_version"] for r in rows["scores"] if r.get("scorer_version")}
                             | {r["scorer_version"] for r in rows["cells"] if r.get("scorer_version")})
    return {
        "format": FORMAT, "exported_at": iso(utcnow()), "framewatch": _version("framewatch"),
        "config_version": cfg.version(), **{f"{k}_version": v for k, v in prompt_data.versions().items()},
        "scorer_version": scorer_versions[0] if len(scorer_versions) == 1 else scorer_versions,
        "embedder": scorer_versions[0].split("+")[0] if len(scorer_versions) == 1 else None,
        "stats": {"fdr": cfg.stats.fdr, "permutations": cfg.stats.permutations, "bootstrap": cfg.stats.bootstrap,
                  "seed": cfg.stats.seed},
        "batches": list(batch_ids), "deployments": list(deps), "complete_batches": complete,
        "with_text": with_text, "tolerance": tolerance,
        "python": platform.python_version(), "libraries": {name: _version(name) for name in LIBRARIES},
    }


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")


def _write_table(folder: Path, name: str, df: pd.DataFrame) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    df.to_csv(folder / f"{name}.csv", index=False, lineterminator="\n")
    df.to_parquet(folder / f"{name}.parquet", index=False, engine="pyarrow")


def _write_db(path: Path, rows: dict[str, list[dict]]) -> None:
    """A fresh store (full schema via migrations) holding only the scrubbed rows, as one self-contained file."""
    db = open_writer(path)
    try:
        store.copy_rows(db, rows)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("PRAGMA journal_mode=DELETE")  # one file, so it can be hashed, zipped and opened read-only
        db.conn.execute("VACUUM")
    finally:
        db.conn.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _listed(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)


def _write_manifest(folder: Path) -> None:
    files = {name: {"sha256": _sha256(folder / name), "bytes": (folder / name).stat().st_size} for name in _listed(folder)}
    _write_text(folder / MANIFEST, json.dumps({"format": FORMAT, "algorithm": "sha256", "files": files}, indent=2,
                                              sort_keys=True))


def _zip(folder: Path) -> Path:
    target = folder.with_name(folder.name + ".zip")
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in [*_listed(folder), MANIFEST]:
            zf.write(folder / name, f"{folder.name}/{name}")
    return target


# -- verify ---------------------------------------------------------------------------------

def verify_snapshot(path: str | Path) -> VerifyResult:
    """Check every file against manifest.json: missing, changed (SHA-256) and unlisted files are problems."""
    with opened(path) as folder:
        return _verify_folder(folder)


def _verify_folder(folder: Path) -> VerifyResult:
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        return VerifyResult(False, 0, (Problem(MANIFEST, "missing: this is not a framewatch snapshot folder"),))
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = manifest["files"]
    except (ValueError, KeyError, TypeError) as exc:
        return VerifyResult(False, 0, (Problem(MANIFEST, f"unreadable ({exc})"),))
    problems = []
    for name, entry in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            problems.append(Problem(name, "missing (listed in the manifest)"))
        elif _sha256(path) != entry.get("sha256"):
            problems.append(Problem(name, "SHA-256 differs from the manifest: the file changed after export"))
    problems += [Problem(name, "not listed in the manifest (added after export)")
                 for name in _listed(folder) if name not in files]
    return VerifyResult(not problems, len(files), tuple(problems))


class opened:
    """Context manager: a snapshot folder as is, or a .zip extracted to a temporary folder."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Path:
        if self.path.is_dir():
            return self.path
        if self.path.suffix == ".zip" and self.path.is_file():
            self._tmp = tempfile.TemporaryDirectory(prefix="framewatch-snapshot-")
            root = Path(self._tmp.name)
            with zipfile.ZipFile(self.path) as zf:
                for info in zf.infolist():
                    target = (root / info.filename).resolve()
                    if not str(target).startswith(str(root.resolve()) + os.sep):
                        raise SnapshotError(f"{self.path}: entry {info.filename!r} points outside the archive; refusing it.")
                zf.extractall(root)
            inner = [p for p in root.iterdir() if p.is_dir()]
            return inner[0] if len(inner) == 1 and not (root / MANIFEST).exists() else root
        raise SnapshotError(f"{self.path}: no snapshot folder or .zip here.")

    def __exit__(self, *exc) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def read_versions(folder: Path) -> dict:
    try:
        return json.loads((folder / "versions.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SnapshotError(f"{folder}: versions.json missing or unreadable ({exc}); export the snapshot again.") from exc


def check_database(folder: Path) -> Path:
    """Path of snapshot.db after checking it is a readable SQLite framewatch store."""
    path = folder / "snapshot.db"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        conn.execute("select count(*) from cells").fetchone()
        conn.close()
    except sqlite3.Error as exc:
        raise SnapshotError(f"{path}: not a readable framewatch store ({exc}).") from exc
    return path
