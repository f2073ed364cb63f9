"""The monitor as a service: the single-instance lock, SIGKILL and restart, graceful stop, readers beside the writer.

The subprocess tests run the real `framewatch monitor` on the scripted provider with a 3 s
interval. They score with the fake embedder (FRAMEWATCH_EMBEDDER=fake): loading torch and
MiniLM costs ~30 s per process start on the 2-core machine and these tests start several;
test_once_with_the_real_minilm covers the real one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from monitor.lock import InstanceLock, LockHeld, lock_path
from monitor_service_helpers import (
    REPO, GrowingFeed, read, start_monitor, stop, wait_for, write_config,
)
from scripted_config import REQUESTS_PER_ARTICLE

OK_CYCLES = "select id, label, batch_id, resumes from runs where kind = 'cycle' and status = 'ok' order by started_at"


# -- the lock -------------------------------------------------------------------------------

def test_second_lock_is_refused_with_the_holders_pid_and_host(tmp_path):
    db = tmp_path / "fw.db"
    first = InstanceLock(db)
    first.acquire()
    try:
        with pytest.raises(LockHeld) as refused:
            InstanceLock(db).acquire()
        message = str(refused.value)
        assert f"pid {os.getpid()}" in message and socket.gethostname() in message
        assert str(db) in message and "kill -TERM" in message
        assert refused.value.holder["pid"] == os.getpid()
    finally:
        first.release()
    with InstanceLock(db) as again:  # released: the next one gets it
        assert again.held
    assert lock_path(db).exists()


HOLD = """
import sys, time
from monitor.lock import InstanceLock
InstanceLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def test_lock_of_a_killed_process_is_free_again(tmp_path):
    db = tmp_path / "fw.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockHeld, match=f"pid {holder.pid} "):
            InstanceLock(db).acquire()
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        with InstanceLock(db) as lock:  # the kernel dropped the flock with the process
            assert lock.held
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait(10)


def _unit(name: str) -> dict[str, list[str]]:
    keys: dict[str, list[str]] = {}
    for line in (REPO / "deploy" / name).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";")):
            key, value = line.split("=", 1)
            keys.setdefault(key.strip(), []).append(value.strip())
    return keys


def test_systemd_units_match_the_monitors_exit_codes_and_stop_grace():
    from monitor.config import ScheduleConfig
    from monitor.service import EXIT_LOCKED

    monitor = _unit("framewatch-monitor.service")
    assert monitor["ExecStart"][0].split()[1:3] == ["monitor", "--config"]
    assert monitor["RestartPreventExitStatus"] == [str(EXIT_LOCKED)]
    assert int(monitor["TimeoutStopSec"][0]) > ScheduleConfig().stop_grace_s
    assert monitor["KillSignal"] == ["SIGTERM"] and monitor["Restart"] == ["on-failure"]
    dashboard = _unit("framewatch-dashboard.service")
    assert dashboard["ExecStart"][0].split()[1] == "dashboard"
    assert monitor["ReadWritePaths"] == dashboard["ReadWritePaths"]


# -- the monitor process ---------------------------------------------------------------------

def _check_store(db_path) -> list[dict]:
    """Every cycle ok exactly once, no duplicate responses, run counts equal to the stored rows."""
    from monitor.runs import batch_counts
    from store.db import open_readonly

    db = open_readonly(db_path)
    try:
        assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
        cycles = list(db.query("select * from runs where kind = 'cycle' order by started_at"))
        assert cycles and all(r["status"] == "ok" for r in cycles), [(r["label"], r["status"], r["error"]) for r in cycles]
        labels = [r["label"] for r in cycles]
        assert len(labels) == len(set(labels))
        assert not list(db.query("select batch_id from runs where kind = 'cycle' group by batch_id having count(*) > 1"))
        assert not list(db.query(
            "select prompt_id, deployment, sample_index from responses group by 1, 2, 3 having count(*) > 1"))
        assert not list(db.query(
            "select r.id from responses r join runs u on u.batch_id = r.batch_id and u.kind = 'cycle' where r.run_id != u.id"))
        for run in cycles:
            counts = json.loads(run["counts_json"])
            assert counts == batch_counts(db, run["batch_id"]), run["label"]
            # complete: every sampled article got its whole grid, nothing more
            assert counts["responses"] == counts["articles_sampled"] * REQUESTS_PER_ARTICLE, run["label"]
            assert counts["errors"] == 0
        return cycles
    finally:
        db.conn.close()


