"""Alerts: config validation, the pure rules, and evaluate_alerts against a real webhook server and a real
SMTP server (aiosmtpd) on 127.0.0.1, over a store built by the real pipeline with a planted effect."""

from __future__ import annotations

import email
import email.policy
import json
import socket
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from monitor import config
from monitor.alerts import evaluate_alerts
from monitor.alerts_config import ConfigError, parse_alerts
from monitor.config import FeedConfig
from monitor.ids import iso, parse_iso, utcnow
from monitor.testing.processes import free_port
from scripted_config import scripted_toml
from store import open_writer

HOTSPOT_RULE = """
[[alerts.rules]]
name = "religion hotspot"
kind = "threshold"
metric = "scfs"
above = 0.1
dimension = "religion"
"""


# -- servers on 127.0.0.1 ---------------------------------------------------------------------

class Webhook:
    """Records JSON POSTs; answers with the next status in ``statuses`` (the last one repeats)."""

    def __init__(self, statuses=(200,)) -> None:
        self.bodies: list[dict] = []
        self.statuses = list(statuses)
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                hook.bodies.append(json.loads(self.rfile.read(length)))
                status = hook.statuses.pop(0) if len(hook.statuses) > 1 else hook.statuses[0]
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/services/T000/B000/SECRETPATH"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def webhook():
    hook = Webhook()
    yield hook
    hook.close()


@pytest.fixture
def smtp():
    from aiosmtpd.controller import Controller

    class Inbox:
        def __init__(self):
            self.messages = []

        async def handle_DATA(self, server, session, envelope):
            self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content.decode("utf-8")))
            return "250 OK"

    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    inbox.port = controller.port
    yield inbox
    controller.stop()


def make_cfg(tmp_path: Path, alerts: str):
    path = tmp_path / "framewatch.toml"
    if "dashboard_url" not in alerts:
        alerts = 'dashboard_url = "http://dash.example:8501"\n' + alerts
    path.write_text(scripted_toml(tail="[alerts]\n" + alerts), encoding="utf-8")
    return config.load(path)


def run_batch(db, cfg, i: int):
    from monitor.pipeline import run_cycle
    from monitor.scoring.embed import FakeEmbedder

    return run_cycle(db, cfg, label=f"sample-{i}", feeds=[FeedConfig("sample", f"sample:{i}")], embedder=FakeEmbedder())


# -- config ------------------------------------------------------------------------------------

def parse(tmp_path, alerts: str):
    return parse_alerts(make_cfg(tmp_path, alerts))


def test_a_full_alerts_section_parses(tmp_path):
    acfg = parse(tmp_path, """
repeat_minutes = 0
max_per_hour = 5
[alerts.webhook]
url_env = "FW_TEST_HOOK"
retries = 3
[alerts.email]
host = "127.0.0.1"
port = 2525
sender = "fw@example.org"
to = "team@example.org"
[[alerts.rules]]
kind = "threshold"
above = 0.2
deployment = ["scripted-b"]
family = "*"
[[alerts.rules]]
name = "drift"
kind = "change"
metric = "sent_range_corrected"
delta = 0.1
direction = "any"
[[alerts.rules]]
kind = "stability"
max_cv = 0.5
[[alerts.rules]]
kind = "feed_failing"
minutes = 120
feed = "sample"
[[alerts.rules]]
kind = "failed_cycle"
channels = ["email"]
[[alerts.rules]]
kind = "budget"
fraction = 0.8
""")
    assert [r.kind for r in acfg.rules] == ["threshold", "change", "stability", "feed_failing", "failed_cycle", "budget"]
    assert acfg.rules[0].name == "threshold-0" and acfg.rules[0].deployments == ("scripted-b",)
    assert acfg.rules[0].families == ()  # "*" means all
    assert acfg.email.to == ("team@example.org",) and acfg.webhook.retries == 3
    assert acfg.rules[4].channels == ("email",)


