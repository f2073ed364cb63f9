"""The ``[alerts]`` section of framewatch.toml, parsed and validated.

Every mistake is a ConfigError naming the key and the fix, raised when the monitor starts
(``parse_alerts``), so a typo in a rule never surfaces as a silent non-alert weeks later.
Secrets (a Slack webhook URL, an SMTP password) are read from environment variables whose
NAMES the config holds (``url_env``, ``password_env``); a literal ``url`` is allowed for
local hooks but is scrubbed from snapshots like any other secret.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass

from monitor.config import Config, ConfigError

KINDS = ("threshold", "change", "stability", "feed_failing", "failed_cycle", "budget")
METRICS = ("scfs", "s", "n", "s_placebo", "s_minus_placebo", "sent_range", "sent_mad", "sent_range_corrected",
           "sent_mad_corrected", "significant_share")
"""What a rule can watch: a cell metric's mean over a group's cells where it is defined (the convention of
monitor.scoring.aggregate), or significant_share, the fraction of the group's cells significant after FDR."""
DIRECTIONS = ("up", "down", "any")
SEVERITIES = ("info", "warning", "critical")
CHANNELS = ("webhook", "email")


@dataclass(frozen=True, slots=True)
class WebhookConfig:
    url: str | None = None
    url_env: str | None = None
    timeout_s: float = 5.0
    retries: int = 2
    backoff_s: float = 1.0

    def resolved_url(self) -> str | None:
        return os.environ.get(self.url_env) if self.url_env else self.url


@dataclass(frozen=True, slots=True)
class EmailConfig:
    host: str
    sender: str
    to: tuple[str, ...]
    port: int = 25
    username: str | None = None
    password_env: str | None = None
    starttls: bool = False
    ssl: bool = False
    timeout_s: float = 10.0
    retries: int = 1
    backoff_s: float = 1.0


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    kind: str
    metric: str = "scfs"
    above: float | None = None
    """threshold: alert when the group's metric is above this."""
    delta: float | None = None
    """change: alert when the metric moved by more than this since the previous scored batch."""
    direction: str = "up"
    min_tau: float | None = None
    """stability: alert when the rank agreement (Kendall tau) of deployments between the last two batches is below this."""
    max_cv: float | None = None
    """stability: alert when a deployment's coefficient of variation across batches is above this."""
    minutes: float | None = None
    """feed_failing: alert when a feed has failed every poll for longer than this."""
    fraction: float = 1.0
    """budget: alert when a cycle spent at least this fraction of budget.max_cost_per_cycle (or stopped on budget)."""
    hotspots_only: bool = False
    """threshold: only groups that aggregate.hotspots flags (significant and large)."""
    deployments: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    feeds: tuple[str, ...] = ()
    severity: str = "warning"
    channels: tuple[str, ...] = CHANNELS


@dataclass(frozen=True, slots=True)
class AlertsConfig:
    enabled: bool = True
    dashboard_url: str = "http://localhost:8501"
    repeat_minutes: float = 1440.0
    """A condition that stays true is notified again after this long (0: never while it stays true)."""
    cooldown_minutes: float = 60.0
    """A condition that clears and comes back within this long is not notified again (flapping)."""
    max_per_hour: int = 20
    """At most this many alerts go out per hour; the rest are stored as 'rate_limited'."""
    webhook: WebhookConfig | None = None
    email: EmailConfig | None = None
    rules: tuple[Rule, ...] = ()


_TOP = {"enabled": bool, "dashboard_url": str, "repeat_minutes": float, "cooldown_minutes": float,
        "max_per_hour": int, "webhook": dict, "email": dict, "rules": list}
_WEBHOOK = {"url": str, "url_env": str, "timeout_s": float, "retries": int, "backoff_s": float}
_EMAIL = {"host": str, "port": int, "sender": str, "to": list, "username": str, "password_env": str,
          "starttls": bool, "ssl": bool, "timeout_s": float, "retries": int, "backoff_s": float}
_RULE = {"name": str, "kind": str, "metric": str, "above": float, "delta": float, "direction": str,
         "min_tau": float, "max_cv": float, "minutes": float, "fraction": float, "hotspots_only": bool,
         "deployment": list, "dimension": list, "family": list, "feed": list, "severity": str, "channels": list}


