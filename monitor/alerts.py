"""Alerts: evaluate the configured rules against the store, notify each new condition once, store everything.

``evaluate_alerts(db, cfg)`` is the scheduler's job and the ``framewatch alerts`` command.
For each rule it computes the conditions that hold now (monitor.alerts_rules) and compares
them with the remembered state (table ``alert_state``):

- a condition that was not active alerts, unless it last alerted less than
  ``cooldown_minutes`` ago (a flapping condition);
- a condition that stays active is quiet, unless ``repeat_minutes`` (> 0) have passed since
  its last alert (a reminder);
- a condition that no longer holds is cleared, so its return alerts again;
- at most ``max_per_hour`` alerts go out per hour; the rest are stored as 'rate_limited'.

Every alert is stored with the data that triggered it and a dashboard link before it is
delivered; delivery failures are recorded per channel and never raised, so a dead webhook
cannot stop the monitor. A rule that cannot be evaluated is reported and skipped.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pandas as pd
from sqlite_utils import Database

from monitor import alerts_rules as rules_mod
from monitor import notify
from monitor.alerts_config import AlertsConfig, ConfigError, Rule, parse_alerts
from monitor.alerts_rules import Finding, view_link
from monitor.config import Config
from monitor.ids import iso, make_id, parse_iso, utcnow
from monitor.redact import redact, secrets_in_env
from monitor.snapshot_scrub import env_secrets
from store import alerts as store

__all__ = ["AlertReport", "ConfigError", "evaluate_alerts", "parse_alerts"]
log = logging.getLogger("framewatch.alerts")
SENT, PARTIAL, FAILED, STORED, RATE_LIMITED = "sent", "partial", "failed", "stored", "rate_limited"


@dataclass(frozen=True, slots=True)
class FiredAlert:
    id: str
    rule: str
    condition_key: str
    status: str
    """sent | partial | failed (delivery), stored (no channel configured), rate_limited (not delivered)."""
    title: str
    link: str
    deliveries: tuple[notify.Delivery, ...] = ()


@dataclass(frozen=True, slots=True)
class AlertReport:
    evaluated_at: str
    fired: tuple[FiredAlert, ...] = ()
    quiet: int = 0
    """Conditions still true that were not notified again (de-duplicated)."""
    cleared: int = 0
    """Conditions that held before and no longer do."""
    rate_limited: int = 0
    errors: tuple[str, ...] = ()
    """Rules that could not be evaluated, with the reason; the other rules still ran."""
    findings: dict = field(default_factory=dict)
    """Rule name -> number of conditions that hold now."""

    def __str__(self) -> str:  # the scheduler logs the report: one line
        return self.lines()[0]

    def lines(self) -> list[str]:
        out = [f"alerts at {self.evaluated_at}: {len(self.fired)} fired, {self.quiet} still active (already notified), "
               f"{self.cleared} cleared, {self.rate_limited} rate-limited, {len(self.errors)} rule errors"]
        for a in self.fired:
            deliveries = ", ".join(f"{d.channel} {d.status} after {d.attempts} attempt(s)" +
                                   (f" ({d.error})" if d.error else "") for d in a.deliveries) or "no channel"
            out.append(f"  [{a.status}] {a.rule}: {a.title}\n    {a.link}\n    delivery: {deliveries}")
        out.extend(f"  rule error: {e}" for e in self.errors)
        return out


def evaluate_alerts(db: Database, cfg: Config, *, now: datetime | None = None) -> AlertReport:
    """Evaluate every rule once; store, de-duplicate, rate-limit and deliver. Raises only ConfigError."""
    acfg = parse_alerts(cfg)
    now = now or utcnow()
    if not acfg.enabled or not acfg.rules:
        return AlertReport(iso(now))
    facts = _Facts(db, cfg)
    fired: list[FiredAlert] = []
    quiet = cleared = limited = 0
    errors: list[str] = []
    counts: dict[str, int] = {}
    budget_left = acfg.max_per_hour - store.alerts_since(db, iso(now - timedelta(hours=1)))
    secrets = [*secrets_in_env(cfg), *env_secrets(cfg.raw), *_secrets(acfg)]
    for rule in acfg.rules:
        try:
            findings = _evaluate(rule, facts, now)
        except Exception as exc:  # one broken rule must not silence the others
            log.exception("alert rule %s failed", rule.name)
            errors.append(f"{rule.name}: {type(exc).__name__}: {exc}")
            continue
        findings = [_scrubbed(f, secrets) for f in findings]
        counts[rule.name] = len(findings)
        states = store.condition_states(db, rule.name)
        for finding in findings:
            state = states.pop(finding.condition_key, None)
            if not _should_notify(state, acfg, now):
                quiet += 1
                store.save_state(db, _seen(state, finding, now))
                continue
            limited_now = budget_left <= 0
            alert = _store(db, acfg, finding, state, now, RATE_LIMITED if limited_now else STORED)
            if limited_now:
                limited += 1
                fired.append(alert)
                continue
            budget_left -= 1
            fired.append(_deliver(db, cfg, acfg, rule, finding, alert, now))
        for key, state in states.items():
            if state["active"]:
                cleared += 1
                store.save_state(db, {**state, "active": 0, "cleared_at": iso(now)})
    return AlertReport(iso(now), tuple(fired), quiet, cleared, limited, tuple(errors), counts)


def _scrubbed(finding: Finding, secrets: list[str]) -> Finding:
    """A run error or feed error quoted in an alert goes to a chat channel: remove any key it carries."""
    def clean(value):
        if isinstance(value, str):
            return redact(value, secrets)
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return dataclasses.replace(finding, title=clean(finding.title), message=clean(finding.message),
                               data=clean(finding.data))


def _should_notify(state: dict | None, acfg: AlertsConfig, now: datetime) -> bool:
    if state is None:
        return True
    last = parse_iso(state.get("last_alert_at"))
    since = (now - last).total_seconds() / 60 if last else float("inf")
    if state.get("active"):
        return acfg.repeat_minutes > 0 and since >= acfg.repeat_minutes
    return since >= acfg.cooldown_minutes


def _seen(state: dict | None, finding: Finding, now: datetime) -> dict:
    base = state or {"condition_key": finding.condition_key, "rule": finding.rule, "first_seen_at": iso(now),
                     "times_seen": 0, "last_alert_at": None, "last_alert_id": None}
    first = base["first_seen_at"] if base.get("active") else iso(now)
    return {**base, "active": 1, "first_seen_at": first, "last_seen_at": iso(now),
            "times_seen": int(base.get("times_seen") or 0) + 1, "cleared_at": None}


def _store(db: Database, acfg: AlertsConfig, finding: Finding, state: dict | None, now: datetime, status: str) -> FiredAlert:
    alert_id = make_id("alert", finding.condition_key, iso(now))
    link = view_link(acfg.dashboard_url, finding.page, finding.params)
    row = {
        "id": alert_id, "rule": finding.rule, "kind": finding.kind, "condition_key": finding.condition_key,
        "severity": _rule_severity(acfg, finding.rule), "status": status, "title": finding.title,
        "message": finding.message, "data_json": json.dumps(finding.data, sort_keys=True, default=str), "link": link,
        "batch_id": finding.batch_id, "deployment": finding.deployment, "dimension": finding.dimension,
        "family": finding.family, "feed": finding.feed, "run_id": finding.run_id, "created_at": iso(now),
    }
    new_state = {**_seen(state, finding, now), "last_alert_at": iso(now), "last_alert_id": alert_id}
    store.save_alert(db, row, new_state)
    return FiredAlert(alert_id, finding.rule, finding.condition_key, status, finding.title, link)


def _rule_severity(acfg: AlertsConfig, name: str) -> str:
    return next((r.severity for r in acfg.rules if r.name == name), "warning")


def _deliver(db: Database, cfg: Config, acfg: AlertsConfig, rule: Rule, finding: Finding, alert: FiredAlert,
             now: datetime) -> FiredAlert:
    deliveries: list[notify.Delivery] = []
    severity = _rule_severity(acfg, rule.name)
    if acfg.webhook and "webhook" in rule.channels:
        url = acfg.webhook.resolved_url()
        if url:
            payload = webhook_payload(finding, alert, severity, now)
            deliveries.append(notify.post_webhook(url, payload, timeout_s=acfg.webhook.timeout_s,
                                                  retries=acfg.webhook.retries, backoff_s=acfg.webhook.backoff_s))
        else:
            deliveries.append(notify.Delivery("webhook", f"${acfg.webhook.url_env}", notify.FAILED, 0,
                                              f"environment variable {acfg.webhook.url_env} is not set"))
    if acfg.email and "email" in rule.channels:
        e = acfg.email
        settings = notify.SmtpSettings(
            host=e.host, port=e.port, sender=e.sender, to=e.to, username=e.username,
            password=os.environ.get(e.password_env) if e.password_env else None, starttls=e.starttls, use_ssl=e.ssl,
            timeout_s=e.timeout_s, retries=e.retries, backoff_s=e.backoff_s)
        deliveries.append(notify.send_email(settings, f"[framewatch] {severity}: {finding.title}",
                                            email_body(finding, alert, severity, now)))
    secrets = _secrets(acfg)
    for d in deliveries:
        store.save_delivery(db, {
            "id": make_id("delivery", alert.id, d.channel), "alert_id": alert.id, "channel": d.channel,
            "target": d.target, "status": d.status, "attempts": d.attempts, "error": redact(d.error, secrets),
            "http_status": d.http_status, "sent_at": iso(utcnow()),
        })
    ok = [d.status == notify.OK for d in deliveries]
    status = STORED if not deliveries else SENT if all(ok) else FAILED if not any(ok) else PARTIAL
    store.set_alert_status(db, alert.id, status)
    return FiredAlert(alert.id, alert.rule, alert.condition_key, status, alert.title, alert.link, tuple(deliveries))


def _secrets(acfg: AlertsConfig) -> list[str]:
    values = []
    if acfg.webhook and acfg.webhook.resolved_url():
        values.append(acfg.webhook.resolved_url())
    if acfg.email and acfg.email.password_env and os.environ.get(acfg.email.password_env):
        values.append(os.environ[acfg.email.password_env])
    return values


def webhook_payload(finding: Finding, alert: FiredAlert, severity: str, now: datetime) -> dict:
    """Slack-compatible (``text`` is what Slack shows) plus the structured alert for other receivers."""
    text = f"*[framewatch] {severity}: {finding.title}*\n{finding.message}\n<{alert.link}|Open in the dashboard>"
    return {
        "text": text,
        "alert": {
            "id": alert.id, "rule": finding.rule, "kind": finding.kind, "severity": severity,
            "condition_key": finding.condition_key, "title": finding.title, "message": finding.message,
            "link": alert.link, "created_at": iso(now), "batch_id": finding.batch_id, "deployment": finding.deployment,
            "dimension": finding.dimension, "family": finding.family, "feed": finding.feed, "run_id": finding.run_id,
            "data": finding.data,
        },
    }


def email_body(finding: Finding, alert: FiredAlert, severity: str, now: datetime) -> str:
    data = json.dumps(finding.data, indent=2, sort_keys=True, default=str)
    return (f"{finding.title}\n\n{finding.message}\n\nOpen in the dashboard: {alert.link}\n\n"
            f"Rule: {finding.rule} ({finding.kind}), severity {severity}, at {iso(now)}\n"
            f"Condition: {finding.condition_key} (notified once until it clears)\n\nData:\n{data}\n\n"
            "framewatch scores are audit signals for human review, not proof of harm.\n")


# -- facts the rules read, loaded lazily once per evaluation -----------------------------------

class _Facts:
    def __init__(self, db: Database, cfg: Config) -> None:
        self.db, self.cfg = db, cfg
        self._batches: list[dict] | None = None
        self._cells: dict[tuple[str, ...], pd.DataFrame] = {}

    def batches(self) -> list[dict]:
        if self._batches is None:
            self._batches = store.scored_batches(self.db)
        return self._batches

    def cells(self, last: int | None = None) -> pd.DataFrame:
        """Cells of the last ``last`` scored batches (all when None): threshold and change rules need two at most."""
        ids = tuple(b["id"] for b in (self.batches()[-last:] if last else self.batches()))
        if ids not in self._cells:
            self._cells[ids] = store.cells_of_batches(self.db, list(ids))
        return self._cells[ids]


def _evaluate(rule: Rule, facts: _Facts, now: datetime) -> list[Finding]:
    from monitor import alerts_metrics as metrics

    if rule.kind in ("threshold", "change", "stability"):
        batches = facts.batches()
        if not batches:
            return []
        batch, prev = batches[-1], (batches[-2] if len(batches) > 1 else None)
        if rule.kind == "threshold":
            groups = metrics.groups(facts.cells(2), batch["id"], rule.metric, facts.cfg, hotspots=rule.hotspots_only)
            return rules_mod.threshold(rule, groups, batch)
        if rule.kind == "change":
            if prev is None:
                return []
            cells = facts.cells(2)
            return rules_mod.change(rule, metrics.groups(cells, batch["id"], rule.metric, facts.cfg),
                                    metrics.groups(cells, prev["id"], rule.metric, facts.cfg), batch, prev)
        per_dep, tau = metrics.stability(facts.cells(), rule.metric, [b["id"] for b in batches])
        return rules_mod.stability(rule, per_dep, tau, batch, prev)
    if rule.kind == "feed_failing":
        return rules_mod.feed_failing(rule, store.feed_status(facts.db), now)
    run = store.latest_cycle(facts.db)
    if rule.kind == "failed_cycle":
        return rules_mod.failed_cycle(rule, run)
    spent = store.run_cost(facts.db, run["id"]) if run else 0.0
    return rules_mod.budget(rule, run, spent, facts.cfg.budget.max_cost_per_cycle)
