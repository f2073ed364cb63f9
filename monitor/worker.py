"""The monitor's jobs: cycle (resume, then a new one), dashboard requests, stereo probe, alerts, heartbeat.

All jobs that write share one database connection, so they take turns through one work
lock: a cycle, a re-score and a probe never interleave their transactions, and a job never
overlaps itself or another writer. The heartbeat writes through its own connection so that
it keeps beating while a long cycle runs. Every job is safe to repeat: cycles are keyed by
their label, requests by their id.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlite_utils import Database

from monitor import runs
from monitor import service_state as state
from monitor.bounds import articles_skipped, plan_cycle
from monitor.config import Config
from monitor.ids import make_id
from monitor.pipeline import CycleReport, ProgressFactory, cycle_id, default_label, run_cycle
from store.reviews import REQUEST_RESCORE_BATCH, REQUEST_RUN_CYCLE

log = logging.getLogger("framewatch.monitor")


def log_progress() -> ProgressFactory:
    """Progress for a service without a terminal: one log line per stage every 10%."""

    def factory(stage: str) -> Callable[[int, int], None]:
        last = [-1]

        def update(done: int, total: int) -> None:
            step = 10 * done // total if total else 10
            if step != last[0]:
                last[0] = step
                log.info("%s: %d/%d", stage, done, total)

        return update

    return factory


class Worker:
    def __init__(self, cfg: Config, db: Database, *, status_db: Database | None = None,
                 stop: threading.Event | None = None, progress: Callable[[], ProgressFactory | None] | None = None,
                 embedder=None):
        self.cfg = cfg
        self.db = db
        self.status_db = status_db or db
        self.stop = stop or threading.Event()
        self.embedder = embedder
        self._progress = progress or log_progress
        self._work = threading.RLock()
        self.current_run_id: str | None = None
        self.failures = 0
        self.after_cycle: Callable[[], None] | None = None
        """Set by the scheduler: queue the alerts job after every cycle."""
        self.next_cycle: Callable[[], str | None] = lambda: None

    # -- exclusion -------------------------------------------------------------------------
    @contextmanager
    def exclusive(self, *, wait: bool = True) -> Iterator[bool]:
        """Yield True while holding the work lock; False when stopping or (wait=False) busy."""
        acquired = self._work.acquire(blocking=False)
        while wait and not acquired and not self.stop.is_set():
            acquired = self._work.acquire(timeout=0.5)
        if acquired and self.stop.is_set():
            self._work.release()
            acquired = False
        try:
            yield acquired
        finally:
            if acquired:
                self._work.release()

    def wait_idle(self, timeout: float) -> bool:
        """After stop: True once the running job has returned (within ``timeout`` seconds)."""
        if self._work.acquire(timeout=max(timeout, 0.01)):
            self._work.release()
            return True
        return False

    # -- cycles ------------------------------------------------------------------------------
    def cycle_job(self) -> list[CycleReport]:
        """Resume every interrupted cycle, then run a new one."""
        with self.exclusive() as ok:
            if not ok:
                return []
            reports = self.resume_open_cycles()
            if not self.stop.is_set():
                report = self.run_labelled(self.new_label())
                if report is not None:
                    reports.append(report)
            return reports

    def resume_open_cycles(self) -> list[CycleReport]:
        out = []
        for c in state.open_cycles(self.db):
            if self.stop.is_set():
                break
            if not c.label or c.resumes > self.cfg.schedule.max_resumes:
                state.give_up(self.db, c, self.cfg.schedule.max_resumes)
                log.error("cycle %s (%s) not resumed: %s", c.label, c.run_id, "no label" if not c.label else "too many crashes")
                self.failures += 1
                continue
            log.info("resuming cycle %s (%s, %s)", c.label, c.run_id, c.status)
            report = self.run_labelled(c.label)
            if report is not None:
                out.append(report)
        return out

    def new_label(self) -> str:
        """The fire time to the second; a suffix keeps two cycles in one second apart."""
        base = label = default_label()
        n = 1
        while self.db.execute("select 1 from runs where id = ?", [cycle_id(label)]).fetchone():
            n += 1
            label = f"{base}#{n}"
        return label

    def run_labelled(self, label: str) -> CycleReport | None:
        """One cycle under [budget]; None when it failed (the reason is in its run row)."""
        run_id = cycle_id(label)
        state.claim_cycle(self.db, run_id, label)
        self.current_run_id = run_id
        try:
            plan = plan_cycle(self.db, self.cfg)
            if plan.articles == 0:
                log.error("cycle %s: no article fits [budget] (%s); nothing will be generated until the budget is "
                          "raised or the grid made smaller", label, plan.limited_by)
            elif plan.limited_by:
                log.warning("cycle %s: at most %d article(s): %s", label, plan.articles, plan.limited_by)
            report = run_cycle(self.db, plan.cfg, label=label, progress=self._progress(), stop=self.stop,
                               embedder=self.embedder)
        except Exception:
            self.failures += 1
            log.exception("cycle %s (%s) failed; the reason is stored in its run record", label, run_id)
            self._mark_failed_if_open(run_id)
            return None
        finally:
            self.current_run_id = None
        skipped = articles_skipped(self.db, report.batch_id, plan, self.cfg)
        if skipped:
            state.merge_skipped(self.db, run_id, {"articles": skipped})
        c = report.counts
        log.info("cycle %s (%s): %s; %s/%s articles sampled, %s responses (%s errors, %s refusals), %s cells, cost %.4f",
                 label, run_id, report.status, c.get("articles_sampled"), c.get("articles"), c.get("responses"),
                 c.get("errors"), c.get("refusals"), c.get("cells"), c.get("cost") or 0.0)
        if self.after_cycle and report.status != runs.ABANDONED:
            self.after_cycle()
        return report

    def _mark_failed_if_open(self, run_id: str) -> None:
        # The pipeline marks its own failures; this covers one before it started (e.g. the budget plan).
        row = self.db.execute("select status from runs where id = ?", [run_id]).fetchone()
        if row and row[0] == runs.RUNNING:
            runs.finish_run(self.db, run_id, runs.FAILED, error="the cycle could not start; see the monitor's log")

    # -- dashboard requests ------------------------------------------------------------------
    def requests_job(self, *, wait: bool = False) -> int:
        """Handle pending requests, oldest first. While another job runs they stay pending (no overlap)."""
        with self.exclusive(wait=wait) as ok:
            if not ok:
                return 0
            handled = 0
            for req in state.pending_requests(self.db):
                if self.stop.is_set():
                    break
                self.handle(req)
                handled += 1
            return handled

    def handle(self, req: state.Request) -> None:
        label = req.label or (f"{default_label()} requested" if req.kind == REQUEST_RUN_CYCLE else None)
        state.pick_request(self.db, req, label=label)
        log.info("request %s: %s %s", req.id, req.kind, req.args or "")
        run_id = None
        try:
            if req.kind == REQUEST_RUN_CYCLE:
                run_id = cycle_id(label)
                report = self.run_labelled(label)
                if report is not None and report.status == runs.ABANDONED:
                    state.requeue_request(self.db, req.id)  # stopped: the next start finishes it
                    return
                ok = report is not None and report.status in (runs.OK, runs.PARTIAL)
                result = _describe(report) if report else "the cycle failed; its run record says why"
            elif req.kind == REQUEST_RESCORE_BATCH:
                ok, result, run_id = self.rescore(req)
            else:
                ok, result = False, f"unknown request kind {req.kind!r}; this monitor handles run_cycle and rescore_batch"
        except Exception as exc:
            log.exception("request %s failed", req.id)
            ok, result = False, f"{type(exc).__name__}: {exc}"
        state.finish_request(self.db, req.id, ok, result, run_id=run_id)

    def rescore(self, req: state.Request) -> tuple[bool, str, str | None]:
        batch_id = req.args.get("batch_id")
        if not batch_id or self.db.execute("select 1 from batches where id = ?", [batch_id]).fetchone() is None:
            return False, f"no batch {batch_id!r} in this database", None
        from monitor.scoring.cells import SCORER_VERSION, score_batch

        run_id = make_id("rescore", req.id)
        runs.start_run(self.db, self.cfg, run_id, kind="rescore", scorer_version=SCORER_VERSION)
        runs.set_stage(self.db, run_id, "score", batch_id=batch_id)
        self.current_run_id = run_id
        try:
            progress = self._progress()
            score_batch(self.db, self.cfg, batch_id, embedder=self.embedder, progress=progress("score") if progress else None)
        except Exception as exc:
            runs.finish_run(self.db, run_id, runs.FAILED, error=f"score: {type(exc).__name__}: {exc}")
            raise
        finally:
            self.current_run_id = None
        counts = runs.batch_counts(self.db, batch_id)
        runs.finish_run(self.db, run_id, runs.OK, counts=counts)
        return True, f"re-scored batch {batch_id}: {counts['cells']} cells, {counts['significant_cells']} significant", run_id

    # -- stereo probe, alerts, heartbeat -----------------------------------------------------
    def stereo_job(self) -> list:
        """Finish probe runs a dead monitor left `running` (same run id), then one new probe run."""
        from monitor.stereo.probe import probe

        reports = []
        with self.exclusive() as ok:
            if not ok:
                return []
            try:
                if "stereo_probe_runs" in self.db.table_names():
                    for r in self.db.query("select id, seed, deployments_json from stereo_probe_runs "
                                           "where status = 'running' order by started_at"):
                        log.info("stereo probe: resuming interrupted run %s", r["id"])
                        reports.append(probe(self.db, self.cfg, json.loads(r["deployments_json"] or "null"),
                                              seed=r["seed"] or 0, run_id=r["id"]))
                if not self.stop.is_set():
                    reports.append(probe(self.db, self.cfg, seed=0))
            except Exception:
                self.failures += 1
                log.exception("stereo probe failed")
            for report in reports:
                log.info("stereo probe: %s", report)
            return reports

    def alerts_job(self) -> object | None:
        from monitor.alerts import evaluate_alerts

        with self.exclusive() as ok:
            if not ok:
                return None
            try:
                report = evaluate_alerts(self.db, self.cfg)
            except Exception:
                log.exception("alerts evaluation failed")
                return None
            log.info("alerts: %s", report)
            return report

    def heartbeat_job(self) -> None:
        run_id = self.current_run_id
        state.set_status(self.status_db, "running", next_cycle_at=self.next_cycle(), current_run_id=run_id)
        if run_id:
            state.touch_run(self.status_db, run_id)

    def once(self) -> int:
        """One pass of every job, for `framewatch monitor --once` (cron, tests). 1 when something failed."""
        self.cycle_job()
        self.requests_job(wait=True)
        if self.cfg.schedule.stereo_minutes or self.cfg.schedule.stereo_cron:
            self.stereo_job()
        self.alerts_job()
        return 1 if self.failures else 0


def _describe(report: CycleReport) -> str:
    c = report.counts
    return (f"cycle {report.run_id} (batch {report.batch_id}): {report.status}; {c.get('responses')} responses, "
            f"{c.get('errors')} errors, {c.get('cells')} cells")
