"""Cached reads for the alerts page (store.alerts), in the same style as ui/data.py.

A store written before the alerts migration has no alert tables: the page says so instead
of failing, so a snapshot or an old database still opens.
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from store import alerts as alert_store
from store import open_readonly

TTL = 30


def _read(path: str, fn, *args, **kwargs):
    db = open_readonly(path)
    try:
        if not alert_store.has_alert_tables(db):
            return None
        return fn(db, *args, **kwargs)
    finally:
        db.conn.close()


@st.cache_data(ttl=TTL, show_spinner=False)
def has_tables(path: str) -> bool:
    return bool(_read(path, lambda db: True))


@st.cache_data(ttl=TTL, show_spinner=False, max_entries=16)
def alerts(path: str, rules: tuple[str, ...] = (), statuses: tuple[str, ...] = (), limit: int = 500) -> pd.DataFrame:
    return _read(path, alert_store.alerts, rules=rules, statuses=statuses, limit=limit)


@st.cache_data(ttl=TTL, show_spinner=False)
def active_conditions(path: str) -> pd.DataFrame:
    return _read(path, alert_store.active_conditions)


@st.cache_data(ttl=TTL, show_spinner=False)
def rules_seen(path: str) -> list[str]:
    return _read(path, alert_store.alert_rules_seen) or []


@st.cache_data(ttl=TTL, show_spinner=False, max_entries=64)
def deliveries(path: str, alert_id: str) -> pd.DataFrame:
    return _read(path, alert_store.alert_deliveries, alert_id)


def data_of(raw: object) -> dict:
    """The stored trigger data of one alert as a dict ({} when unreadable)."""
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
