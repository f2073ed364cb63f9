"""Keep API keys out of everything framewatch writes: errors, logs, the store, snapshots.

Keys live only in environment variables named by ``api_key_env``. A provider error can
still echo one (some APIs quote the key they rejected, and exception texts may include
headers), so every error string passes through ``redact`` before it is stored or logged.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from monitor.config import Config

REDACTED = "[REDACTED]"
_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{6,}"),  # OpenAI-style keys (sk-..., sk-proj-..., sk-ant-...)
    re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"),  # Google API keys
    re.compile(r"(?i)\b((?:Bearer|Basic)\s+)[A-Za-z0-9._~+/=\-]{4,}"),
    re.compile(r"(?i)((?:api[-_]?key|x-api-key|authorization|access[-_]?token)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]{4,}"),
)
_MIN_SECRET = 4  # shorter values would redact ordinary words


def redact(text: str | None, secrets: Iterable[str] = ()) -> str | None:
    """``text`` with every known secret value and every key-looking token replaced by [REDACTED]."""
    if text is None:
        return None
    for secret in sorted({s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(_keep_prefix, text)
    return text


def _keep_prefix(match: re.Match) -> str:
    # Keep "Bearer " / "api_key=" so the message still says what kind of secret was removed.
    return f"{match.group(1)}{REDACTED}" if match.lastindex else REDACTED


def secrets_in_env(cfg: Config) -> list[str]:
    """The key values the configured deployments read from the environment (to redact them verbatim)."""
    return [os.environ[d.api_key_env] for d in cfg.deployments if d.api_key_env and os.environ.get(d.api_key_env)]