@pytest.mark.parametrize(("alerts", "expected"), [
    ("trheshold = 1", "unknown key alerts.trheshold"),
    ("[[alerts.rules]]\nkind = \"threshold\"", "alerts.rules[0].above is required"),
    ("[[alerts.rules]]\nkind = \"treshold\"\nabove = 1", "use one of"),
    ("[[alerts.rules]]\nkind = \"threshold\"\nabove = 1\nmetric = \"scsf\"", "alerts.rules[0].metric = 'scsf'"),
    ("[[alerts.rules]]\nkind = \"threshold\"\nabove = 1\ndeployment = \"nope\"", "not a configured deployment"),
    ("[[alerts.rules]]\nkind = \"threshold\"\nabove = 1\nabvoe = 2", "did you mean alerts.rules[0].above?"),
    ("[[alerts.rules]]\nkind = \"change\"\ndelta = -1", "delta must be > 0"),
    ("[[alerts.rules]]\nkind = \"stability\"", "needs min_tau"),
    ("[[alerts.rules]]\nkind = \"feed_failing\"\nminutes = 5\nfeed = \"bbc\"", "not a configured feed"),
    ("[[alerts.rules]]\nkind = \"budget\"\nfraction = 2", "fraction = 2.0 must lie in (0, 1]"),
    ("[alerts.webhook]\nurl = \"http://x\"\nurl_env = \"Y\"", "exactly one of url"),
    ("[alerts.webhook]\nurl = \"ftp://x\"", "must start with http"),
    ("[alerts.webhook]\nurl = \"http://x\"\nretries = 50", "retries = 50 must lie between 0 and 10"),
    ("[alerts.email]\nhost = \"h\"\nsender = \"s\"", "alerts.email.to is required"),
    ("[alerts.email]\nhost = \"h\"\nsender = \"s\"\nto = \"t\"\nstarttls = true\nssl = true", "not both"),
    ("max_per_hour = 0", "alerts.max_per_hour must be >= 1"),
    ("max_per_hour = \"ten\"", "alerts.max_per_hour = 'ten' has the wrong type"),
    ("dashboard_url = \"localhost:8501\"", "must start with http"),
])
def test_config_errors_name_the_key_and_the_fix(tmp_path, alerts, expected):
    with pytest.raises(ConfigError) as err:
        parse(tmp_path, alerts)
    assert expected in str(err.value)
    assert "framewatch.toml" in str(err.value)


def test_two_rules_with_one_name_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="distinct name"):
        parse(tmp_path, "[[alerts.rules]]\nname = \"x\"\nkind = \"failed_cycle\"\n[[alerts.rules]]\nname = \"x\"\n"
                        "kind = \"budget\"")


# -- the planted hotspot, notified once ---------------------------------------------------------

def test_a_planted_hotspot_alerts_once_not_every_cycle(tmp_path, webhook, smtp):
    cfg = make_cfg(tmp_path, f"""
[alerts.webhook]
url = "{webhook.url}"
[alerts.email]
host = "127.0.0.1"
port = {smtp.port}
sender = "framewatch@example.org"
to = ["auditors@example.org"]
{HOTSPOT_RULE}""")
    db = open_writer(cfg.db_path)
    reports = []
    for i in (1, 2, 3):
        run_batch(db, cfg, i)
        reports.append(evaluate_alerts(db, cfg))

    # The planted effect (religion on scripted-b) holds in every batch; it is notified once, on both channels.
    assert [len(r.fired) for r in reports] == [1, 0, 0]
    assert [r.quiet for r in reports] == [0, 1, 1]
    assert len(webhook.bodies) == 1 and len(smtp.messages) == 1
    body = webhook.bodies[0]
    assert "religion" in body["text"] and "scripted-b" in body["text"]  # Slack shows `text`
    alert = body["alert"]
    assert alert["deployment"] == "scripted-b" and alert["dimension"] == "religion" and alert["family"] == "impact"
    assert alert["data"]["value"] > 0.1 and alert["data"]["above"] == 0.1 and alert["data"]["cells"] >= 1
    assert alert["link"].startswith("http://dash.example:8501/hotspots?")
    assert "dep=scripted-b" in alert["link"] and "dim=religion" in alert["link"] and "fam=impact" in alert["link"]
    sender, rcpts, raw = smtp.messages[0]
    assert sender == "framewatch@example.org" and rcpts == ["auditors@example.org"]
    message = email.message_from_string(raw, policy=email.policy.default)
    assert "religion" in message["Subject"] and "scripted-b" in message["Subject"]
    assert alert["link"] in message.get_content() and '"value":' in message.get_content()

    stored = list(db.query("select * from alerts"))
    assert len(stored) == 1 and stored[0]["status"] == "sent"
    assert json.loads(stored[0]["data_json"])["value"] == alert["data"]["value"]
    deliveries = {d["channel"]: d for d in db.query("select * from alert_deliveries")}
    assert deliveries["webhook"]["status"] == "ok" and deliveries["email"]["status"] == "ok"
    assert "SECRETPATH" not in deliveries["webhook"]["target"]  # a Slack hook's path is its secret
    state = db["alert_state"].get(stored[0]["condition_key"])
    assert state["active"] == 1 and state["times_seen"] == 3


