"""What the monitor service keeps in the store besides the pipeline's own rows.

- Which cycle label a run belongs to (so a restart can resume it: the run id is a hash of the label).
- Recovery at start: `running` runs and `picked` requests left by a process that died.
- Dashboard requests: pending -> picked -> done | failed, with a result line.
- monitor_status: one row saying whether a monitor is alive, with its heartbeat and next cycle.

Every write is one short transaction; every function is safe to repeat.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from datetime import datetime

from sqlite_utils import Database

from monitor import runs
from monitor.ids import iso, parse_iso, utcnow

STATUS_ID = "monitor"
REQ_PENDING, REQ_PICKED, REQ_DONE, REQ_FAILED = "pending", "picked", "done", "failed"
RESUMABLE = (runs.RUNNING, runs.ABANDONED)


@dataclass(frozen=True, slots=True)
class OpenCycle:
    run_id: str
    label: str
    resumes: int
    status: str
    batch_id: str | None


@dataclass(frozen=True, slots=True)
class Request:
    id: str
    kind: str
    args: dict
    label: str | None


def claim_cycle(db: Database, run_id: str, label: str) -> None:
    """Record the label (and this process) on the run row before the pipeline starts it.

    A new row gets started_at/status now, so the pipeline's start_run keeps them; a crash
    between here and start_run still leaves a `running` row that names its label.
    """
    now = iso(utcnow())
    row = {"id": run_id, "label": label, "pid": os.getpid(), "host": socket.gethostname(), "heartbeat_at": now}
    with db.conn:
        if db.execute("select 1 from runs where id = ?", [run_id]).fetchone() is None:
            db["runs"].insert({**row, "kind": "cycle", "status": runs.RUNNING, "started_at": now, "resumes": 0}, pk="id")
        else:
            db["runs"].update(run_id, row)


def mark_orphans(db: Database) -> list[str]:
    """At start (the lock is ours, so nobody else is running): `running` rows belong to a dead process.

    They become `abandoned` with the reason and one more crash in `resumes` (a graceful stop
    is not counted), and `picked` requests go back to `pending`. Returns the ids of the runs marked.
    """
    orphans = list(db.query("select id, heartbeat_at, stage, pid, host, resumes from runs where status = ?",
                            [runs.RUNNING]))
    with db.conn:
        for r in orphans:
            db["runs"].update(r["id"], {
                "status": runs.ABANDONED, "stage": "stopped", "resumes": (r["resumes"] or 0) + 1,
                "error": (f"the monitor (pid {r['pid'] or '?'} on {r['host'] or '?'}) stopped during "
                          f"{r['stage'] or 'start'} with no heartbeat since {r['heartbeat_at'] or '?'}; "
                          f"the next cycle resumes it"),
            })
        db.execute("update requests set status = ?, picked_at = null where status = ?", [REQ_PENDING, REQ_PICKED])
    return [r["id"] for r in orphans]


def open_cycles(db: Database) -> list[OpenCycle]:
    """Interrupted cycles that can be resumed, oldest first.

    A run started outside the monitor (`run-once`) has no stored label; the batch its ingest
    opened has, and the run id is the hash of that label.
    """
    rows = list(db.query(
        "select id, label, coalesce(resumes, 0) as resumes, status, batch_id from runs "
        "where kind = 'cycle' and status in (?, ?) order by started_at, id",
        list(RESUMABLE),
    ))
    by_run: dict[str, str] = {}
    if any(not r["label"] for r in rows):
        from monitor.pipeline import cycle_id

        by_run = {cycle_id(b["label"]): b["label"] for b in db.query("select label from batches where label is not null")}
    return [OpenCycle(r["id"], r["label"] or by_run.get(r["id"]), r["resumes"], r["status"], r["batch_id"]) for r in rows]


def give_up(db: Database, cycle: OpenCycle, max_resumes: int) -> None:
    reason = (f"gave up after the monitor died {cycle.resumes} times during this cycle (schedule.max_resumes = "
              f"{max_resumes}). Look at the monitor's log for this label, fix the cause, then "
              f"`framewatch run-once --label '{cycle.label}'` finishes it.")
    if not cycle.label:
        reason = "interrupted, and no label is recorded to resume it with; its stored rows stay as they are"
    runs.finish_run(db, cycle.run_id, runs.FAILED, counts=runs.batch_counts(db, cycle.batch_id) if cycle.batch_id else {},
                    error=reason)


def merge_skipped(db: Database, run_id: str, extra: dict) -> None:
    """Add entries to the run's skipped_json (the pipeline wrote the generate stage's)."""
    row = db.execute("select skipped_json from runs where id = ?", [run_id]).fetchone()
    if row is None:
        return
    skipped = json.loads(row[0] or "{}")
    skipped.update(extra)
    with db.conn:
        db["runs"].update(run_id, {"skipped_json": json.dumps(skipped, sort_keys=True)})


def pending_requests(db: Database) -> list[Request]:
    rows = db.query("select id, kind, args_json, label from requests where status = ? order by requested_at, id",
                    [REQ_PENDING])
    return [Request(r["id"], r["kind"], json.loads(r["args_json"] or "{}"), r["label"]) for r in rows]


def pick_request(db: Database, req: Request, *, label: str | None = None) -> None:
    with db.conn:
        db["requests"].update(req.id, {"status": REQ_PICKED, "picked_at": iso(utcnow()), "label": label or req.label})


def requeue_request(db: Database, request_id: str) -> None:
    """Back to pending (keeping its label) when the monitor stopped before finishing it."""
    with db.conn:
        db["requests"].update(request_id, {"status": REQ_PENDING, "picked_at": None})


def finish_request(db: Database, request_id: str, ok: bool, result: str, *, run_id: str | None = None) -> None:
    with db.conn:
        db["requests"].update(request_id, {"status": REQ_DONE if ok else REQ_FAILED, "done_at": iso(utcnow()),
                                           "result": result[:2000], "run_id": run_id})


def set_status(db: Database, status: str, *, schedule: str | None = None, next_cycle_at: str | None = None,
               current_run_id: str | None = None, message: str | None = None, started: bool = False) -> None:
    """Upsert the monitor_status row; the dashboard treats an old heartbeat as 'monitor not running'."""
    now = iso(utcnow())
    row = {"id": STATUS_ID, "pid": os.getpid(), "host": socket.gethostname(), "status": status, "heartbeat_at": now,
           "next_cycle_at": next_cycle_at, "current_run_id": current_run_id, "message": message}
    if started:
        row.update(started_at=now, stopped_at=None)
    if status == "stopped":
        row["stopped_at"] = now
    if schedule is not None:
        row["schedule"] = schedule
    with db.conn:
        db["monitor_status"].upsert(row, pk="id")


def touch_run(db: Database, run_id: str) -> None:
    """Heartbeat of a run in progress, independent of the pipeline's progress writes."""
    with db.conn:
        db.execute("update runs set heartbeat_at = ? where id = ? and status = ?", [iso(utcnow()), run_id, runs.RUNNING])


