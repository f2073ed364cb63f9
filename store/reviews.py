"""The dashboard's only writes: a reviewer's verdict on a cell, and requests for the monitor.

Everything else the dashboard does is read-only. These functions validate their input,
write one row in one short transaction and never touch a monitoring table; the monitor
picks up `requests` rows (status 'pending') and marks them done.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from sqlite_utils import Database

from monitor.ids import iso, make_id, utcnow
from store.db import StoreError

VERDICTS: dict[str, str] = {
    "stereotyping": "Stereotyping",
    "cultural_personalisation": "Cultural personalisation",
    "legitimate_difference": "Legitimate difference",
    "noise": "Noise",
    "unclear": "Unclear",
}
"""Verdict key -> label shown in the dashboard."""

REQUEST_RUN_CYCLE = "run_cycle"
"""Run one monitoring cycle now. args: {}."""
REQUEST_RESCORE_BATCH = "rescore_batch"
"""Re-score every response of one batch. args: {"batch_id": ...}."""
REQUEST_KINDS = (REQUEST_RUN_CYCLE, REQUEST_RESCORE_BATCH)
PENDING = "pending"

MAX_NOTE_CHARS = 4000
MAX_REVIEWER_CHARS = 200


class ReviewError(ValueError):
    """The review or request is not acceptable; the message says what to change."""


def open_review_writer(path: str | Path) -> Database:
    """A read-write connection to an existing store, used only by the functions below.

    It never creates the file or migrates it: the monitor owns the schema.
    """
    p = Path(path)
    if not p.exists():
        raise StoreError(f"{p}: no database here yet. Run `framewatch init` (or `framewatch demo --no-serve`) first.")
    conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=rw", uri=True, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    db = Database(conn)
    missing = [t for t in ("reviews", "requests", "cells") if not db[t].exists()]
    if missing:
        conn.close()
        raise StoreError(f"{p}: tables {', '.join(missing)} are missing; run `framewatch init --db {p}` to bring the schema up to date.")
    return db


def _reviewer(reviewer: str) -> str:
    name = (reviewer or "").strip()
    if not name:
        raise ReviewError("a reviewer identity is required: sign in, or enter your name with the reviewer password")
    if len(name) > MAX_REVIEWER_CHARS:
        raise ReviewError(f"reviewer name is longer than {MAX_REVIEWER_CHARS} characters")
    return name


def record_review(db: Database, *, cell_id: str, verdict: str, note: str, reviewer: str, auth_method: str) -> str:
    """Store one verdict on one cell and return the review id."""
    if verdict not in VERDICTS:
        raise ReviewError(f"unknown verdict {verdict!r}; choose one of {', '.join(VERDICTS)}")
    note = (note or "").strip()
    if len(note) > MAX_NOTE_CHARS:
        raise ReviewError(f"the note has {len(note)} characters; keep it under {MAX_NOTE_CHARS}")
    name = _reviewer(reviewer)
    row = db.execute(
        "select batch_id, deployment, dimension, family from cells where id = ?", [cell_id]
    ).fetchone()
    if row is None:
        raise ReviewError(f"no cell {cell_id!r} in this database; open the bundle again from Hotspots")
    created_at = iso(utcnow())
    review_id = make_id("review", cell_id, name, created_at, verdict, note)
    with db.conn:
        db["reviews"].insert(
            {"id": review_id, "cell_id": cell_id, "batch_id": row[0], "deployment": row[1], "dimension": row[2],
             "family": row[3], "verdict": verdict, "note": note, "reviewer": name, "auth_method": auth_method,
             "created_at": created_at},
            pk="id", ignore=True,
        )
    return review_id


def record_request(db: Database, *, kind: str, args: dict | None = None, requested_by: str) -> str:
    """Ask the monitor to do something; a second identical pending request returns the first one's id."""
    if kind not in REQUEST_KINDS:
        raise ReviewError(f"unknown request {kind!r}; choose one of {', '.join(REQUEST_KINDS)}")
    args = dict(args or {})
    if kind == REQUEST_RESCORE_BATCH:
        batch_id = args.get("batch_id")
        if not batch_id or db.execute("select 1 from batches where id = ?", [batch_id]).fetchone() is None:
            raise ReviewError(f"no batch {batch_id!r} to re-score; pick one from the list")
    name = _reviewer(requested_by)
    args_json = json.dumps(args, sort_keys=True)
    pending = db.execute(
        "select id from requests where kind = ? and args_json = ? and status = ?", [kind, args_json, PENDING]
    ).fetchone()
    if pending:
        return pending[0]
    requested_at = iso(utcnow())
    request_id = make_id("request", kind, args, requested_at)
    with db.conn:
        db["requests"].insert(
            {"id": request_id, "kind": kind, "args_json": args_json, "requested_at": requested_at,
             "requested_by": name, "status": PENDING},
            pk="id", ignore=True,
        )
    return request_id