def test_a_condition_is_reminded_after_repeat_minutes_and_realerts_after_clearing(tmp_path, webhook):
    cfg = make_cfg(tmp_path, f"repeat_minutes = 60\ncooldown_minutes = 30\n[alerts.webhook]\nurl = \"{webhook.url}\"\n"
                             + HOTSPOT_RULE)
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)
    t0 = utcnow()
    assert len(evaluate_alerts(db, cfg, now=t0).fired) == 1
    assert len(evaluate_alerts(db, cfg, now=t0 + timedelta(minutes=30)).fired) == 0
    assert len(evaluate_alerts(db, cfg, now=t0 + timedelta(minutes=61)).fired) == 1  # reminder
    # The condition clears (its cells are gone), then comes back: notified again once the cooldown has passed.
    saved = list(db.query("select * from cells"))
    with db.conn:
        db.execute("delete from cells")
    report = evaluate_alerts(db, cfg, now=t0 + timedelta(minutes=62))
    assert report.cleared == 1 and not report.fired
    with db.conn:
        db["cells"].insert_all(saved, pk="id")
    assert len(evaluate_alerts(db, cfg, now=t0 + timedelta(minutes=70)).fired) == 0  # within cooldown: flapping
    assert len(evaluate_alerts(db, cfg, now=t0 + timedelta(minutes=200)).fired) == 1
    assert len(webhook.bodies) == 3


def test_rate_limit_stores_the_excess_without_sending(tmp_path, webhook):
    cfg = make_cfg(tmp_path, f"""max_per_hour = 2
[alerts.webhook]
url = "{webhook.url}"
[[alerts.rules]]
name = "everything"
kind = "threshold"
metric = "n"
above = -1
""")
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 1)  # 2 deployments x 2 dimensions x 1 family = 4 groups, all above -1
    report = evaluate_alerts(db, cfg)
    assert len(report.fired) == 4 and report.rate_limited == 2
    assert len(webhook.bodies) == 2
    statuses = sorted(r["status"] for r in db.query("select status from alerts"))
    assert statuses == ["rate_limited", "rate_limited", "sent", "sent"]
    # An hour later the limit has room again, but these conditions are already notified (stored): quiet.
    later = evaluate_alerts(db, cfg, now=utcnow() + timedelta(hours=2))
    assert not later.fired and later.quiet == 4


# -- delivery failures are recorded and never stop the caller -------------------------------------

def test_an_unreachable_webhook_is_retried_recorded_and_does_not_raise(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there
    cfg = make_cfg(tmp_path, f"[alerts.webhook]\nurl = \"{dead}\"\nretries = 2\nbackoff_s = 0.05\ntimeout_s = 1\n"
                             + HOTSPOT_RULE)
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)
    started = time.monotonic()
    report = evaluate_alerts(db, cfg)
    assert time.monotonic() - started < 10
    assert len(report.fired) == 1 and report.fired[0].status == "failed"
    delivery = next(db.query("select * from alert_deliveries"))
    assert delivery["status"] == "failed" and delivery["attempts"] == 3  # 1 + retries
    assert "ConnectError" in delivery["error"]
    assert next(db.query("select status from alerts"))["status"] == "failed"
    # The monitor goes on: the next cycle runs and the next evaluation does not re-send the stored alert.
    assert run_batch(db, cfg, 3).status == "ok"
    assert evaluate_alerts(db, cfg).quiet == 1


