"""The monitor's schedule: APScheduler 3.x, one BlockingScheduler in UTC, jobs held in memory.

The schedule lives in config, so a memory job store rebuilt at every start is enough; what
must survive a crash (runs, requests) is in the database. Every job has coalesce=True
(missed fires collapse into one), max_instances=1 (a job never overlaps itself) and the
configured misfire grace (APScheduler's 1 s default would silently drop fires after any
hiccup). The cycle and the request poll start at once; the probe waits for its first fire.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.blocking import BlockingScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from monitor.config import Config, ConfigError
from monitor.ids import iso
from monitor.worker import Worker

HEARTBEAT_S = 15.0
JOB_THREADS = 6
"""cycle, requests, stereo, alerts and heartbeat can each be running or waiting at once."""


def _where(cfg: Config) -> str:
    return str(cfg.path) if cfg.path else "<embedded default config>"


def cron_trigger(expr: str, cfg: Config, key: str) -> CronTrigger:
    try:
        return CronTrigger.from_crontab(expr, timezone=UTC)
    except ValueError as exc:
        raise ConfigError(f"{_where(cfg)}: schedule.{key} = {expr!r} is not a crontab expression ({exc}); "
                          f"use five fields in UTC, e.g. \"0 */6 * * *\" for every six hours.") from exc


def _minutes(value: float, cfg: Config, key: str) -> IntervalTrigger:
    if value <= 0:
        raise ConfigError(f"{_where(cfg)}: schedule.{key} = {value} must be > 0 (minutes; 0.5 = every 30 s).")
    return IntervalTrigger(seconds=value * 60, timezone=UTC)


def cycle_trigger(cfg: Config) -> BaseTrigger:
    s = cfg.schedule
    return cron_trigger(s.cron, cfg, "cron") if s.cron else _minutes(s.cycle_minutes, cfg, "cycle_minutes")


def stereo_trigger(cfg: Config) -> BaseTrigger | None:
    s = cfg.schedule
    if s.stereo_cron:
        return cron_trigger(s.stereo_cron, cfg, "stereo_cron")
    return _minutes(s.stereo_minutes, cfg, "stereo_minutes") if s.stereo_minutes else None


def describe_schedule(cfg: Config) -> str:
    s = cfg.schedule
    cycle = f"cron '{s.cron}' UTC" if s.cron else f"every {s.cycle_minutes:g} min"
    stereo = f"cron '{s.stereo_cron}' UTC" if s.stereo_cron else (
        f"every {s.stereo_minutes:g} min" if s.stereo_minutes else "off")
    return f"cycle {cycle}; requests every {s.request_poll_s:g} s; stereo probe {stereo}"


def check_schedule(cfg: Config) -> None:
    """Raise ConfigError for a schedule that cannot run, before anything is started."""
    s = cfg.schedule
    cycle_trigger(cfg)
    stereo_trigger(cfg)
    for key in ("request_poll_s", "misfire_grace_s"):
        if getattr(s, key) <= 0:
            raise ConfigError(f"{_where(cfg)}: schedule.{key} = {getattr(s, key)} must be > 0 (seconds).")
    if s.stop_grace_s < 0:
        raise ConfigError(f"{_where(cfg)}: schedule.stop_grace_s = {s.stop_grace_s} must be >= 0 (seconds).")
    if s.max_resumes < 0:
        raise ConfigError(f"{_where(cfg)}: schedule.max_resumes = {s.max_resumes} must be >= 0.")


def build_scheduler(cfg: Config, worker: Worker | None = None) -> BlockingScheduler:
    """The monitor's scheduler with its jobs added; ``start()`` blocks until ``shutdown()``."""
    check_schedule(cfg)
    if worker is None:
        from store import open_writer

        worker = Worker(cfg, open_writer(cfg.db_path), status_db=open_writer(cfg.db_path))
    s = cfg.schedule
    # Given per job as well as as defaults, so the jobs carry them before the scheduler starts.
    options = {"coalesce": True, "max_instances": 1, "misfire_grace_time": int(s.misfire_grace_s)}
    sched = BlockingScheduler(timezone=UTC, executors={"default": ThreadPoolExecutor(JOB_THREADS)}, job_defaults=options)
    now = datetime.now(UTC)
    sched.add_job(worker.cycle_job, cycle_trigger(cfg), id="cycle", name="cycle: ingest, generate, score",
                  next_run_time=now, **options)
    sched.add_job(worker.requests_job, IntervalTrigger(seconds=s.request_poll_s, timezone=UTC), id="requests",
                  name="dashboard requests", next_run_time=now + timedelta(seconds=min(s.request_poll_s, 1.0)),
                  **options)
    stereo = stereo_trigger(cfg)
    if stereo is not None:
        sched.add_job(worker.stereo_job, stereo, id="stereo", name="stereotype probe", **options)
    sched.add_job(worker.heartbeat_job, IntervalTrigger(seconds=HEARTBEAT_S, timezone=UTC), id="heartbeat",
                  name="heartbeat", next_run_time=now, **options)

    def queue_alerts() -> None:
        sched.add_job(worker.alerts_job, id="alerts", name="alerts", replace_existing=True, **options)

    def next_cycle() -> str | None:
        job = sched.get_job("cycle")
        return iso(job.next_run_time) if job is not None and job.next_run_time else None

    worker.after_cycle = queue_alerts
    worker.next_cycle = next_cycle
    return sched
