"""The generate stage: every key ends stored exactly once (answer or recorded error), cache and
resume (also after SIGKILL), concurrency, circuit breaker, budget, stop, no leaked key, the
estimate; and (slow) the real local Gemma and a real llama.cpp server generating a bundle."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from monitor import config
from monitor.cli import main
from monitor.generate import estimate, generate_batch
from monitor.ledger import cycle_ledger
from monitor.testing.fault_server import KINDS, REFUSAL_TEXT, FaultServer, always, first_attempt_faults
from store import open_writer

REPO = Path(__file__).resolve().parents[1]
KEYS_PER_ARTICLE = 7 + 7 + 3  # religion identities + placebos + identity-free repeats, one family


def write_config(tmp_path: Path, deployments: list[dict], *, grid: str = "", budget: str = "") -> config.Config:
    tables = []
    for dep in deployments:
        lines = "\n".join(f"{k} = {json.dumps(v) if not isinstance(v, str) or not v.startswith('{') else v}"
                          for k, v in dep.items())
        tables.append(f"[[deployments]]\n{lines}")
    text = textwrap.dedent(f"""
        [store]
        path = "fw.db"

        {chr(10).join(tables)}

        [grid]
        families = ["impact"]
        dimensions = ["religion"]
        {grid if "repeats" in grid else "repeats = 3"}
        {grid if "repeats" not in grid else ""}

        [generation]
        max_tokens = 16

        [budget]
        {budget}
        """)
    path = tmp_path / "framewatch.toml"
    path.write_text(text, encoding="utf-8")
    return config.load(path)


def hosted(url: str, name: str = "hosted", **kw) -> dict:
    dep = {"name": name, "provider": "openai", "model": "fake-1", "base_url": url, "prompt_style": "chat",
           "concurrency": 4, "timeout_s": 1.0, "max_retries": 3, "price_in_per_1k": 0.5, "price_out_per_1k": 1.5,
           "extra": "{ backoff_base_s = 0.01, backoff_max_s = 0.05 }"}
    dep.update(kw)
    return dep


def seed_batch(db, batch_id: str = "b1", articles: int = 1) -> None:
    with db.conn:
        db["batches"].insert({"id": batch_id, "label": batch_id, "status": "closed"}, pk="id", ignore=True)
        for i in range(articles):
            db["articles"].insert({"id": f"{batch_id}-a{i}", "batch_id": batch_id, "title": f"Fuel prices rise {i}",
                                   "summary": "Petrol went up 8% this month; the government blames import costs.",
                                   "sampled": 1}, pk="id", ignore=True)
        db["articles"].insert({"id": f"{batch_id}-unsampled", "batch_id": batch_id, "title": "Not sampled",
                               "summary": "Ignored.", "sampled": 0}, pk="id", ignore=True)


def responses(db) -> list[dict]:
    return list(db.query("select * from responses order by id"))


def test_every_key_stored_exactly_once_under_every_fault(tmp_path):
    faults = [k for k in KINDS if k not in ("hang", "401")]
    with FaultServer(first_attempt_faults(faults, retry_after=0.05, delay_s=1.5)) as server:
        cfg = write_config(tmp_path, [hosted(server.url)])
        db = open_writer(cfg.db_path)
        seed_batch(db, articles=2)
        seen = []
        report = generate_batch(db, cfg, "b1", "run-1", progress=lambda done, total: seen.append((done, total)))
    rows = responses(db)
    assert len(rows) == len({r["id"] for r in rows}) == 2 * KEYS_PER_ARTICLE == report.planned
    assert report.requested == len(rows) and report.pending == 0 and report.errors == 0
    by_status = {s: sum(r["status"] == s for r in rows) for s in ("ok", "empty", "refusal", "error")}
    assert by_status["empty"] >= 1 and by_status["refusal"] >= 1 and by_status["ok"] >= 1
    assert by_status["empty"] == report.empty and by_status["refusal"] == report.refusals
    assert all(r["text"] == REFUSAL_TEXT for r in rows if r["status"] == "refusal")
    # every fault kind was injected and healed by a retry
    assert {k for k in faults if server.stats.by_kind[k]} == set(faults)
    retried = [r for r in rows if r["attempts"] > 1]
    assert retried and report.attempts == sum(r["attempts"] for r in rows)
    for r in rows:
        assert r["run_id"] == "run-1" and r["batch_id"] == "b1" and r["frames_version"] and r["refusal_version"]
        assert r["model_reported"] == "fault-model-v1@fp_fault"
        sent = json.loads(r["request_json"])
        assert sent["endpoint"].endswith("/chat/completions") and sent["body"]["seed"] == r["seed"]
        assert r["cost"] == pytest.approx(r["tokens_in"] / 1000 * 0.5 + r["tokens_out"] / 1000 * 1.5)
    assert seen[0] == (0, report.planned) and seen[-1] == (report.planned, report.planned)
    prompts = list(db.query("select * from prompts"))
    assert len(prompts) == 2 * (7 + 7 + 1) and all(p["taxonomy_version"] and p["families_version"] for p in prompts)
    assert not any(r["article_id"].endswith("unsampled") for r in prompts)


def test_mixed_run_stores_an_answer_or_a_recorded_error_for_every_key(tmp_path):
    doomed = lambda seen: int(seen.body_hash[:8], 16) % 4 == 0  # noqa: E731  about a quarter never succeed
    healed = first_attempt_faults(["429", "500", "drop", "ok"], retry_after=0.02)
    with FaultServer(lambda seen: "500" if doomed(seen) else healed(seen)) as server:
        cfg = write_config(tmp_path, [hosted(server.url, max_retries=2, extra="{ backoff_base_s = 0.01, breaker_failures = 100 }")])
        db = open_writer(cfg.db_path)
        seed_batch(db, articles=2)
        report = generate_batch(db, cfg, "b1", "run-1")
    rows = responses(db)
    failed = [r for r in rows if r["status"] == "error"]
    assert len(rows) == len({r["id"] for r in rows}) == report.planned == 2 * KEYS_PER_ARTICLE
    assert failed and len(failed) == report.errors == sum(1 for h in server.stats.attempts if int(h[:8], 16) % 4 == 0)
    assert all(r["attempts"] == 3 and "HTTP 500" in r["error"] and r["text"] is None for r in failed)
    assert all(r["error"] is None and r["text"] for r in rows if r["status"] == "ok")
    assert report.pending == 0 and not report.breaker_tripped


def test_rerun_is_served_from_the_cache(tmp_path):
    with FaultServer() as server:
        cfg = write_config(tmp_path, [hosted(server.url), hosted(server.url, name="other", system_prompt="Be neutral.")])
        db = open_writer(cfg.db_path)
        seed_batch(db)
        first = generate_batch(db, cfg, "b1", "run-1")
        sent = server.stats.requests
        again = generate_batch(db, cfg, "b1", "run-1")
    assert first.requested == 2 * KEYS_PER_ARTICLE and sent == first.requested
    assert again.requested == 0 and again.cached == first.requested and server.stats.requests == sent
    assert len(responses(db)) == first.requested
    ledger = {row["deployment"]: row for row in cycle_ledger(db, "run-1")}
    assert ledger["hosted"]["requests"] == KEYS_PER_ARTICLE and ledger["other"]["cost"] > 0
    assert sum(row["cost"] for row in ledger.values()) == pytest.approx(first.cost)


def test_concurrency_is_bounded_per_deployment(tmp_path):
    with FaultServer(latency_s=0.15) as server:
        cfg = write_config(tmp_path, [hosted(server.url, concurrency=5)])
        db = open_writer(cfg.db_path)
        seed_batch(db)
        generate_batch(db, cfg, "b1", "run-1")
    assert server.stats.max_in_flight == 5


def test_persistent_failures_are_stored_as_errors_and_open_the_circuit(tmp_path):
    with FaultServer(always("500")) as server:
        cfg = write_config(tmp_path, [hosted(server.url, concurrency=1, max_retries=1,
                                             extra="{ backoff_base_s = 0.01, breaker_failures = 3 }")])
        db = open_writer(cfg.db_path)
        seed_batch(db)
        report = generate_batch(db, cfg, "b1", "run-1")
        rows = responses(db)
        assert len(rows) == report.errors == 3 and all(r["status"] == "error" and "HTTP 500" in r["error"] for r in rows)
        assert all(r["attempts"] == 2 and r["text"] is None and r["cost"] == 0 for r in rows)
        assert server.stats.requests == 6
        dep = report.deployments[0]
        assert dep.pending == KEYS_PER_ARTICLE - 3 and "3 consecutive failed requests" in dep.breaker_reason
        assert report.breaker_tripped and report.skipped["hosted"]["pending"] == KEYS_PER_ARTICLE - 3
        server.plan = always("ok")  # the provider recovers: the next cycle requests only what is missing
        resumed = generate_batch(db, cfg, "b1", "run-2")
    assert resumed.requested == KEYS_PER_ARTICLE - 3 and resumed.cached == 3 and not resumed.breaker_tripped
    assert len(responses(db)) == KEYS_PER_ARTICLE


def test_rejected_key_opens_the_circuit_at_once(tmp_path):
    with FaultServer(always("401")) as server:
        cfg = write_config(tmp_path, [hosted(server.url, concurrency=1), hosted(server.url, name="fine", concurrency=1,
                                                                                 model="other")])
        server.plan = lambda seen: "401" if seen.body["model"] == "fake-1" else "ok"
        db = open_writer(cfg.db_path)
        seed_batch(db)
        report = generate_batch(db, cfg, "b1", "run-1")
    bad, good = report.deployments
    assert bad.errors == 1 and bad.attempts == 1 and "non-retriable" in bad.breaker_reason and bad.pending == KEYS_PER_ARTICLE - 1
    assert good.ok == KEYS_PER_ARTICLE and good.breaker_reason is None  # one broken deployment does not stop the others


def test_budget_cap_on_requests_per_cycle(tmp_path):
    with FaultServer() as server:
        cfg = write_config(tmp_path, [hosted(server.url, concurrency=3)], budget="max_prompts_per_cycle = 5")
        db = open_writer(cfg.db_path)
        seed_batch(db)
        report = generate_batch(db, cfg, "b1", "run-1")
        assert report.requested == 5 and server.stats.requests == 5 and report.budget_stopped
        assert "max_prompts_per_cycle = 5" in report.budget_reason and report.deployments[0].budget_stopped
        assert generate_batch(db, cfg, "b1", "run-1").requested == 0  # same cycle resumed: the cap still holds
        assert generate_batch(db, cfg, "b1", "run-2").requested == 5  # next cycle, next five
    assert len(responses(db)) == 10


def test_budget_cap_on_cost_holds_at_high_concurrency(tmp_path):
    with FaultServer(latency_s=0.05) as server:
        cfg = write_config(tmp_path, [hosted(server.url, concurrency=8, price_in_per_1k=1.0, price_out_per_1k=10.0)],
                           budget="max_cost_per_cycle = 1.0")
        db = open_writer(cfg.db_path)
        seed_batch(db, articles=2)
        report = generate_batch(db, cfg, "b1", "run-1")
    spent = sum(r["cost"] for r in responses(db))
    assert 0 < report.requested < report.planned and report.budget_stopped
    assert "max_cost_per_cycle = 1" in report.budget_reason
    assert spent <= 1.0  # worst case of in-flight requests is reserved, so concurrency cannot overshoot
    assert spent == pytest.approx(report.cost)


def test_stop_finishes_in_flight_requests_and_issues_no_new_ones(tmp_path):
    with FaultServer(latency_s=0.1) as server:
        cfg = write_config(tmp_path, [hosted(server.url, concurrency=2)])
        db = open_writer(cfg.db_path)
        seed_batch(db)
        stop = threading.Event()
        report = generate_batch(db, cfg, "b1", "run-1", stop=stop,
                                progress=lambda done, total: stop.set() if done >= 3 else None)
        stored = len(responses(db))
        assert report.stopped and report.pending == KEYS_PER_ARTICLE - stored
        assert server.stats.requests == server.stats.answered == stored  # nothing sent was lost
        assert 3 <= stored <= 4
        rest = generate_batch(db, cfg, "b1", "run-1")
    assert rest.requested == KEYS_PER_ARTICLE - stored and len(responses(db)) == KEYS_PER_ARTICLE


def test_no_api_key_in_database_logs_errors_or_snapshots(tmp_path, monkeypatch, caplog):
    key = "sk-planted-" + "Zk3p" * 8
    monkeypatch.setenv("FW_PLANTED_KEY", key)
    caplog.set_level(logging.DEBUG)  # every logger, the openai and httpx2 ones included
    plan = first_attempt_faults(["500", "ok", "ok"])
    with FaultServer(plan, echo_key_in_errors=True) as server:
        cfg = write_config(tmp_path, [hosted(server.url, api_key_env="FW_PLANTED_KEY", max_retries=0),
                                      hosted(server.url, name="rejected", model="r", api_key_env="FW_PLANTED_KEY")])
        server.plan = lambda seen: "401" if seen.body["model"] == "r" else plan(seen)
        db = open_writer(cfg.db_path)
        seed_batch(db)
        report = generate_batch(db, cfg, "b1", "run-1")
        from monitor.snapshot import export_snapshot
        from store.writes import record_config

        record_config(db, cfg)
        snap = export_snapshot(db, cfg, tmp_path / "snapshot", with_text=True)
        db.conn.close()
    assert f"Bearer {key}" in server.stats.auth_headers  # it was really sent, and echoed back in error bodies
    import zipfile

    snapshot_files = [p for p in (tmp_path / "snapshot").rglob("*") if p.is_file()]
    assert len(snapshot_files) > 3
    for path in snapshot_files:
        assert key.encode() not in path.read_bytes(), path
    with zipfile.ZipFile(snap.zip_path) as archive:  # compressed: search the members, not the archive bytes
        for name in archive.namelist():
            assert key.encode() not in archive.read(name), name
    errors = [r for r in sqlite3.connect(cfg.db_path).execute("select error from responses where status = 'error'")]
    assert len(errors) >= 2 and any("[REDACTED]" in e[0] for e in errors)
    dump = "\n".join(sqlite3.connect(cfg.db_path).iterdump())
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("fw.db*"))
    assert "FW_PLANTED_KEY" in cfg.db_path.with_name("framewatch.toml").read_text()
    for haystack in (dump, raw.decode("latin-1"), caplog.text, "\n".join(report.lines()), repr(report)):
        assert key not in haystack
        assert key[:20] not in haystack


def test_sigkill_mid_cycle_then_rerun_pays_each_key_once(tmp_path):
    with FaultServer(latency_s=0.02) as server:
        cfg = write_config(tmp_path, [hosted(server.url, concurrency=3, timeout_s=30)])
        db = open_writer(cfg.db_path)
        seed_batch(db, articles=2)
        db.conn.close()
        total = 2 * KEYS_PER_ARTICLE
        server.hold_after(10)  # answer ten, then hold every later request open: the process is mid-cycle
        script = (f"from monitor import config; from store import open_writer; from monitor.generate import generate_batch;"
                  f"cfg = config.load({str(cfg.path)!r}); generate_batch(open_writer(cfg.db_path), cfg, 'b1', 'run-1')")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-c", script], env=env, cwd=tmp_path,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if server.held >= 1 and server.in_flight == server.held and _count(cfg.db_path) == server.stats.answered:
                    break
                assert proc.poll() is None, proc.stderr.read().decode(errors="replace")
                time.sleep(0.05)
            else:
                pytest.fail("the generating process never reached the held state")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        killed_at = _count(cfg.db_path)
        assert 10 <= killed_at < total
        server.drop_held()
        db = open_writer(cfg.db_path)
        report = generate_batch(db, cfg, "b1", "run-1")
    rows = responses(db)
    assert report.cached == killed_at and report.requested == total - killed_at
    assert len(rows) == len({r["id"] for r in rows}) == total and all(r["status"] == "ok" for r in rows)
    assert server.stats.answered == total
    assert sum(server.stats.paid.values()) == total and max(server.stats.paid.values()) == 1  # no key paid twice


def _count(path: Path) -> int:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
        return conn.execute("select count(*) from responses").fetchone()[0]


def test_estimate_matches_what_a_cycle_requests(tmp_path):
    with FaultServer() as server:
        cfg = write_config(tmp_path, [hosted(server.url), hosted(server.url, name="cheap", price_in_per_1k=0.0,
                                                                  price_out_per_1k=0.0)], grid="articles_per_batch = 2")
        db = open_writer(cfg.db_path)
        ahead = estimate(None, cfg)
        assert ahead.articles == 2 and [d.requests for d in ahead.deployments] == [2 * KEYS_PER_ARTICLE] * 2
        assert ahead.deployments[0].tokens_out_max == 2 * KEYS_PER_ARTICLE * 16
        assert ahead.deployments[0].cost_max > 0 and ahead.deployments[1].cost_max == 0
        seed_batch(db, articles=2)
        batch = estimate(db, cfg, batch_id="b1")
        assert batch.requests == 4 * KEYS_PER_ARTICLE
        report = generate_batch(db, cfg, "b1", "run-1", deployments=["hosted"])
        assert report.requested == 2 * KEYS_PER_ARTICLE and len(report.deployments) == 1
        after = estimate(db, cfg, batch_id="b1")
    hosted_est, cheap_est = after.deployments
    assert (hosted_est.requests, hosted_est.cached) == (0, 2 * KEYS_PER_ARTICLE)
    assert (cheap_est.requests, cheap_est.cached) == (2 * KEYS_PER_ARTICLE, 0)
    # the estimate's input tokens are within 25% of what the server counted for the same requests
    assert batch.deployments[0].tokens_in == pytest.approx(report.tokens_in, rel=0.25)
    assert cheap_est.tokens_out_expected == 2 * KEYS_PER_ARTICLE * 16  # no history for "cheap" yet


def test_estimate_cli(tmp_path):
    cfg = write_config(tmp_path, [hosted("http://127.0.0.1:9/v1")], budget="max_cost_per_cycle = 0.001")
    result = CliRunner().invoke(main, ["estimate", "--config", str(cfg.path), "--articles", "3"])
    assert result.exit_code == 0, result.output
    assert "3 article(s)" in result.output and "hosted" in result.output and str(3 * KEYS_PER_ARTICLE) in result.output
    assert "max_cost_per_cycle" in result.output
    missing = CliRunner().invoke(main, ["estimate", "--config", str(cfg.path), "--batch", "nope"])
    assert missing.exit_code != 0 and "no batch 'nope'" in missing.output


# -- real models --

@pytest.fixture(scope="module")
def llama_server():
    pytest.importorskip("llama_cpp.server")
    from monitor.testing.llama_server import llama_server as serve

    with serve() as url:
        yield url


@pytest.mark.slow
def test_real_local_gemma_generates_a_small_bundle(tmp_path):
    cfg = write_config(tmp_path, [{"name": "gemma", "provider": "local", "model": "gemma-3-270m-q4_k_m",
                                   "prompt_style": "completion"}],
                       grid='placebo = false\nidentity_free = true\nrepeats = 2')
    db = open_writer(cfg.db_path)
    seed_batch(db)
    report = generate_batch(db, cfg, "b1", "run-1")
    rows = responses(db)
    assert len(rows) == report.requested == 7 + 2 and report.errors == 0
    assert sum(r["status"] == "ok" for r in rows) >= 5
    assert all(r["model_reported"].startswith("llama.cpp:gemma-3-270m") and 0 < r["tokens_out"] <= 16 for r in rows)
    sent = json.loads(rows[0]["request_json"])
    assert sent["endpoint"] == "llama.cpp:in-process" and sent["prompt"].startswith("News: Fuel prices rise 0.")
    assert generate_batch(db, cfg, "b1", "run-1").requested == 0


@pytest.mark.slow
def test_real_llama_cpp_server_through_the_generate_stage(tmp_path, llama_server):
    cfg = write_config(tmp_path, [hosted(llama_server, model="gemma-3-270m", prompt_style="completion", concurrency=2,
                                         timeout_s=60, price_in_per_1k=0.0, price_out_per_1k=0.0)],
                       grid='placebo = false\nrepeats = 2')
    db = open_writer(cfg.db_path)
    seed_batch(db)
    report = generate_batch(db, cfg, "b1", "run-1")
    rows = responses(db)
    assert len(rows) == report.planned == 7 + 2 and report.errors == 0 and report.ok >= 5
    assert all(r["model_reported"] == "gemma-3-270m" and r["tokens_in"] > 10 for r in rows)