def test_server_errors_are_retried_until_success(tmp_path):
    hook = Webhook(statuses=(503, 500, 200))
    try:
        cfg = make_cfg(tmp_path, f"[alerts.webhook]\nurl = \"{hook.url}\"\nretries = 3\nbackoff_s = 0\n" + HOTSPOT_RULE)
        db = open_writer(cfg.db_path)
        run_batch(db, cfg, 2)
        report = evaluate_alerts(db, cfg)
    finally:
        hook.close()
    assert report.fired[0].status == "sent"
    assert len(hook.bodies) == 3
    assert next(db.query("select attempts from alert_deliveries"))["attempts"] == 3


def test_a_client_error_is_not_retried(tmp_path):
    hook = Webhook(statuses=(404,))
    try:
        cfg = make_cfg(tmp_path, f"[alerts.webhook]\nurl = \"{hook.url}\"\nretries = 3\nbackoff_s = 0\n" + HOTSPOT_RULE)
        db = open_writer(cfg.db_path)
        run_batch(db, cfg, 2)
        report = evaluate_alerts(db, cfg)
    finally:
        hook.close()
    assert report.fired[0].status == "failed" and len(hook.bodies) == 1


def test_a_webhook_url_from_the_environment(tmp_path, webhook, monkeypatch):
    cfg = make_cfg(tmp_path, "[alerts.webhook]\nurl_env = \"FW_TEST_HOOK_URL\"\n" + HOTSPOT_RULE)
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)
    monkeypatch.delenv("FW_TEST_HOOK_URL", raising=False)
    missing = evaluate_alerts(db, cfg)
    assert missing.fired[0].status == "failed"
    assert "FW_TEST_HOOK_URL is not set" in next(db.query("select error from alert_deliveries"))["error"]
    monkeypatch.setenv("FW_TEST_HOOK_URL", webhook.url)
    with db.conn:
        db.execute("delete from alert_state")
    assert evaluate_alerts(db, cfg).fired[0].status == "sent" and len(webhook.bodies) == 1


def test_a_broken_rule_is_reported_and_the_others_still_run(tmp_path, webhook, monkeypatch):
    from monitor import alerts_metrics

    cfg = make_cfg(tmp_path, f"[alerts.webhook]\nurl = \"{webhook.url}\"\n" + HOTSPOT_RULE
                   + "[[alerts.rules]]\nkind = \"failed_cycle\"\n")
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)

    def boom(*args, **kwargs):
        raise RuntimeError("metric table unavailable")

    monkeypatch.setattr(alerts_metrics, "groups", boom)
    with db.conn:
        db["runs"].insert({"id": "r-failed", "kind": "cycle", "status": "failed", "started_at": iso(utcnow()),
                           "error": "score: RuntimeError: disk full"}, pk="id", alter=True)
    report = evaluate_alerts(db, cfg)
    assert report.errors == ("religion hotspot: RuntimeError: metric table unavailable",)
    assert [a.rule for a in report.fired] == ["failed_cycle-1"]


# -- operational rules over stored rows ----------------------------------------------------------