def _finish_open_cycles(cfg_path, log) -> None:
    """`monitor --once` resumes whatever a stop left open (and runs one more cycle)."""
    once = start_monitor(cfg_path, "--once", log=log)
    assert once.wait(120) == 0, log.read_text()[-3000:]


@pytest.mark.slow
def test_sigkill_mid_cycle_then_restart_completes_every_cycle_exactly_once(tmp_path):
    cfg_path = write_config(tmp_path)
    db, log = tmp_path / "fw.db", tmp_path / "monitor.log"
    with GrowingFeed(tmp_path / "feed.xml"):
        proc = start_monitor(cfg_path, log=log)
        try:
            wait_for(lambda: len(read(db, OK_CYCLES)) >= 2, 90, "two finished cycles", proc, log)
            victim = wait_for(lambda: read(
                db, "select id, label from runs where kind = 'cycle' and status = 'running' and stage in ('generate', 'score')"
                    " and exists (select 1 from responses r where r.run_id = runs.id)"), 60, "a cycle mid-way", proc, log)[0]
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        finally:
            stop(proc, signal.SIGKILL)
        assert read(db, "select status from runs where id = ?", [victim["id"]])[0]["status"] == "running"
        ok_before = len(read(db, OK_CYCLES))

        proc = start_monitor(cfg_path, log=log)
        try:
            wait_for(lambda: read(db, "select 1 from runs where id = ? and status = 'ok'", [victim["id"]]), 60,
                     "the killed cycle to be resumed", proc, log)
            wait_for(lambda: len(read(db, OK_CYCLES)) >= ok_before + 3, 90, "new cycles after the restart", proc, log)
        finally:
            assert stop(proc) == 0
    _finish_open_cycles(cfg_path, log)

    cycles = _check_store(db)
    resumed = next(r for r in cycles if r["id"] == victim["id"])
    assert resumed["resumes"] == 1 and resumed["label"] == victim["label"]
    assert sum(1 for r in cycles if json.loads(r["counts_json"])["responses"] > 0) >= 4
    assert "resuming cycle" in log.read_text()


@pytest.mark.slow
def test_a_second_monitor_refuses_and_the_first_carries_on(tmp_path):
    cfg_path = write_config(tmp_path)
    db, log = tmp_path / "fw.db", tmp_path / "first.log"
    with GrowingFeed(tmp_path / "feed.xml"):
        first = start_monitor(cfg_path, log=log)
        try:
            wait_for(lambda: read(db, OK_CYCLES), 90, "a finished cycle", first, log)
            second = start_monitor(cfg_path)
            out, err = second.communicate(timeout=60)
            text = (out + err).decode()
            assert second.returncode == 3, text
            assert f"pid {first.pid}" in text and "already writes" in text and str(db) in text
            status = read(db, "select pid, status from monitor_status")
            assert status == [{"pid": first.pid, "status": "running"}]
            done = len(read(db, OK_CYCLES))
            wait_for(lambda: len(read(db, OK_CYCLES)) >= done + 2, 60, "the first monitor's next cycles", first, log)
            assert first.poll() is None
        finally:
            assert stop(first) == 0
    assert read(db, "select status from monitor_status")[0]["status"] == "stopped"
    with InstanceLock(db) as lock:  # released on exit
        assert lock.held
    assert "Traceback" not in log.read_text()


READER = """
import json, sys, time
from store.db import open_readonly
path, seconds = sys.argv[1], float(sys.argv[2])
queries, errors = 0, []
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        db = open_readonly(path)
        list(db.query("select id, status, stage, progress_done, progress_total, heartbeat_at, counts_json from runs"))
        list(db.query("select deployment, count(*) as n, sum(status = 'ok') as ok from responses group by deployment"))
        list(db.query("select c.deployment, c.dimension, avg(c.scfs) from cells c join batches b on b.id = c.batch_id"
                      " group by 1, 2"))
        list(db.query("select * from ledger"))
        list(db.query("select * from monitor_status"))
        db.conn.close()
        queries += 5
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
    time.sleep(0.01)
print(json.dumps({"queries": queries, "errors": errors[:5], "n_errors": len(errors)}))
"""


