"""Deliver one alert: a JSON POST to a webhook (Slack-compatible) and/or an e-mail over SMTP.

Delivery never raises: every outcome, including a server that never answers, becomes a
Delivery record that the caller stores. Retries are bounded (``1 + retries`` attempts with
capped exponential backoff), so an unreachable endpoint costs at most a known number of
seconds and never stops the monitor.
"""

from __future__ import annotations

import logging
import smtplib
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import urlsplit

log = logging.getLogger("framewatch.notify")
OK, FAILED = "ok", "failed"
MAX_BACKOFF_S = 30.0
RETRY_HTTP = (408, 425, 429, 500, 502, 503, 504)
"""HTTP statuses worth another attempt; any other 4xx means the request itself is wrong."""


@dataclass(frozen=True, slots=True)
class Delivery:
    channel: str
    """'webhook' or 'email'."""
    target: str
    """Where it went, without secrets: scheme://host:port for a webhook, the recipients for e-mail."""
    status: str
    """'ok' or 'failed'."""
    attempts: int
    error: str | None = None
    http_status: int | None = None


def safe_target(url: str) -> str:
    """A webhook URL reduced to scheme://host[:port]: the path of a Slack-style hook is itself the secret."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}"


def _backoff(attempt: int, base_s: float) -> float:
    return min(MAX_BACKOFF_S, base_s * (2 ** (attempt - 1)))


def post_webhook(url: str, payload: dict, *, timeout_s: float = 5.0, retries: int = 2, backoff_s: float = 1.0,
                 sleep: Callable[[float], None] = time.sleep) -> Delivery:
    """POST ``payload`` as JSON; retry connection errors, timeouts, 429 and 5xx up to ``retries`` times."""
    import httpx

    target = safe_target(url)
    error, status = None, None
    attempts = 0
    for attempt in range(1, retries + 2):
        attempts = attempt
        try:
            response = httpx.post(url, json=payload, timeout=timeout_s, follow_redirects=False)
            status = response.status_code
            if 200 <= status < 300:
                return Delivery("webhook", target, OK, attempts, None, status)
            error = f"HTTP {status}: {response.text[:200]}"
            if status not in RETRY_HTTP:
                break
        except httpx.HTTPError as exc:
            status = None
            error = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a malformed URL or a payload bug is still a recorded failure
            error = f"{type(exc).__name__}: {exc}"
            break
        if attempt <= retries:
            sleep(_backoff(attempt, backoff_s))
    log.warning("webhook %s failed after %d attempt(s): %s", target, attempts, error)
    return Delivery("webhook", target, FAILED, attempts, error, status)


@dataclass(frozen=True, slots=True)
class SmtpSettings:
    host: str
    port: int
    sender: str
    to: tuple[str, ...]
    username: str | None = None
    password: str | None = None
    """The value, read from the environment variable the config names; never stored."""
    starttls: bool = False
    use_ssl: bool = False
    timeout_s: float = 10.0
    retries: int = 1
    backoff_s: float = 1.0


def build_email(settings: SmtpSettings, subject: str, body: str) -> EmailMessage:
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = settings.sender
    msg["To"] = ", ".join(settings.to)
    msg.set_content(body)
    return msg


def send_email(settings: SmtpSettings, subject: str, body: str, *,
               sleep: Callable[[float], None] = time.sleep) -> Delivery:
    """Send one message over SMTP (plain, STARTTLS or SSL); retry connection and server errors."""
    target = ", ".join(settings.to)
    msg = build_email(settings, subject, body)
    error = None
    attempts = 0
    for attempt in range(1, settings.retries + 2):
        attempts = attempt
        try:
            _smtp_send(settings, msg)
            return Delivery("email", target, OK, attempts)
        except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused, smtplib.SMTPAuthenticationError) as exc:
            error = f"{type(exc).__name__}: {exc}"
            break  # the server understood and said no: another attempt would say no again
        except (OSError, smtplib.SMTPException) as exc:
            error = f"{type(exc).__name__}: {exc}"
        if attempt <= settings.retries:
            sleep(_backoff(attempt, settings.backoff_s))
    log.warning("e-mail to %s failed after %d attempt(s): %s", target, attempts, error)
    return Delivery("email", target, FAILED, attempts, error)


def _smtp_send(settings: SmtpSettings, msg: EmailMessage) -> None:
    if settings.use_ssl:
        client = smtplib.SMTP_SSL(settings.host, settings.port, timeout=settings.timeout_s,
                                  context=ssl.create_default_context())
    else:
        client = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout_s)
    with client:
        if settings.starttls and not settings.use_ssl:
            client.starttls(context=ssl.create_default_context())
        if settings.username:
            client.login(settings.username, settings.password or "")
        client.send_message(msg)
