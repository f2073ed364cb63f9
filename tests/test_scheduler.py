"""The monitor's schedule and jobs, in-process: triggers and job options, resume, requests, budget trimming, alerts."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime

import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from monitor import config, runs
from monitor import service_state as state
from monitor.bounds import plan_cycle
from monitor.config import ConfigError
from monitor.pipeline import cycle_id
from monitor.scheduler import build_scheduler
from monitor.worker import Worker
from monitor_service_helpers import write_config, write_feed
from scripted_config import REQUESTS_PER_ARTICLE
from store import open_writer
from store.reviews import record_request


def load(tmp_path, **kw):
    return config.load(write_config(tmp_path, **kw))


@pytest.fixture
def cfg(tmp_path):
    return load(tmp_path)


@pytest.fixture
def worker(cfg):
    from monitor.scoring.embed import FakeEmbedder

    db = open_writer(cfg.db_path)
    w = Worker(cfg, db, status_db=open_writer(cfg.db_path), progress=lambda: None, embedder=FakeEmbedder())
    yield w
    db.conn.close()


def cycles(db) -> list[dict]:
    return list(db.query("select * from runs where kind = 'cycle' order by started_at, id"))


# -- schedule ---------------------------------------------------------------------------------

def test_jobs_run_at_start_on_the_interval_in_utc_without_overlap(tmp_path):
    cfg = load(tmp_path, minutes=2.5, extra="stereo_minutes = 1440")
    sched = build_scheduler(cfg)
    assert str(sched.timezone) == "UTC"
    jobs = {j.id: j for j in sched.get_jobs()}
    assert set(jobs) == {"cycle", "requests", "stereo", "heartbeat"}
    for job in jobs.values():
        assert job.coalesce is True and job.max_instances == 1 and job.misfire_grace_time == 30
    cycle = jobs["cycle"]
    assert isinstance(cycle.trigger, IntervalTrigger) and cycle.trigger.interval.total_seconds() == 150
    assert abs((cycle.next_run_time - datetime.now(UTC)).total_seconds()) < 5  # runs at start
    assert jobs["requests"].trigger.interval.total_seconds() == 0.5
    assert jobs["stereo"].trigger.interval.total_seconds() == 1440 * 60


def test_cron_schedule_and_no_stereo_job_unless_configured(tmp_path):
    cfg = load(tmp_path, extra='cron = "15 */6 * * *"')
    jobs = {j.id: j for j in build_scheduler(cfg).get_jobs()}
    assert "stereo" not in jobs
    trigger = jobs["cycle"].trigger
    assert isinstance(trigger, CronTrigger) and str(trigger.timezone) == "UTC"
    fire = trigger.get_next_fire_time(None, datetime(2026, 1, 1, 7, 0, tzinfo=UTC))
    assert fire == datetime(2026, 1, 1, 12, 15, tzinfo=UTC)


@pytest.mark.parametrize("extra, message", [
    ('cron = "every hour"', "schedule.cron = 'every hour' is not a crontab expression"),
    ("stereo_minutes = -1", "schedule.stereo_minutes = -1.0 must be > 0"),
    ("max_resumes = -1", "schedule.max_resumes = -1 must be >= 0"),
])
def test_bad_schedule_is_a_config_error_that_says_how_to_fix_it(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        build_scheduler(load(tmp_path, extra=extra))


def test_bad_cycle_interval_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="cycle_minutes = 0.0 must be > 0"):
        build_scheduler(load(tmp_path, minutes=0))


def test_the_scheduler_fires_cycles_requests_and_heartbeats(tmp_path):
    cfg = load(tmp_path, minutes=0.02)
    db = open_writer(cfg.db_path)
    from monitor.scoring.embed import FakeEmbedder

    worker = Worker(cfg, db, status_db=open_writer(cfg.db_path), progress=lambda: None, embedder=FakeEmbedder())
    alerts = []
    worker.alerts_job = lambda: alerts.append(1)  # the after-cycle job is queued by the scheduler
    sched = build_scheduler(cfg, worker)
    record_request(db, kind="run_cycle", requested_by="tester")
    thread = threading.Thread(target=sched.start, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = db.execute("select count(*) from runs where kind = 'cycle' and status = 'ok'").fetchone()[0]
            picked = db.execute("select count(*) from requests where status = 'done'").fetchone()[0]
            if done >= 3 and picked == 1 and alerts:
                break
            time.sleep(0.1)
    finally:
        worker.stop.set()
        sched.shutdown(wait=False)
        thread.join(10)
        assert worker.wait_idle(10)
    assert done >= 3 and picked == 1 and alerts
    status = db["monitor_status"].get("monitor")
    assert status["status"] == "running" and status["next_cycle_at"]


# -- cycles and resume ------------------------------------------------------------------------

def test_cycle_job_records_label_and_process_and_never_overlaps(worker, monkeypatch):
    import monitor.worker as worker_mod

    active, peak = [0], [0]
    real = worker_mod.run_cycle

    def counting(*a, **kw):
        active[0] += 1
        peak[0] = max(peak[0], active[0])
        try:
            time.sleep(0.2)
            return real(*a, **kw)
        finally:
            active[0] -= 1

    monkeypatch.setattr(worker_mod, "run_cycle", counting)
    threads = [threading.Thread(target=worker.cycle_job) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert peak[0] == 1
    rows = cycles(worker.db)
    assert len(rows) == 3 and len({r["label"] for r in rows}) == 3
    assert all(r["status"] == "ok" and r["pid"] and r["host"] and r["id"] == cycle_id(r["label"]) for r in rows)


def test_a_run_left_running_by_a_dead_monitor_is_marked_then_resumed_first(worker):
    db, cfg = worker.db, worker.cfg
    run_id = cycle_id("crashed")
    state.claim_cycle(db, run_id, "crashed")
    runs.start_run(db, cfg, run_id)
    runs.set_stage(db, run_id, "generate")
    req = record_request(db, kind="run_cycle", requested_by="tester")
    db["requests"].update(req, {"status": "picked"})

    assert state.mark_orphans(db) == [run_id]
    row = db["runs"].get(run_id)
    assert row["status"] == "abandoned" and row["resumes"] == 1 and "stopped during generate" in row["error"]
    assert db["requests"].get(req)["status"] == "pending"

    reports = worker.cycle_job()
    assert [r.run_id for r in reports][0] == run_id and len(reports) == 2
    row = db["runs"].get(run_id)
    assert row["status"] == "ok" and row["label"] == "crashed" and row["error"] is None
    assert json.loads(row["counts_json"]) == runs.batch_counts(db, row["batch_id"])


def test_a_cycle_that_keeps_killing_the_monitor_is_given_up(worker):
    db, cfg = worker.db, worker.cfg
    run_id = cycle_id("poison")
    state.claim_cycle(db, run_id, "poison")
    runs.start_run(db, cfg, run_id)
    for _ in range(cfg.schedule.max_resumes + 1):
        db["runs"].update(run_id, {"status": "running"})
        state.mark_orphans(db)
    worker.cycle_job()
    row = db["runs"].get(run_id)
    assert row["status"] == "failed" and "gave up" in row["error"] and "run-once --label 'poison'" in row["error"]
    assert worker.failures == 1


def test_a_stopped_worker_starts_nothing(worker):
    worker.stop.set()
    assert worker.cycle_job() == []
    assert cycles(worker.db) == []


# -- dashboard requests -----------------------------------------------------------------------

def test_requests_run_a_cycle_and_rescore_a_batch_and_report_back(worker):
    db = worker.db
    run_req = record_request(db, kind="run_cycle", requested_by="lead")
    assert worker.requests_job() == 1
    row = db["requests"].get(run_req)
    assert row["status"] == "done" and row["picked_at"] and row["done_at"] and row["run_id"]
    run = db["runs"].get(row["run_id"])
    assert run["status"] == "ok" and run["label"] == row["label"] and row["label"].endswith("requested")
    assert "responses" in row["result"]

    batch_id = run["batch_id"]
    n_cells = json.loads(run["counts_json"])["cells"]
    assert n_cells == 2 * 2 * 2  # articles x dimensions x deployments
    db.execute("delete from cells where batch_id = ?", [batch_id])
    db.conn.commit()
    rescore = record_request(db, kind="rescore_batch", args={"batch_id": batch_id}, requested_by="lead")
    assert worker.requests_job() == 1
    row = db["requests"].get(rescore)
    assert row["status"] == "done" and "re-scored batch" in row["result"]
    assert db["runs"].get(row["run_id"])["kind"] == "rescore"
    assert db.execute("select count(*) from cells where batch_id = ?", [batch_id]).fetchone()[0] == n_cells


def test_unknown_or_impossible_requests_fail_with_a_reason(worker):
    db = worker.db
    with db.conn:
        db["requests"].insert_all([
            {"id": "r1", "kind": "reboot", "args_json": "{}", "requested_at": "2026-01-01T00:00:00+00:00", "status": "pending"},
            {"id": "r2", "kind": "rescore_batch", "args_json": '{"batch_id": "nope"}',
             "requested_at": "2026-01-01T00:00:01+00:00", "status": "pending"},
        ], pk="id")
    assert worker.requests_job() == 2
    assert db["requests"].get("r1")["status"] == "failed" and "unknown request kind" in db["requests"].get("r1")["result"]
    assert db["requests"].get("r2")["status"] == "failed" and "no batch 'nope'" in db["requests"].get("r2")["result"]


def test_requests_wait_while_another_job_writes(worker):
    req = record_request(worker.db, kind="run_cycle", requested_by="lead")
    held = threading.Event()
    release = threading.Event()

    def busy():
        with worker.exclusive():
            held.set()
            release.wait(10)

    t = threading.Thread(target=busy)
    t.start()
    held.wait(5)
    try:
        assert worker.requests_job() == 0
        assert worker.db["requests"].get(req)["status"] == "pending"
    finally:
        release.set()
        t.join()


# -- budget -----------------------------------------------------------------------------------

def test_prompt_cap_trims_the_cycle_by_whole_articles_and_records_it(tmp_path):
    from monitor.scoring.embed import FakeEmbedder

    write_feed(tmp_path / "feed.xml", 0, 6)
    text = write_config(tmp_path, articles=3).read_text() + f"\n[budget]\nmax_prompts_per_cycle = {REQUESTS_PER_ARTICLE + 5}\n"
    (tmp_path / "framewatch.toml").write_text(text)
    cfg = config.load(tmp_path / "framewatch.toml")
    db = open_writer(cfg.db_path)
    plan = plan_cycle(db, cfg)
    assert plan.articles == 1 and plan.requests_per_article == REQUESTS_PER_ARTICLE
    assert "max_prompts_per_cycle" in plan.limited_by

    report = Worker(cfg, db, progress=lambda: None, embedder=FakeEmbedder()).cycle_job()[0]
    assert report.status == "ok"  # trimmed up front: the backstop never had to cut a bundle
    assert report.counts["articles_sampled"] == 1 and report.counts["responses"] == REQUESTS_PER_ARTICLE
    skipped = json.loads(db["runs"].get(report.run_id)["skipped_json"])
    assert skipped["articles"]["articles"] == 2 and skipped["articles"]["sampled"] == 1
    assert "max_prompts_per_cycle" in skipped["articles"]["reason"]


def test_cost_cap_fits_articles_by_worst_case_cost(tmp_path):
    text = write_config(tmp_path, articles=4).read_text().replace(
        'model = "scripted"\n\n[[deployments]]', 'model = "scripted"\nprice_out_per_1k = 1.0\n\n[[deployments]]', 1)
    (tmp_path / "framewatch.toml").write_text(text + "\n[budget]\nmax_cost_per_cycle = 1.0\n")
    cfg = config.load(tmp_path / "framewatch.toml")
    plan = plan_cycle(None, cfg)
    # 24 requests of scripted-a per article, each up to max_tokens (48) output tokens at 1.0 per 1k
    per_article = 24 * 48 / 1000
    assert plan.cost_per_article == pytest.approx(per_article)
    assert plan.articles == int(1.0 // per_article) == 0
    assert "max_cost_per_cycle" in plan.limited_by


def test_no_cap_leaves_the_grid_alone(cfg):
    plan = plan_cycle(None, cfg)
    assert plan.articles == cfg.grid.articles_per_batch and plan.limited_by is None


# -- alerts, heartbeat ------------------------------------------------------------------------

def test_alerts_job_calls_evaluate_alerts(worker, monkeypatch):
    calls = []
    monkeypatch.setattr("monitor.alerts.evaluate_alerts", lambda db, cfg: calls.append((db, cfg)) or "report")
    assert worker.alerts_job() == "report" and calls == [(worker.db, worker.cfg)]


def test_heartbeat_marks_the_monitor_and_its_running_run_alive(worker):
    db = worker.db
    run_id = cycle_id("beating")
    state.claim_cycle(db, run_id, "beating")
    db["runs"].update(run_id, {"heartbeat_at": "2000-01-01T00:00:00+00:00"})
    worker.current_run_id = run_id
    worker.next_cycle = lambda: "2030-01-01T00:00:00+00:00"
    worker.heartbeat_job()
    status = db["monitor_status"].get("monitor")
    assert status["status"] == "running" and status["current_run_id"] == run_id
    assert status["next_cycle_at"] == "2030-01-01T00:00:00+00:00"
    assert db["runs"].get(run_id)["heartbeat_at"] > "2020"


# -- stereo probe -----------------------------------------------------------------------------

def test_stereo_job_adds_a_probe_run_each_time_and_finishes_an_interrupted_one(worker):
    from monitor.stereo.seed import load_demo_seed

    db = worker.db
    assert load_demo_seed(db) > 0
    first = worker.stereo_job()
    assert len(first) == 1
    run_ids = [r["id"] for r in db.query("select id from stereo_probe_runs")]
    assert len(run_ids) == 1 and db.execute("select count(*) from stereo_probe_results").fetchone()[0] > 0
    # a probe cut short by a dead monitor: its row says running and half its results are gone
    db.execute("update stereo_probe_runs set status = 'running', finished_at = null where id = ?", run_ids)
    db.execute("delete from stereo_probe_results where rowid % 2 = 0 and run_id = ?", run_ids)
    db.conn.commit()
    second = worker.stereo_job()
    assert len(second) == 2  # the resumed run, then a new one: a time series
    statuses = dict(db.execute("select id, status from stereo_probe_runs").fetchall())
    assert len(statuses) == 2 and "running" not in statuses.values()
    per_run = dict(db.execute("select run_id, count(*) from stereo_probe_results group by run_id").fetchall())
    assert per_run[run_ids[0]] == max(per_run.values()) == min(per_run.values())


def test_a_run_once_cycle_without_a_stored_label_is_resumed_through_its_batch(worker):
    from monitor.pipeline import run_cycle

    db, cfg = worker.db, worker.cfg
    stop = threading.Event()
    stop.set()  # like a run-once interrupted during generation: ingest done, nothing generated
    report = run_cycle(db, cfg, label="by-hand", stop=stop, embedder=worker.embedder)
    assert report.status == "abandoned" and db["runs"].get(report.run_id)["label"] is None
    resumed = worker.resume_open_cycles()
    assert [r.run_id for r in resumed] == [report.run_id] and resumed[0].status == "ok"
    assert resumed[0].counts["responses"] == resumed[0].counts["articles_sampled"] * REQUESTS_PER_ARTICLE > 0


def test_liveness_from_the_monitor_status_row():
    from datetime import timedelta

    from monitor.ids import iso
    from monitor.service_state import STALE_AFTER_S, liveness

    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    row = {"pid": 7, "host": "h", "status": "running", "heartbeat_at": iso(now - timedelta(seconds=20)),
           "next_cycle_at": "2026-11-30T13:00:00+00:00"}
    assert liveness(None, now)[0] == "never"
    assert liveness(row, now) == ("alive", "The monitor (pid 7 on h) is running: last heartbeat "
                                           "2026-11-30T11:59:40+00:00; next cycle 2026-11-30T13:00:00+00:00.")
    stale = {**row, "heartbeat_at": iso(now - timedelta(seconds=STALE_AFTER_S + 1))}
    assert liveness(stale, now)[0] == "stale" and "framewatch monitor" in liveness(stale, now)[1]
    stopped = {**row, "status": "stopped", "stopped_at": iso(now), "message": "stopped on request"}
    assert liveness(stopped, now)[0] == "stopped" and "stopped on request" in liveness(stopped, now)[1]