STALE_AFTER_S = 90
"""A running monitor heartbeats every 15 s; six missed beats mean it died or hangs."""


def liveness(row: dict | None, now: datetime) -> tuple[str, str]:
    """(state, sentence) for the dashboard: 'alive', 'stale', 'stopped' or 'never', from the monitor_status row. Pure."""
    if not row:
        return "never", "No monitor has run on this database; cycles come from `framewatch run-once` or the demo."
    beat = parse_iso(row.get("heartbeat_at"))
    where = f"pid {row.get('pid')} on {row.get('host')}"
    if row.get("status") == "stopped":
        return "stopped", f"The monitor ({where}) stopped at {row.get('stopped_at') or row.get('heartbeat_at')}: {row.get('message') or 'no reason given'}."
    age = (now - beat).total_seconds() if beat else None
    if age is None or age > STALE_AFTER_S:
        return "stale", (f"The monitor ({where}) last reported at {row.get('heartbeat_at')}, over {STALE_AFTER_S} s ago: "
                         "it died or hangs. Restart it with `framewatch monitor`; the cycle it left resumes.")
    nxt = f"; next cycle {row['next_cycle_at']}" if row.get("next_cycle_at") else ""
    return "alive", f"The monitor ({where}) is running: last heartbeat {row.get('heartbeat_at')}{nxt}."