def test_feed_failing_for_longer_than_the_duration(tmp_path):
    cfg = make_cfg(tmp_path, "[[alerts.rules]]\nname = \"feeds\"\nkind = \"feed_failing\"\nminutes = 120\n")
    db = open_writer(cfg.db_path)
    now = utcnow()
    with db.conn:
        db["feeds"].insert({"id": "f1", "name": "sample", "url": "sample:1", "last_success_at": iso(now - timedelta(hours=5))},
                           pk="id")
        for hours, status in ((5, "ok"), (3, "failed"), (2, "failed"), (1, "failed")):
            db["feed_polls"].insert({"id": f"p{hours}", "feed_id": "f1", "polled_at": iso(now - timedelta(hours=hours)),
                                     "status": status, "error": "HTTP 503" if status == "failed" else None}, pk="id")
    # Ninety minutes after the first failure: not yet.
    assert not evaluate_alerts(db, cfg, now=now - timedelta(hours=1, minutes=30)).fired
    report = evaluate_alerts(db, cfg, now=now)
    assert len(report.fired) == 1
    alert = next(db.query("select * from alerts"))
    data = json.loads(alert["data_json"])
    assert data["failed_polls"] == 3 and data["last_error"] == "HTTP 503" and 179 < data["minutes"] < 181
    assert alert["feed"] == "sample" and alert["link"].endswith("/runs")
    # A success clears the condition.
    with db.conn:
        db["feed_polls"].insert({"id": "p0", "feed_id": "f1", "polled_at": iso(now), "status": "ok"}, pk="id")
    assert evaluate_alerts(db, cfg, now=now + timedelta(minutes=1)).cleared == 1


def test_failed_cycle_and_budget(tmp_path):
    cfg_text = scripted_toml(tail="[budget]\nmax_cost_per_cycle = 1.0\n\n[alerts]\n[[alerts.rules]]\nkind = \"failed_cycle\"\n"
                                  "[[alerts.rules]]\nkind = \"budget\"\nfraction = 0.9\n")
    path = tmp_path / "framewatch.toml"
    path.write_text(cfg_text, encoding="utf-8")
    cfg = config.load(path)
    db = open_writer(cfg.db_path)
    t = utcnow()
    with db.conn:
        db["runs"].insert({"id": "r1", "kind": "cycle", "status": "failed", "started_at": iso(t - timedelta(hours=2)),
                           "finished_at": iso(t - timedelta(hours=2)), "error": "ingest: OSError: disk full"}, pk="id",
                          alter=True)
    first = evaluate_alerts(db, cfg, now=t)
    assert [a.rule for a in first.fired] == ["failed_cycle-0"]
    assert "disk full" in next(db.query("select message from alerts"))["message"]
    with db.conn:  # the next cycle fails too: same condition (a streak), no new alert
        db["runs"].insert({"id": "r2", "kind": "cycle", "status": "failed", "started_at": iso(t - timedelta(hours=1)),
                           "error": "ingest: OSError: disk full"}, pk="id", alter=True)
    assert not evaluate_alerts(db, cfg, now=t).fired
    with db.conn:  # then a cycle stops on its budget
        db["runs"].insert({"id": "r3", "kind": "cycle", "status": "partial", "started_at": iso(t),
                           "skipped_json": json.dumps({"scripted-a": {"pending": 12, "reason":
                                                       "budget.max_cost_per_cycle = 1 reached (spent 0.98)"}})},
                          pk="id", alter=True)
        db["responses"].insert({"id": "x", "run_id": "r3", "cost": 0.95}, pk="id", alter=True)
    report = evaluate_alerts(db, cfg, now=t + timedelta(minutes=5))
    assert [a.rule for a in report.fired] == ["budget-1"] and report.cleared == 1  # the failure streak ended
    data = json.loads(next(db.query("select data_json from alerts where rule = 'budget-1'"))["data_json"])
    assert data["spent"] == pytest.approx(0.95) and data["pending"] == {"scripted-a": 12}