def parse_alerts(cfg: Config) -> AlertsConfig:
    """Validate ``cfg.alerts`` (the raw [alerts] table); raises ConfigError naming the key and the fix."""
    where = str(cfg.path) if cfg.path else "<embedded default config>"
    raw = cfg.alerts or {}
    _check(raw, _TOP, where, "alerts.")
    webhook = _webhook(raw["webhook"], where) if "webhook" in raw else None
    email = _email(raw["email"], where) if "email" in raw else None
    rules = tuple(_rule(r, i, where, cfg) for i, r in enumerate(raw.get("rules", [])))
    names = [r.name for r in rules]
    for n in names:
        if names.count(n) > 1:
            raise ConfigError(f"{where}: two [[alerts.rules]] are named {n!r}; give each rule a distinct name.")
    d = AlertsConfig()
    out = AlertsConfig(
        enabled=raw.get("enabled", d.enabled), dashboard_url=raw.get("dashboard_url", d.dashboard_url).rstrip("/"),
        repeat_minutes=float(raw.get("repeat_minutes", d.repeat_minutes)),
        cooldown_minutes=float(raw.get("cooldown_minutes", d.cooldown_minutes)),
        max_per_hour=raw.get("max_per_hour", d.max_per_hour), webhook=webhook, email=email, rules=rules,
    )
    if not out.dashboard_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: alerts.dashboard_url = {out.dashboard_url!r} must start with http:// or https:// "
                          "(the address people open the dashboard at, e.g. http://localhost:8501).")
    for key in ("repeat_minutes", "cooldown_minutes"):
        if getattr(out, key) < 0:
            raise ConfigError(f"{where}: alerts.{key} must be >= 0 (0 turns it off).")
    if out.max_per_hour < 1:
        raise ConfigError(f"{where}: alerts.max_per_hour must be >= 1 (it caps notifications, it cannot silence them).")
    return out


def _webhook(raw: dict, where: str) -> WebhookConfig:
    _check(raw, _WEBHOOK, where, "alerts.webhook.")
    if bool(raw.get("url")) == bool(raw.get("url_env")):
        raise ConfigError(f"{where}: alerts.webhook needs exactly one of url (a local hook) or url_env (the NAME of the "
                          "environment variable holding the URL; use this for Slack, whose URL is a secret).")
    hook = WebhookConfig(**{k: float(v) if _WEBHOOK[k] is float else v for k, v in raw.items()})
    if hook.url and not hook.url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: alerts.webhook.url = {hook.url!r} must start with http:// or https://.")
    _limits(hook, where, "alerts.webhook.")
    return hook


def _email(raw: dict, where: str) -> EmailConfig:
    _check(raw, _EMAIL, where, "alerts.email.")
    for key in ("host", "sender", "to"):
        if not raw.get(key):
            raise ConfigError(f"{where}: alerts.email.{key} is required, e.g. host = \"smtp.example.org\", "
                              "sender = \"framewatch@example.org\", to = [\"team@example.org\"].")
    to = _strings(raw["to"], where, "alerts.email.to")
    values = {k: float(v) if _EMAIL[k] is float else v for k, v in raw.items() if k != "to"}
    email = EmailConfig(to=to, **values)
    if email.starttls and email.ssl:
        raise ConfigError(f"{where}: alerts.email sets both starttls and ssl; use ssl = true for port 465 or "
                          "starttls = true for port 587, not both.")
    if email.password_env and not email.username:
        raise ConfigError(f"{where}: alerts.email.password_env is set but username is not; add username = \"...\".")
    _limits(email, where, "alerts.email.")
    return email


def _limits(obj, where: str, prefix: str) -> None:
    if obj.timeout_s <= 0:
        raise ConfigError(f"{where}: {prefix}timeout_s must be > 0 seconds.")
    if not 0 <= obj.retries <= 10:
        raise ConfigError(f"{where}: {prefix}retries = {obj.retries} must lie between 0 and 10 (retries are bounded).")
    if obj.backoff_s < 0:
        raise ConfigError(f"{where}: {prefix}backoff_s must be >= 0.")


