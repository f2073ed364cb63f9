"""Cached data access for the pages: st.cache_data wrappers over store.queries.

Each call opens its own read-only connection (cheap, and safe across Streamlit's session
threads) and closes it. Arguments are plain hashable values: the database path first, so
two dashboards on two stores never share a cache entry. The TTL matches how often the
monitor writes; a review written here clears the caches that show reviews.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from store import StoreError, reading
from store import queries as q
from store import reviews as review_store
from ui import stats
from ui.geometry import bundle_groups, decode_embedding, group_centroid_distances

DEFAULT_DB = "data/framewatch.db"
TTL = 60
"""Seconds a cached read stays fresh."""


def db_path() -> str:
    """Where the store is: FRAMEWATCH_DB, else data/framewatch.db relative to the working directory."""
    return os.environ.get("FRAMEWATCH_DB") or DEFAULT_DB


@dataclass(frozen=True, slots=True)
class StoreState:
    status: str
    """'ok', 'empty' (no batch yet), 'missing', 'broken' or 'outdated'."""
    message: str


@st.cache_data(ttl=10, show_spinner=False)
def store_state(path: str) -> StoreState:
    if not Path(path).exists():
        return StoreState("missing", f"No framewatch database at `{path}` yet.")
    try:
        with reading(path) as db:
            status = q.schema_status(db)
            if status["missing_core"]:
                return StoreState("broken", f"`{path}` is not a framewatch database (tables missing: "
                                            f"{', '.join(status['missing_core'])}).")
            if status["missing_dashboard"]:
                return StoreState("outdated", f"`{path}` predates the dashboard tables "
                                              f"({', '.join(status['missing_dashboard'])}).")
            if not q.store_counts(db)["batches"]:
                return StoreState("empty", f"`{path}` has no batch yet.")
    except (StoreError, sqlite3.DatabaseError) as exc:
        return StoreState("broken", f"`{path}` cannot be read: {exc}")
    return StoreState("ok", "")


def _cached(ttl: int = TTL, max_entries: int = 64):
    return st.cache_data(ttl=ttl, max_entries=max_entries, show_spinner=False)


@_cached()
def options(path: str) -> dict[str, list[str]]:
    with reading(path) as db:
        return q.filter_options(db)


@_cached()
def batches(path: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.batches(db)


@_cached()
def deployments(path: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.deployments(db)


@_cached()
def store_counts(path: str) -> dict:
    with reading(path) as db:
        return q.store_counts(db)


@_cached()
def batch_summary(path: str, batch_id: str) -> dict:
    with reading(path) as db:
        return q.batch_summary(db, batch_id)


SERIES_METRICS = ("scfs", "sent_range_corrected")


@_cached(max_entries=32)
def series_sums(path: str, f: q.CellFilter) -> pd.DataFrame:
    """Per batch x deployment x article sums of the series metrics (one query for both charts)."""
    with reading(path) as db:
        return q.cluster_sums(db, f, ("batch_id", "deployment"), SERIES_METRICS)


@_cached(max_entries=32)
def batch_series(path: str, f: q.CellFilter, value: str) -> pd.DataFrame:
    """Per batch x deployment mean of a cell metric over valid cells, with its cluster-bootstrap CI."""
    if value in SERIES_METRICS:
        return stats.series_from_sums(series_sums(path, f), value)
    with reading(path) as db:
        return stats.series_from_sums(q.cluster_sums(db, f, ("batch_id", "deployment"), (value,)), value)


@_cached(max_entries=32)
def hotspot_grid(path: str, f: q.CellFilter) -> pd.DataFrame:
    with reading(path) as db:
        sums = q.cluster_sums(db, f, ("deployment", "dimension", "family"), ("scfs",))
        counts = q.grid_counts(db, f)
    return stats.grid_from_sums(sums, counts)


@_cached(max_entries=32)
def ranked_cells(path: str, f: q.CellFilter, significant_only: bool = True, unreviewed_only: bool = False,
                 limit: int = 500) -> pd.DataFrame:
    with reading(path) as db:
        return q.ranked_cells(db, f, significant_only=significant_only, unreviewed_only=unreviewed_only, limit=limit)


@_cached()
def review_counts(path: str, f: q.CellFilter) -> pd.DataFrame:
    with reading(path) as db:
        return q.review_counts(db, f)


@_cached(max_entries=128)
def cell(path: str, cell_id: str) -> dict | None:
    with reading(path) as db:
        return q.cell(db, cell_id)


@_cached(max_entries=128)
def sibling_cells(path: str, batch_id: str, deployment: str, article_id: str, family: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.sibling_cells(db, batch_id, deployment, article_id, family)


@_cached(max_entries=64)
def bundle(path: str, cell_id: str) -> pd.DataFrame:
    """Every response of a cell and its controls, with each one's distance from its group's centroid
    (ui.geometry.bundle_groups says which responses are compared with which)."""
    c = cell(path, cell_id)
    if c is None:
        return pd.DataFrame()
    with reading(path) as db:
        rows = q.bundle_responses(db, batch_id=c["batch_id"], deployment=c["deployment"], article_id=c["article_id"],
                                  family=c["family"], paraphrase=int(c["paraphrase"]), dimension=c["dimension"])
    vectors = [decode_embedding(b) for b in rows["embedding"]]
    groups = bundle_groups(rows["control"].tolist(), rows["sample_index"].tolist())
    rows["distance"] = pd.to_numeric(pd.Series(group_centroid_distances(groups, vectors), index=rows.index,
                                               dtype=object), errors="coerce")
    return rows.drop(columns=["embedding"])


@_cached(ttl=5)
def reviews_for_cell(path: str, cell_id: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.reviews_for_cell(db, cell_id)


@_cached()
def compare_cells(path: str, dep_a: str, dep_b: str, f: q.CellFilter) -> pd.DataFrame:
    with reading(path) as db:
        return q.compare_cells(db, dep_a, dep_b, f)


@_cached()
def search_responses(path: str, text: str, f: q.CellFilter, limit: int = 50) -> pd.DataFrame:
    with reading(path) as db:
        return q.search_responses(db, text, f, limit=limit)


@_cached()
def search_articles(path: str, text: str, limit: int = 50) -> pd.DataFrame:
    with reading(path) as db:
        return q.search_articles(db, text, limit=limit)


@_cached()
def article_cells(path: str, article_id: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.article_cells(db, article_id)


@_cached(ttl=10)
def runs(path: str, date_from: str | None, date_to: str | None) -> pd.DataFrame:
    with reading(path) as db:
        return q.runs(db, date_from=date_from, date_to=date_to)


@_cached(ttl=10)
def monitor_status(path: str) -> dict | None:
    with reading(path) as db:
        return q.monitor_status(db)


@_cached(ttl=10)
def feeds(path: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.feeds(db)


@_cached(ttl=10)
def feed_polls(path: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.feed_polls(db)


@_cached(ttl=5)
def requests(path: str) -> pd.DataFrame:
    with reading(path) as db:
        return q.requests(db)


# -- the dashboard's only writes -----------------------------------------------------------

def write_review(path: str, *, cell_id: str, verdict: str, note: str, reviewer: str, auth_method: str) -> str:
    db = review_store.open_review_writer(path)
    try:
        review_id = review_store.record_review(db, cell_id=cell_id, verdict=verdict, note=note, reviewer=reviewer,
                                               auth_method=auth_method)
    finally:
        db.conn.close()
    for fn in (reviews_for_cell, ranked_cells, review_counts):
        fn.clear()
    return review_id


def write_request(path: str, *, kind: str, args: dict | None, requested_by: str) -> str:
    db = review_store.open_review_writer(path)
    try:
        request_id = review_store.record_request(db, kind=kind, args=args, requested_by=requested_by)
    finally:
        db.conn.close()
    requests.clear()
    return request_id