@pytest.mark.slow
def test_dashboard_readers_never_see_database_is_locked_while_the_monitor_writes(tmp_path):
    cfg_path = write_config(tmp_path)
    db, log = tmp_path / "fw.db", tmp_path / "monitor.log"
    with GrowingFeed(tmp_path / "feed.xml"):
        proc = start_monitor(cfg_path, log=log)
        try:
            wait_for(lambda: read(db, "select 1 from monitor_status"), 60, "the monitor to start", proc, log)
            before = len(read(db, OK_CYCLES))
            readers = [subprocess.Popen([sys.executable, "-c", READER, str(db), "20"], cwd=REPO, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True) for _ in range(3)]
            results = []
            for r in readers:
                out, err = r.communicate(timeout=90)
                assert r.returncode == 0, err
                results.append(json.loads(out))
            during = len(read(db, OK_CYCLES)) - before
        finally:
            assert stop(proc) == 0
    assert all(r["n_errors"] == 0 for r in results), results
    assert all(r["queries"] > 50 for r in results), results
    assert during >= 3, f"only {during} cycles finished while the readers read"
    text = log.read_text()
    assert "database is locked" not in text and "Traceback" not in text


@pytest.mark.slow
def test_sigterm_with_requests_in_flight_stops_within_the_grace_and_the_restart_repeats_nothing_paid(tmp_path):
    from monitor.testing.fault_server import FaultServer

    grace = 3
    with FaultServer(latency_s=0.01) as server:
        cfg_path = write_config(tmp_path, grace=grace, minutes=60)
        text = cfg_path.read_text().replace(
            'provider = "scripted"\nmodel = "scripted"\nextra = { effects = { religion = 0.8 } }',
            f'provider = "openai"\nmodel = "m-1"\nprompt_style = "chat"\nbase_url = "{server.url}"\n'
            f'concurrency = 2\nmax_retries = 0\ntimeout_s = 120')
        cfg_path.write_text(text)
        db, log = tmp_path / "fw.db", tmp_path / "monitor.log"
        server.hold_after(10)  # after 10 answers, every request hangs: a stop must not wait for them
        proc = start_monitor(cfg_path, log=log)
        try:
            wait_for(lambda: server.held >= 2, 60, "requests held in flight", proc, log)
            stopped_at = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            rc = proc.wait(grace + 15)
            took = time.monotonic() - stopped_at
        finally:
            stop(proc, signal.SIGKILL)
        assert rc == 0, log.read_text()[-3000:]
        assert took < grace + 8, f"stop took {took:.1f} s with stop_grace_s = {grace}"
        run = read(db, "select * from runs where kind = 'cycle'")
        assert len(run) == 1 and run[0]["status"] == "abandoned", run
        assert "stop_grace_s" in run[0]["error"]
        assert read(db, "select status from monitor_status")[0]["status"] == "stopped"
        stored = read(db, "select count(*) as n from responses where deployment = 'scripted-b'")[0]["n"]
        # every answered request is stored (10, or one or two more that were admitted concurrently);
        # the held ones are not, and nothing is stored half-way
        assert stored == sum(server.stats.paid.values()) >= 10

        server.drop_held()
        _finish_open_cycles(cfg_path, log)
    cycles = _check_store(db)
    assert cycles[0]["id"] == run[0]["id"]
    # the resumed cycle asked again only for what had no stored answer: no request was paid twice
    assert max(server.stats.paid.values()) == 1


@pytest.mark.slow
def test_once_with_the_real_minilm(tmp_path):
    cfg_path = write_config(tmp_path, articles=1)
    log = tmp_path / "monitor.log"
    proc = start_monitor(cfg_path, "--once", embedder="minilm", log=log)
    assert proc.wait(180) == 0, log.read_text()[-3000:]
    cycles = _check_store(tmp_path / "fw.db")
    assert len(cycles) == 1 and cycles[0]["scorer_version"].startswith("minilm-l6-v2")
    assert json.loads(cycles[0]["counts_json"])["cells"] == 4  # 1 article x 2 dimensions x 2 deployments
