"""Deterministic ids and UTC time helpers.

Every stored row is keyed by a hash of its natural key, so re-running a stage
writes the same ids and an upsert turns a repeat into a no-op.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime


def make_id(*parts: object, length: int = 16) -> str:
    """Short, stable hex id of the natural key ``parts`` (order matters)."""
    payload = json.dumps([_plain(p) for p in parts], sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:length]


def content_hash(text: str) -> str:
    """Full SHA-256 of a text, for prompts and files stored verbatim."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(dt: datetime | None) -> str | None:
    """ISO-8601 in UTC; refuses naive datetimes, which would silently mean local time."""
    if dt is None:
        return None
    if dt.tzinfo is None:
        raise ValueError(f"naive datetime {dt!r}: framewatch stores UTC-aware datetimes only")
    return dt.astimezone(UTC).isoformat(timespec="seconds")


def parse_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    dt = datetime.fromisoformat(text)
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def _plain(value: object) -> object:
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