def test_change_and_stability_rules_on_pipeline_batches(tmp_path):
    cfg = make_cfg(tmp_path, """
[[alerts.rules]]
name = "jump"
kind = "change"
metric = "scfs"
delta = 0.1
direction = "down"
dimension = "religion"
[[alerts.rules]]
name = "unstable"
kind = "stability"
metric = "scfs"
max_cv = 0.2
""")
    db = open_writer(cfg.db_path)
    for i in (1, 2, 3):
        run_batch(db, cfg, i)
    report = evaluate_alerts(db, cfg)
    rows = {r["condition_key"]: json.loads(r["data_json"]) for r in db.query("select * from alerts")}
    # sample-2 -> sample-3: the planted religion effect of scripted-b weakens by more than 0.1; scripted-a moves less.
    jumps = {k: v for k, v in rows.items() if k.startswith("jump|")}
    assert list(jumps) == ["jump|scripted-b|religion|impact"]
    data = jumps["jump|scripted-b|religion|impact"]
    assert data["change"] < -0.1 and data["batch_label"] == "sample-3" and data["previous_batch_label"] == "sample-2"
    assert data["value"] - data["previous"] == pytest.approx(data["change"])
    unstable = {k: v for k, v in rows.items() if k.startswith("unstable|")}
    assert unstable and all(v["cv"] > 0.2 and v["batches"] == 3 for v in unstable.values())
    assert not report.errors


# -- the command ----------------------------------------------------------------------------------

def test_cli_alerts_evaluates_once_and_prints(tmp_path, webhook):
    from monitor.cli import main

    cfg = make_cfg(tmp_path, f"[alerts.webhook]\nurl = \"{webhook.url}\"\n" + HOTSPOT_RULE)
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)
    db.conn.close()
    runner = CliRunner()
    first = runner.invoke(main, ["alerts", "--config", str(cfg.path)])
    assert first.exit_code == 0, first.output
    assert "1 fired" in first.output and "[sent] religion hotspot" in first.output
    second = runner.invoke(main, ["alerts", "--config", str(cfg.path)])
    assert "0 fired, 1 still active" in second.output
    assert len(webhook.bodies) == 1


def test_evaluate_without_rules_does_nothing(tmp_path):
    cfg = make_cfg(tmp_path, "")
    db = open_writer(cfg.db_path)
    report = evaluate_alerts(db, cfg)
    assert report.fired == () and db["alerts"].count == 0
    assert parse_iso(report.evaluated_at) is not None


# -- the alerts page -------------------------------------------------------------------------------

def test_the_alerts_page_shows_stored_alerts_with_their_data_and_link(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    dead = f"http://127.0.0.1:{free_port()}/hook"
    cfg = make_cfg(tmp_path, f"[alerts.webhook]\nurl = \"{dead}\"\nretries = 0\ntimeout_s = 1\n" + HOTSPOT_RULE)
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)
    alert_id = evaluate_alerts(db, cfg).fired[0].id
    db.conn.close()
    monkeypatch.setenv("FRAMEWATCH_DB", str(cfg.db_path))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.user = {"is_logged_in": False}
    at.query_params["alert"] = alert_id
    at.run()
    at.switch_page("pages/alerts.py").run()
    assert not at.exception
    assert at.title[0].value == "Alerts"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Alerts"] == "1" and metrics["Delivery failed"] == "1" and metrics["Conditions active now"] == "1"
    shown = " ".join(m.value for m in at.markdown)
    assert "religion hotspot" in shown and "failed" in shown
    assert at.json[0].value and json.loads(at.json[0].value)["above"] == 0.1


def test_the_alerts_page_on_a_store_without_alert_tables(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    cfg = make_cfg(tmp_path, HOTSPOT_RULE)
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)
    with db.conn:
        for t in ("alert_deliveries", "alert_state", "alerts"):
            db[t].drop()
    db.conn.close()
    monkeypatch.setenv("FRAMEWATCH_DB", str(cfg.db_path))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.user = {"is_logged_in": False}
    at.run()
    at.switch_page("pages/alerts.py").run()
    assert not at.exception and "no alert tables yet" in at.info[0].value


def test_the_commented_example_in_framewatch_example_toml_parses(tmp_path):
    example = (Path(__file__).resolve().parents[1] / "framewatch.example.toml").read_text(encoding="utf-8")
    head, _, block = example.partition("# [alerts]\n")
    assert block, "the [alerts] example is missing from framewatch.example.toml"
    uncommented = "[alerts]\n" + "\n".join(line[2:] if line.startswith("# ") else line.lstrip("#")
                                            for line in block.splitlines())
    path = tmp_path / "framewatch.toml"
    path.write_text(head + uncommented, encoding="utf-8")
    acfg = parse_alerts(config.load(path))
    assert sorted(r.kind for r in acfg.rules) == sorted(
        ["threshold", "change", "stability", "feed_failing", "failed_cycle", "budget"])
    assert acfg.webhook.url_env == "FRAMEWATCH_WEBHOOK_URL" and acfg.email.password_env == "FRAMEWATCH_SMTP_PASSWORD"


