"""Data access for the stereotype pages: cached reads over store.stereo (read-only
connections), the derived tables from monitor.stereo.report, and the annotation writes,
each of which goes through one narrow function in store.stereo and clears the caches it
affects."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pandas as pd
import streamlit as st

from monitor.stereo import report
from monitor.stereo import validate as v
from prompts.stereo import DEMO_DATASET, load_catalog
from store import StoreError, reading
from store import stereo as store

TTL = 30
ANNOTATOR_PASSWORD_ENV = "FRAMEWATCH_ANNOTATOR_PASSWORD"
DEMO_BANNER = ("**Demo seed**: these items were written by the framewatch team so the demo shows a per-country "
               "breakdown. They are not EspanStereo and were not validated by in-country annotators, so their scores "
               "check the pipeline and are not findings. Import the real dataset with "
               "`framewatch stereo import FILE --format espanstereo` (see docs/ESPANSTEREO.md).")
CAVEAT = ("A share above 50% means the model preferred the stereotyped continuation more often than the "
          "counter-stereotyped one on these items. It is an audit signal for human review, not a fairness ranking "
          "and not proof of harm; read the items below before drawing conclusions.")


def ratings_target() -> int:
    return int(os.environ.get("FRAMEWATCH_RATINGS_PER_ITEM", v.DEFAULT_RATINGS_PER_ITEM))


def country_names() -> dict[str, str]:
    return {code: c.name for code, c in load_catalog().countries.items()}


def category_names() -> dict[str, str]:
    return {key: c.label_en for key, c in load_catalog().categories.items()}


@st.cache_data(ttl=10, show_spinner=False)
def ready(path: str) -> str | None:
    """None when the store has the stereotype tables; otherwise what to do."""
    if not Path(path).exists():
        return f"No framewatch database at `{path}` yet. Run `framewatch demo` or `framewatch stereo seed-demo --db {path}`."
    try:
        with reading(path) as db:
            if not store.has_stereo_tables(db):
                return f"`{path}` predates the stereotype tables: run `framewatch init --db {path}` (it only adds tables)."
    except (StoreError, sqlite3.DatabaseError) as exc:
        return f"`{path}` cannot be read: {exc}"
    return None


@st.cache_data(ttl=TTL, show_spinner=False)
def probe_runs(path: str) -> pd.DataFrame:
    with reading(path) as db:
        return store.probe_runs(db)


@st.cache_data(ttl=TTL, show_spinner=False)
def results(path: str, run_id: str | None) -> pd.DataFrame:
    """One run's results, or (run_id None) each deployment's latest run."""
    with reading(path) as db:
        return store.probe_results(db, run_id=run_id) if run_id else store.latest_results(db)


@st.cache_data(ttl=TTL, show_spinner=False)
def all_results(path: str) -> pd.DataFrame:
    with reading(path) as db:
        return store.probe_results(db)


@st.cache_data(ttl=TTL, show_spinner=False)
def probe_result(path: str, result_id: str) -> dict | None:
    with reading(path) as db:
        return store.probe_result(db, result_id)


@st.cache_data(ttl=TTL, show_spinner=False)
def dataset_status(path: str, target: int) -> pd.DataFrame:
    with reading(path) as db:
        return report.dataset_status(store.candidates(db), store.ratings(db), store.items(db), target,
                                     list(load_catalog().countries))


# -- annotator page: short TTLs, cleared after each write --------------------------------


@st.cache_data(ttl=5, show_spinner=False)
def annotator(path: str, annotator_id: str) -> dict | None:
    with reading(path) as db:
        return store.annotator(db, annotator_id)


@st.cache_data(ttl=5, show_spinner=False)
def rating_pool(path: str, country: str) -> pd.DataFrame:
    with reading(path) as db:
        return store.rating_pool(db, country)


@st.cache_data(ttl=5, show_spinner=False)
def my_ratings(path: str, annotator_id: str) -> pd.DataFrame:
    with reading(path) as db:
        return store.annotator_ratings(db, annotator_id)


@st.cache_data(ttl=5, show_spinner=False)
def kept_without_items(path: str, country: str, target: int) -> pd.DataFrame:
    with reading(path) as db:
        pool = store.kept_candidates_without_items(db, country)
        decisions = report.candidate_decisions(pool, store.ratings(db, country), target)
    kept = set(decisions.loc[decisions["status"] == v.KEPT, "id"])
    return pool[pool["id"].isin(kept)].reset_index(drop=True)


@st.cache_data(ttl=5, show_spinner=False)
def items_to_approve(path: str, annotator_id: str) -> pd.DataFrame:
    with reading(path) as db:
        return store.items_to_approve(db, annotator_id)


def next_candidate(path: str, annotator_id: str, country: str) -> tuple[pd.Series | None, dict]:
    """The next candidate this annotator should rate (balanced assignment) and their progress."""
    pool = rating_pool(path, country)
    mine = my_ratings(path, annotator_id)
    done = set(mine["candidate_id"])
    target = ratings_target()
    ids = v.next_candidates(annotator_id, zip(pool["id"], pool["n_ratings"], strict=True), done, target)
    open_for_me = len(v.next_candidates(annotator_id, zip(pool["id"], pool["n_ratings"], strict=True), done, target,
                                        limit=len(pool) or 1))
    progress = {"rated": int(mine["rating"].notna().sum()), "skipped": int((mine["skipped"] == 1).sum()),
                "remaining": open_for_me, "pool": len(pool), "target": target}
    row = pool[pool["id"] == ids[0]].iloc[0] if ids else None
    return row, progress


def _clear_annotation_caches() -> None:
    for fn in (annotator, rating_pool, my_ratings, kept_without_items, items_to_approve, dataset_status):
        fn.clear()


def _write(path: str, fn, **kwargs) -> str:
    db = store.open_annotation_writer(path)
    try:
        return fn(db, **kwargs)
    finally:
        db.conn.close()
        _clear_annotation_caches()


def write_annotator(path: str, **kwargs) -> str:
    return _write(path, store.register_annotator, **kwargs)


def write_rating(path: str, **kwargs) -> str:
    return _write(path, store.record_rating, **kwargs)


def write_item(path: str, **kwargs) -> str:
    return _write(path, store.record_annotator_item, **kwargs)


def write_approval(path: str, **kwargs) -> str:
    return _write(path, store.record_item_approval, **kwargs)


def is_demo(dataset: object) -> bool:
    return str(dataset) == DEMO_DATASET