def _rule(raw: object, i: int, where: str, cfg: Config) -> Rule:
    prefix = f"alerts.rules[{i}]."
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: alerts.rules[{i}] must be a table: write [[alerts.rules]] with name and kind.")
    _check(raw, _RULE, where, prefix)
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{where}: {prefix}kind = {kind!r}; use one of {list(KINDS)}.")
    values = {k: float(v) if _RULE[k] is float else v for k, v in raw.items()
              if k not in ("deployment", "dimension", "family", "feed", "channels")}
    values.setdefault("name", f"{kind}-{i}")
    for key, field_name in (("deployment", "deployments"), ("dimension", "dimensions"), ("family", "families"), ("feed", "feeds")):
        if key in raw:
            values[field_name] = tuple(v for v in _strings(raw[key], where, prefix + key) if v != "*")
    if "channels" in raw:
        values["channels"] = _strings(raw["channels"], where, prefix + "channels")
    rule = Rule(**values)
    _validate_rule(rule, where, prefix, cfg)
    return rule


def _validate_rule(rule: Rule, where: str, prefix: str, cfg: Config) -> None:
    def need(key: str, example: str) -> None:
        if getattr(rule, key) is None:
            raise ConfigError(f"{where}: {prefix}{key} is required for kind = {rule.kind!r}, e.g. {key} = {example}.")

    if rule.metric not in METRICS:
        raise ConfigError(f"{where}: {prefix}metric = {rule.metric!r}; use one of {list(METRICS)}.")
    if rule.kind == "stability" and rule.metric == "significant_share":
        raise ConfigError(f"{where}: {prefix}metric: a stability rule compares batch means of a cell metric; use one "
                          f"of {[m for m in METRICS if m != 'significant_share']}.")
    if rule.direction not in DIRECTIONS:
        raise ConfigError(f"{where}: {prefix}direction = {rule.direction!r}; use one of {list(DIRECTIONS)}.")
    if rule.severity not in SEVERITIES:
        raise ConfigError(f"{where}: {prefix}severity = {rule.severity!r}; use one of {list(SEVERITIES)}.")
    for ch in rule.channels:
        if ch not in CHANNELS:
            raise ConfigError(f"{where}: {prefix}channels has {ch!r}; use any of {list(CHANNELS)}.")
    if rule.kind == "threshold":
        need("above", "0.05")
    elif rule.kind == "change":
        need("delta", "0.05")
        if rule.delta <= 0:
            raise ConfigError(f"{where}: {prefix}delta must be > 0 (use direction = \"down\" for decreases).")
    elif rule.kind == "stability" and rule.min_tau is None and rule.max_cv is None:
        raise ConfigError(f"{where}: {prefix} a stability rule needs min_tau (e.g. 0.3) or max_cv (e.g. 0.5), or both.")
    elif rule.kind == "feed_failing":
        need("minutes", "180")
        if rule.minutes <= 0:
            raise ConfigError(f"{where}: {prefix}minutes must be > 0.")
    elif rule.kind == "budget" and not 0 < rule.fraction <= 1:
        raise ConfigError(f"{where}: {prefix}fraction = {rule.fraction} must lie in (0, 1] (1 = the whole budget).")
    known_deps = {d.name for d in cfg.deployments}
    for dep in rule.deployments:
        if dep not in known_deps:
            raise ConfigError(f"{where}: {prefix}deployment names {dep!r}, which is not a configured deployment; "
                              f"use one of {sorted(known_deps)} or \"*\".")
    known_feeds = {f.name for f in cfg.feeds}
    for feed in rule.feeds:
        if feed not in known_feeds:
            raise ConfigError(f"{where}: {prefix}feed names {feed!r}, which is not a configured feed; use one of "
                              f"{sorted(known_feeds)} or \"*\".")


def _strings(value: object, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key} must be a string or a list of strings, got {value!r}.")
    return tuple(value)


def _check(table: dict, schema: dict, where: str, prefix: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: {prefix.rstrip('.')} must be a table.")
    for key, value in table.items():
        if key not in schema:
            hint = difflib.get_close_matches(key, sorted(schema), n=1)
            fix = f"did you mean {prefix}{hint[0]}?" if hint else f"allowed keys: {sorted(schema)}"
            raise ConfigError(f"{where}: unknown key {prefix}{key}; {fix}")
        typ = schema[key]
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) if typ is float else (
            isinstance(value, (list, str)) if typ is list else isinstance(value, typ) and not (typ is int and isinstance(value, bool)))
        if not ok:
            expected = {float: "a number", list: "a string or list of strings", dict: "a table"}.get(typ, typ.__name__)
            raise ConfigError(f"{where}: {prefix}{key} = {value!r} has the wrong type; expected {expected}.")
