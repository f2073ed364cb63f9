"""`framewatch monitor`: the long-running service around the scheduler.

Start: take the database's instance lock (monitor.lock), migrate, record the config, mark
runs left `running` by a dead monitor as abandoned (they resume in the first cycle), then
run the scheduler (or, with --once, every job once).

Stop: the first SIGTERM/SIGINT sets the stop event (generation issues no new request and the
cycle is stored as `abandoned`, to be resumed) and stops the scheduler; the process then
waits up to schedule.stop_grace_s for the running job. If the job is still running after
that, or on a second signal, the run is marked abandoned through a separate connection and
the process exits at once. Nothing is half-written either way: every result is one SQLite
transaction, and one cut short by the exit is rolled back.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

from monitor import runs
from monitor import service_state as state
from monitor.config import Config
from monitor.lock import InstanceLock, LockHeld
from monitor.pipeline import ProgressFactory
from monitor.worker import Worker

log = logging.getLogger("framewatch.monitor")

EXIT_OK = 0
EXIT_FAILED = 1
"""--once: a cycle or job failed (details in the run records and the log)."""
EXIT_LOCKED = 3
"""Another monitor holds this database; systemd should not restart into the same refusal."""
EXIT_SECOND_SIGNAL = 130
EMBEDDER_ENV = "FRAMEWATCH_EMBEDDER"
"""``fake``: score with monitor.scoring.embed.FakeEmbedder (tests; its scores carry their own scorer version)."""

__all__ = ["EXIT_FAILED", "EXIT_LOCKED", "EXIT_OK", "LockHeld", "serve"]


def serve(cfg: Config, *, once: bool = False, progress: Callable[[], ProgressFactory | None] | None = None,
          embedder=None) -> int:
    """Run the monitor until stopped (or one pass with ``once``); returns the exit code.

    Raises LockHeld when another monitor holds the database.
    """
    from monitor.scheduler import check_schedule, describe_schedule
    from store import open_writer
    from store.writes import record_config

    check_schedule(cfg)
    lock = InstanceLock(cfg.db_path)
    lock.acquire()
    try:
        db = open_writer(cfg.db_path)
        status_db = open_writer(cfg.db_path)
        record_config(db, cfg)
        orphans = state.mark_orphans(db)
        if orphans:
            log.warning("%d cycle(s) were left running by a monitor that died: %s; resuming them first",
                        len(orphans), ", ".join(orphans))
        worker = Worker(cfg, db, status_db=status_db, progress=progress, embedder=embedder or embedder_from_env())
        schedule = "once" if once else describe_schedule(cfg)
        state.set_status(status_db, "running", schedule=schedule, started=True)
        log.info("monitor pid %d on %s: %s; database %s", os.getpid(), _host(), schedule, cfg.db_path)
        rc = _supervise(worker, cfg, once)
        state.set_status(status_db, "stopped", message="stopped on request" if worker.stop.is_set() else "finished")
        log.info("monitor stopped (exit %d)", rc)
        return rc
    finally:
        lock.release()


def embedder_from_env():
    """None (the real MiniLM, loaded on first use) unless FRAMEWATCH_EMBEDDER=fake."""
    choice = os.environ.get(EMBEDDER_ENV, "").strip().lower()
    if choice in ("", "minilm"):
        return None
    if choice == "fake":
        from monitor.scoring.embed import FakeEmbedder

        log.warning("%s=fake: scoring with the hash-based fake embedder (for tests, not for audits)", EMBEDDER_ENV)
        return FakeEmbedder()
    raise ValueError(f"{EMBEDDER_ENV}={choice!r}: use 'minilm' (default) or 'fake'")


def _supervise(worker: Worker, cfg: Config, once: bool) -> int:
    grace = cfg.schedule.stop_grace_s
    stopper: list[Callable[[], None]] = []

    def on_signal(signum, _frame) -> None:
        name = signal.Signals(signum).name
        if worker.stop.is_set():
            log.warning("second %s: exiting now", name)
            _abandon_and_exit(worker, f"stopped by a second {name}", EXIT_SECOND_SIGNAL)
        log.info("%s: stopping; the running job gets up to %g s to finish", name, grace)
        worker.stop.set()
        for fn in stopper:
            fn()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        rc = _run_once(worker, grace) if once else _run_scheduled(worker, cfg, stopper)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if rc is None or (worker.stop.is_set() and not worker.wait_idle(grace)):
        _abandon_and_exit(worker, f"stopped by signal; the running job did not finish within stop_grace_s = {grace:g}",
                          EXIT_OK)
    return rc


def _run_scheduled(worker: Worker, cfg: Config, stopper: list) -> int:
    from monitor.scheduler import build_scheduler

    sched = build_scheduler(cfg, worker)
    # wait=False: the signal handler must return; the grace period is enforced by _supervise.
    stopper.append(lambda: sched.shutdown(wait=False))
    sched.start()
    return EXIT_OK


def _run_once(worker: Worker, grace: float) -> int | None:
    """Every job once in a worker thread; None when a stop found it still running after ``grace``."""
    result: dict[str, int] = {}
    # A daemon thread, so that a stop past the grace period can leave without waiting for it.
    t = threading.Thread(target=lambda: result.update(rc=worker.once()), name="framewatch-once", daemon=True)
    t.start()
    stopped_at = None
    while t.is_alive():
        t.join(0.2)
        if worker.stop.is_set():
            stopped_at = stopped_at or time.monotonic()
            if time.monotonic() - stopped_at > grace:
                break
    if t.is_alive():
        return None
    return EXIT_OK if worker.stop.is_set() else result.get("rc", EXIT_FAILED)


def _abandon_and_exit(worker: Worker, why: str, code: int) -> None:
    """Mark the running run abandoned (resumed at next start) and leave without waiting for threads."""
    run_id = worker.current_run_id
    try:
        if run_id:
            row = worker.status_db.execute("select batch_id from runs where id = ?", [run_id]).fetchone()
            counts = runs.batch_counts(worker.status_db, row[0]) if row and row[0] else {}
            runs.finish_run(worker.status_db, run_id, runs.ABANDONED, counts=counts,
                            error=f"{why}; in-flight requests were dropped; the next start resumes this cycle")
        state.set_status(worker.status_db, "stopped", message=why)
        log.warning("%s%s", why, f"; run {run_id} marked abandoned" if run_id else "")
    except Exception:  # leaving matters more than the note: the next start marks the run anyway
        log.exception("could not record the stop")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _host() -> str:
    import socket

    return socket.gethostname()