def test_hotspots_only_follows_group_significance(tmp_path):
    cfg = make_cfg(tmp_path, "[[alerts.rules]]\nname = \"hot\"\nkind = \"threshold\"\nabove = -1\nhotspots_only = true\n")
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)  # the planted religion effect is significant in this batch
    report = evaluate_alerts(db, cfg)
    assert [a.condition_key for a in report.fired] == ["hot|scripted-b|religion|impact"]
    data = json.loads(next(db.query("select data_json from alerts"))["data_json"])
    assert data["hotspot"] is True and data["ci_low"] <= data["value"] <= data["ci_high"]
    run_batch(db, cfg, 3)  # weaker here: no group is significant, so the condition clears
    later = evaluate_alerts(db, cfg)
    assert not later.fired and later.cleared == 1


def test_a_webhook_that_never_answers_costs_a_bounded_time(tmp_path):
    """A server that accepts the connection and then says nothing: each attempt ends at timeout_s."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        cfg = make_cfg(tmp_path, f"[alerts.webhook]\nurl = \"{url}\"\nretries = 1\nbackoff_s = 0\ntimeout_s = 0.5\n"
                                 + HOTSPOT_RULE)
        db = open_writer(cfg.db_path)
        run_batch(db, cfg, 2)
        started = time.monotonic()
        report = evaluate_alerts(db, cfg)
        elapsed = time.monotonic() - started
    finally:
        silent.close()
    assert report.fired[0].status == "failed" and elapsed < 5
    delivery = next(db.query("select * from alert_deliveries"))
    assert delivery["attempts"] == 2 and "Timeout" in delivery["error"]


def test_an_unreachable_smtp_server_is_recorded(tmp_path):
    cfg = make_cfg(tmp_path, f"[alerts.email]\nhost = \"127.0.0.1\"\nport = {free_port()}\nsender = \"a@b.c\"\n"
                             "to = \"d@e.f\"\nretries = 1\nbackoff_s = 0\ntimeout_s = 1\n" + HOTSPOT_RULE)
    db = open_writer(cfg.db_path)
    run_batch(db, cfg, 2)
    report = evaluate_alerts(db, cfg)
    assert report.fired[0].status == "failed"
    delivery = next(db.query("select * from alert_deliveries"))
    assert delivery["channel"] == "email" and delivery["attempts"] == 2 and "Connection" in delivery["error"]


def test_a_key_quoted_in_a_run_error_never_reaches_the_alert(tmp_path, webhook, monkeypatch):
    key = "sk-proj-ALERTPLANTED0123456789abcdef"
    monkeypatch.setenv("FW_ALERT_TEST_KEY", key)
    text = scripted_toml(a_extra='api_key_env = "FW_ALERT_TEST_KEY"',
                         tail=f"[alerts.webhook]\nurl = \"{webhook.url}\"\n[[alerts.rules]]\nkind = \"failed_cycle\"\n")
    path = tmp_path / "framewatch.toml"
    path.write_text(text)
    cfg = config.load(path)
    db = open_writer(cfg.db_path)
    with db.conn:
        db["runs"].insert({"id": "r1", "kind": "cycle", "status": "failed", "started_at": iso(utcnow()),
                           "error": f"generate: key {key[:-4]}XXXX rejected; echo {key}"}, pk="id", alter=True)
    assert evaluate_alerts(db, cfg).fired[0].status == "sent"
    stored = json.dumps(list(db.query("select * from alerts")))
    assert key not in stored and key not in json.dumps(webhook.bodies)
    assert "[REDACTED]" in webhook.bodies[0]["alert"]["message"]
