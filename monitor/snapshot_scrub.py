"""Keep secrets out of a snapshot: the configuration, every exported text value, and a final check.

The config holds only the NAMES of environment variables (``api_key_env``, ``url_env``,
``password_env``), but a hand-edited file may still carry a literal key, a URL with a token
in it, or a provider error that echoed a key. So three layers: secret-looking config keys
are replaced, every string value (config and tables) passes through ``monitor.redact``
with the values of every environment variable the config names, and ``find_leaks`` scans
the written files before the snapshot is sealed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from monitor.redact import REDACTED, redact

SECRET_KEY = re.compile(r"(?i)(^|_)(password|passwd|secret|token|api_?key|apikey|credentials?|private_?key|auth|authorization)$")
"""Config keys whose value is a secret whatever it looks like (``*_env`` keys hold names and are kept)."""
SECRET_URL_KEYS = {("alerts", "webhook", "url")}
"""Config paths whose URL is a secret in itself (a Slack webhook URL is its own credential)."""
PROSE_KEYS = {"system_prompt", "name", "description", "title"}
"""Config strings that are prose (scrubbed like model text, so an ordinary word is never rewritten)."""
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s:@]+(?::[^/\s@]*)?@")
_URL_QUERY_SECRET = re.compile(r"(?i)([?&](?:key|api_?key|token|access_token|sig|signature|secret|password|auth)=)[^&#\s\"']+")
_KEY_TOKENS = (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"))
"""Unmistakable API-key shapes, safe to remove even from prose (unlike 'Basic ...' or 'token: ...')."""
_MIN_SECRET = 4


def env_secrets(raw: object) -> list[str]:
    """Values of every environment variable the config names through a ``*_env`` key."""
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if str(key).endswith("_env") and isinstance(value, str):
                    names.add(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(raw)
    return sorted({os.environ[n] for n in names if len(os.environ.get(n, "")) >= _MIN_SECRET})


def scrub_text(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """``text`` without known secret values, key-looking tokens, URL credentials or secret query parameters."""
    if text is None:
        return None
    text = redact(text, secrets)
    text = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
    return _URL_QUERY_SECRET.sub(lambda m: f"{m.group(1)}{REDACTED}", text)


def scrub_prose(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """Model answers and news text: remove known secret values and unmistakable key shapes only.

    The broader patterns of ``scrub_text`` would also rewrite ordinary words ("basic needs",
    "token of respect"), which would change the text that ``reproduce`` scores again.
    """
    if text is None:
        return None
    for secret in sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern in _KEY_TOKENS:
        text = pattern.sub(REDACTED, text)
    return text


def scrub_config(raw: object, secrets: Iterable[str] = (), path: tuple[str, ...] = ()) -> object:
    """A copy of the parsed TOML with every secret value replaced by [REDACTED]."""
    secrets = list(secrets)
    if isinstance(raw, dict):
        out = {}
        for key, value in raw.items():
            sub = (*path, str(key))
            if str(key).endswith("_env"):
                out[key] = value  # the NAME of a variable, which the reader needs to run it themselves
            elif isinstance(value, (str, int, float)) and not isinstance(value, bool) and (
                    SECRET_KEY.search(str(key)) or sub in SECRET_URL_KEYS):
                out[key] = REDACTED
            else:
                out[key] = scrub_config(value, secrets, sub)
        return out
    if isinstance(raw, list):
        return [scrub_config(v, secrets, path) for v in raw]
    if isinstance(raw, str):
        return scrub_prose(raw, secrets) if path and path[-1] in PROSE_KEYS else scrub_text(raw, secrets)
    return raw


def find_leaks(folder: Path, secrets: Iterable[str]) -> list[str]:
    """Files under ``folder`` that still contain a secret value or a key-looking token (text and SQLite files)."""
    secrets = [s for s in secrets if len(s) >= _MIN_SECRET]
    leaks = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        if path.suffix in (".zip", ".parquet"):
            continue  # compressed: their content is checked through the CSV/SQLite copies of the same rows
        text = path.read_bytes().decode("utf-8", errors="replace")
        if any(s in text for s in secrets) or any(p.search(text) for p in _KEY_TOKENS):
            leaks.append(str(path.relative_to(folder)))
    return leaks
