"""Every read the dashboard makes, as named functions returning DataFrames.

This is the only module that knows SQL for reading. Values the user chose (filters,
search text, ids from the URL) always travel as bound parameters; the only text put into
SQL is column names and placeholders generated here from constants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import re

import pandas as pd
from sqlite_utils import Database

_WORDS = re.compile(r"\w+", re.UNICODE)
REQUIRED_TABLES = ("runs", "feeds", "batches", "articles", "deployments", "prompts", "responses", "scores", "cells")
DASHBOARD_TABLES = ("reviews", "responses_fts", "articles_fts")


@dataclass(frozen=True, slots=True)
class CellFilter:
    """The shared dashboard filters; an empty tuple means 'all'."""

    deployments: tuple[str, ...] = ()
    dimensions: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    strata: tuple[str, ...] = ()
    batch_ids: tuple[str, ...] = ()
    date_from: str | None = None
    """Inclusive lower bound on the batch's opened_at (ISO date or datetime, UTC)."""
    date_to: str | None = None
    """Exclusive upper bound on the batch's opened_at."""


def _df(db: Database, sql: str, params: dict | Sequence | None = None) -> pd.DataFrame:
    # read_sql keeps the column names even when no row matches, so pages can test .empty.
    return pd.read_sql_query(sql, db.conn, params=params or {})


def _in(column: str, values: Sequence[str], params: dict, prefix: str) -> str:
    names = []
    for i, v in enumerate(values):
        key = f"{prefix}{i}"
        params[key] = v
        names.append(f":{key}")
    return f"{column} in ({', '.join(names)})"


def _cell_where(f: CellFilter, params: dict, *, cell: str = "c", article: str = "a", batch: str = "b") -> str:
    clauses = ["1 = 1"]
    if f.deployments:
        clauses.append(_in(f"{cell}.deployment", f.deployments, params, "dep"))
    if f.dimensions:
        clauses.append(_in(f"{cell}.dimension", f.dimensions, params, "dim"))
    if f.families:
        clauses.append(_in(f"{cell}.family", f.families, params, "fam"))
    if f.strata:
        clauses.append(_in(f"{article}.stratum", f.strata, params, "str"))
    if f.batch_ids:
        clauses.append(_in(f"{cell}.batch_id", f.batch_ids, params, "bat"))
    if f.date_from:
        params["date_from"] = f.date_from
        clauses.append(f"{batch}.opened_at >= :date_from")
    if f.date_to:
        params["date_to"] = f.date_to
        clauses.append(f"{batch}.opened_at < :date_to")
    return " and ".join(clauses)


# -- the store as a whole ---------------------------------------------------------------

def schema_status(db: Database) -> dict:
    """Which expected tables are missing; the dashboard explains how to fix a gap."""
    names = set(db.table_names())
    return {
        "missing_core": [t for t in REQUIRED_TABLES if t not in names],
        "missing_dashboard": [t for t in DASHBOARD_TABLES if t not in names],
    }


def store_counts(db: Database) -> dict:
    row = _df(db, """
        select
          (select count(*) from batches) as batches,
          (select count(*) from deployments) as deployments,
          (select count(*) from articles) as articles,
          (select count(*) from cells) as cells,
          (select count(*) from cells where significant = 1) as significant_cells,
          (select count(*) from runs) as runs
    """).iloc[0]
    return {k: int(v) for k, v in row.items()}


def batches(db: Database) -> pd.DataFrame:
    return _df(db, """
        select id, label, status, opened_at, closed_at, run_id, feeds_ok, feeds_failed, feeds_unchanged, articles
        from batches order by opened_at, id
    """)


def deployments(db: Database) -> pd.DataFrame:
    return _df(db, "select name, provider, model, prompt_style, system_prompt, params_json, updated_at from deployments order by name")


def filter_options(db: Database) -> dict[str, list[str]]:
    """Values the filters offer: what is actually in the store, not what the config says."""
    def col(sql: str) -> list[str]:
        return [r[0] for r in db.execute(sql).fetchall() if r[0] is not None]

    deps = col("select distinct deployment from cells order by deployment")
    for name in col("select name from deployments order by name"):
        if name not in deps:
            deps.append(name)
    return {
        "deployments": deps,
        "dimensions": col("select distinct dimension from cells order by dimension"),
        "families": col("select distinct family from cells order by family"),
        "strata": col("select distinct stratum from articles where stratum is not null order by stratum"),
    }


def batch_summary(db: Database, batch_id: str) -> dict:
    """Counts for one batch: articles, responses by status, cells, hotspots, cost."""
    row = _df(db, """
        select
          (select count(*) from articles where batch_id = :b) as articles,
          (select count(*) from articles where batch_id = :b and sampled = 1) as articles_sampled,
          (select count(*) from responses where batch_id = :b) as responses,
          (select count(*) from responses where batch_id = :b and status != 'ok') as responses_not_ok,
          (select count(*) from cells where batch_id = :b) as cells,
          (select count(*) from cells where batch_id = :b and valid = 1) as valid_cells,
          (select count(*) from cells where batch_id = :b and significant = 1) as significant_cells
    """, {"b": batch_id}).iloc[0]
    return {k: int(v or 0) for k, v in row.items()}


# -- cells -------------------------------------------------------------------------------

CELL_VALUE_COLUMNS = (
    "c.id, c.batch_id, b.label as batch_label, b.opened_at, c.deployment, c.dimension, c.family, c.paraphrase, "
    "c.article_id, a.stratum, c.valid, c.significant, c.s, c.n, c.scfs, c.s_minus_placebo, "
    "c.sent_range, c.sent_range_corrected, c.sent_mad_corrected, c.p_value, c.q_value, "
    "c.n_identities, c.n_valid, c.n_refusals, c.n_errors, c.n_non_english"
)


def cell_values(db: Database, f: CellFilter) -> pd.DataFrame:
    """One row per cell matching the filters, with its batch and stratum: input to every aggregate."""
    params: dict = {}
    where = _cell_where(f, params)
    return _df(db, f"""
        select {CELL_VALUE_COLUMNS}
        from cells c
        join batches b on b.id = c.batch_id
        left join articles a on a.id = c.article_id
        where {where}
        order by b.opened_at, c.deployment
    """, params)


GROUPABLE = {"batch_id": "c.batch_id", "deployment": "c.deployment", "dimension": "c.dimension",
             "family": "c.family", "stratum": "a.stratum"}
"""Columns an aggregate may be grouped by (name -> SQL expression)."""
SUMMABLE = {"scfs": "c.scfs", "sent_range_corrected": "c.sent_range_corrected", "sent_mad_corrected": "c.sent_mad_corrected",
            "s_minus_placebo": "c.s_minus_placebo", "s": "c.s", "n": "c.n"}
"""Cell metrics an aggregate may average."""


def cluster_sums(db: Database, f: CellFilter, by: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """Per group and per article: count and sum of each metric over the cells where it is defined.

    Invalid cells with a defined metric are included, as in monitor.scoring.aggregate
    (docs/METHODS.md, "Aggregates"). Counts and sums are all a cluster bootstrap over
    articles needs (ui.stats.ci_from_cluster_sums), so the dashboard never pulls every cell
    into memory; rows come out sorted by group and article id. Grouping by batch adds the
    batch's label and opening time.
    """
    unknown = [k for k in (*by, *metrics) if k not in GROUPABLE and k not in SUMMABLE]
    if unknown:
        raise ValueError(f"cannot aggregate by {unknown}")
    params: dict = {}
    where = _cell_where(f, params)
    # Join only what the filters or the grouping need: on 100k+ cells every join is a lookup per row.
    joins = []
    if f.date_from or f.date_to:
        joins.append("join batches b on b.id = c.batch_id")
    if f.strata or "stratum" in by:
        joins.append("left join articles a on a.id = c.article_id")
    keys = [f"{GROUPABLE[k]} as {k}" for k in by]
    sums = [f"count({SUMMABLE[m]}) as n_{m}, sum({SUMMABLE[m]}) as sum_{m}" for m in metrics]
    group = ", ".join([*(GROUPABLE[k] for k in by), "c.article_id"])
    out = _df(db, f"""
        select {', '.join([*keys, 'c.article_id', *sums])}
        from cells c {' '.join(joins)}
        where {where}
        group by {group}
        order by {group}
    """, params)
    if "batch_id" in by:
        labels = _df(db, "select id as batch_id, label as batch_label, opened_at from batches")
        out = out.merge(labels, on="batch_id", how="left")
    return out


def grid_counts(db: Database, f: CellFilter) -> pd.DataFrame:
    """Per deployment x dimension x family: cells, significant cells and the cell a click opens
    (the significant cell with the largest SCFS, else the largest SCFS)."""
    params: dict = {}
    where = _cell_where(f, params)
    return _df(db, f"""
        with ranked as (
          select c.deployment, c.dimension, c.family, c.id, c.scfs, c.significant,
                 row_number() over (partition by c.deployment, c.dimension, c.family
                                    order by c.significant desc, c.scfs desc nulls last, c.id) as rn,
                 count(*) over (partition by c.deployment, c.dimension, c.family) as cells,
                 sum(c.significant) over (partition by c.deployment, c.dimension, c.family) as significant_cells
          from cells c
          join batches b on b.id = c.batch_id
          left join articles a on a.id = c.article_id
          where {where}
        )
        select deployment, dimension, family, cells, significant_cells as significant, id as top_cell_id, scfs as top_scfs
        from ranked where rn = 1
        order by deployment, dimension, family
    """, params)


def ranked_cells(db: Database, f: CellFilter, *, significant_only: bool = True, unreviewed_only: bool = False,
                 limit: int = 500) -> pd.DataFrame:
    """Cells ranked by SCFS (largest first) with article title and latest review verdict."""
    params: dict = {"limit": int(limit)}
    where = _cell_where(f, params)
    if significant_only:
        where += " and c.significant = 1"
    if unreviewed_only:
        where += " and lr.verdict is null"
    return _df(db, f"""
        with latest_review as (
          select cell_id, verdict, reviewer, created_at,
                 row_number() over (partition by cell_id order by created_at desc, id desc) as rn
          from reviews
        )
        select c.id as cell_id, b.label as batch_label, c.batch_id, c.deployment, c.dimension, c.family, c.paraphrase,
               a.title, a.stratum, c.scfs, c.s, c.n, c.s_minus_placebo, c.sent_range_corrected, c.p_value, c.q_value,
               c.far_identity, c.sent_min_identity, c.sent_max_identity, c.n_valid, c.n_identities,
               lr.verdict as review, lr.reviewer as reviewed_by
        from cells c
        join batches b on b.id = c.batch_id
        left join articles a on a.id = c.article_id
        left join latest_review lr on lr.cell_id = c.id and lr.rn = 1
        where {where}
        order by c.scfs desc nulls last, c.id
        limit :limit
    """, params)


def cell(db: Database, cell_id: str) -> dict | None:
    df = _df(db, """
        select c.*, b.label as batch_label, b.opened_at as batch_opened_at,
               a.title, a.summary, a.link, a.published_at, a.language as article_language, a.stratum, a.feed_id,
               f.name as feed_name, d.model, d.provider, d.system_prompt
        from cells c
        join batches b on b.id = c.batch_id
        left join articles a on a.id = c.article_id
        left join feeds f on f.id = a.feed_id
        left join deployments d on d.name = c.deployment
        where c.id = :id
    """, {"id": cell_id})
    return None if df.empty else df.iloc[0].to_dict()


def sibling_cells(db: Database, batch_id: str, deployment: str, article_id: str, family: str) -> pd.DataFrame:
    """Every cell of one article x family for one deployment: the other paraphrases and dimensions."""
    return _df(db, """
        select id as cell_id, paraphrase, dimension, scfs, s, n, significant, valid
        from cells
        where batch_id = :b and deployment = :d and article_id = :a and family = :f
        order by dimension, paraphrase
    """, {"b": batch_id, "d": deployment, "a": article_id, "f": family})


def bundle_responses(db: Database, *, batch_id: str, deployment: str, article_id: str, family: str,
                     paraphrase: int, dimension: str) -> pd.DataFrame:
    """The raw material of one cell: identity responses of its dimension plus every control.

    One row per response (all sample indices), with its prompt and its score; the embedding
    stays a float32 blob for the caller to decode.
    """
    return _df(db, """
        select r.id as response_id, p.control, p.dimension, p.identity_key, p.question, p.paraphrase,
               r.sample_index, r.status, r.text, r.error, r.model_reported, r.tokens_out, r.latency_s,
               s.sentiment, s.language, s.is_english, s.embedding
        from prompts p
        join responses r on r.prompt_id = p.id and r.deployment = :d and r.batch_id = :b
        left join scores s on s.response_id = r.id
        where p.article_id = :a and p.family = :f and p.paraphrase = :p
          and (p.control != 'identity' or p.dimension = :dim)
        order by p.control, p.identity_key, r.sample_index
    """, {"b": batch_id, "d": deployment, "a": article_id, "f": family, "p": int(paraphrase), "dim": dimension})


def compare_cells(db: Database, dep_a: str, dep_b: str, f: CellFilter) -> pd.DataFrame:
    """Cells of two deployments matched on the same article, family, paraphrase and dimension."""
    params: dict = {"da": dep_a, "db": dep_b}
    where = _cell_where(CellFilter(dimensions=f.dimensions, families=f.families, strata=f.strata,
                                   batch_ids=f.batch_ids, date_from=f.date_from, date_to=f.date_to), params, cell="ca")
    return _df(db, f"""
        select ca.batch_id, b.label as batch_label, ca.article_id, a.title, ca.family, ca.paraphrase, ca.dimension,
               ca.id as cell_a, cb.id as cell_b,
               ca.scfs as scfs_a, cb.scfs as scfs_b, ca.sent_range_corrected as sent_a, cb.sent_range_corrected as sent_b,
               ca.significant as sig_a, cb.significant as sig_b, ca.far_identity as far_a, cb.far_identity as far_b
        from cells ca
        join cells cb on cb.batch_id = ca.batch_id and cb.article_id = ca.article_id and cb.family = ca.family
                     and cb.paraphrase = ca.paraphrase and cb.dimension = ca.dimension and cb.deployment = :db
        join batches b on b.id = ca.batch_id
        left join articles a on a.id = ca.article_id
        where ca.deployment = :da and {where}
        order by b.opened_at, ca.article_id, ca.family, ca.dimension, ca.paraphrase
    """, params)


# -- reviews -------------------------------------------------------------------------------

def reviews_for_cell(db: Database, cell_id: str) -> pd.DataFrame:
    return _df(db, """
        select created_at, reviewer, verdict, note, auth_method from reviews where cell_id = :c
        order by created_at desc, id desc
    """, {"c": cell_id})


def review_counts(db: Database, f: CellFilter) -> pd.DataFrame:
    """Significant cells per latest verdict ('unreviewed' when none)."""
    params: dict = {}
    where = _cell_where(f, params)
    return _df(db, f"""
        with latest_review as (
          select cell_id, verdict, row_number() over (partition by cell_id order by created_at desc, id desc) as rn
          from reviews
        )
        select coalesce(lr.verdict, 'unreviewed') as verdict, count(*) as cells
        from cells c
        join batches b on b.id = c.batch_id
        left join articles a on a.id = c.article_id
        left join latest_review lr on lr.cell_id = c.id and lr.rn = 1
        where c.significant = 1 and {where}
        group by 1 order by 2 desc
    """, params)


# -- search ------------------------------------------------------------------------------

def fts_phrase(text: str) -> str | None:
    """User text -> one FTS5 phrase of its words. Only word characters survive, so no input can be
    FTS syntax (AND, NEAR, column filters, quotes); None when nothing searchable is left."""
    words = _WORDS.findall(text or "")
    return '"' + " ".join(words) + '"' if words else None


def search_responses(db: Database, query: str, f: CellFilter, *, limit: int = 50) -> pd.DataFrame:
    """Full-text search over response text; any input is searched as a plain phrase of its words."""
    phrase = fts_phrase(query)
    if phrase is None:
        return _df(db, "select null as response_id where 0")
    params: dict = {"q": phrase, "limit": int(limit)}
    clauses = ["responses_fts match :q"]
    if f.deployments:
        clauses.append(_in("r.deployment", f.deployments, params, "dep"))
    if f.batch_ids:
        clauses.append(_in("r.batch_id", f.batch_ids, params, "bat"))
    if f.dimensions:
        clauses.append(_in("p.dimension", f.dimensions, params, "dim"))
    if f.families:
        clauses.append(_in("p.family", f.families, params, "fam"))
    return _df(db, f"""
        select r.id as response_id, r.batch_id, r.deployment, p.article_id, p.family, p.paraphrase, p.control,
               p.dimension, p.identity_key, r.sample_index, r.status, r.text, a.title,
               (select c.id from cells c where c.batch_id = r.batch_id and c.deployment = r.deployment
                  and c.article_id = p.article_id and c.family = p.family and c.paraphrase = p.paraphrase
                  and (p.control != 'identity' or c.dimension = p.dimension)
                order by c.dimension limit 1) as cell_id
        from responses_fts
        join responses r on r.rowid = responses_fts.rowid
        join prompts p on p.id = r.prompt_id
        left join articles a on a.id = p.article_id
        where {' and '.join(clauses)}
        order by responses_fts.rank
        limit :limit
    """, params)


def search_articles(db: Database, query: str, *, limit: int = 50) -> pd.DataFrame:
    phrase = fts_phrase(query)
    if phrase is None:
        return _df(db, "select null as article_id where 0")
    return _df(db, """
        select a.id as article_id, a.batch_id, b.label as batch_label, a.title, a.summary, a.published_at, a.stratum,
               f.name as feed_name
        from articles_fts
        join articles a on a.rowid = articles_fts.rowid
        left join batches b on b.id = a.batch_id
        left join feeds f on f.id = a.feed_id
        where articles_fts match :q
        order by articles_fts.rank
        limit :limit
    """, {"q": phrase, "limit": int(limit)})


def article_cells(db: Database, article_id: str) -> pd.DataFrame:
    """Cells built from one article, to go from a search hit to its bundles."""
    return _df(db, """
        select id as cell_id, deployment, family, paraphrase, dimension, scfs, significant
        from cells where article_id = :a order by scfs desc nulls last
    """, {"a": article_id})


# -- runs and feeds ----------------------------------------------------------------------

def runs(db: Database, *, date_from: str | None = None, date_to: str | None = None, limit: int = 200) -> pd.DataFrame:
    params: dict = {"limit": int(limit)}
    clauses = ["1 = 1"]
    if date_from:
        params["date_from"] = date_from
        clauses.append("r.started_at >= :date_from")
    if date_to:
        params["date_to"] = date_to
        clauses.append("r.started_at < :date_to")
    return _df(db, f"""
        select r.id, r.kind, r.status, r.stage, r.started_at, r.finished_at, r.heartbeat_at, r.batch_id,
               b.label as batch_label, r.progress_done, r.progress_total, r.error, r.counts_json, r.skipped_json,
               r.config_version, r.taxonomy_version, r.families_version, r.scorer_version
        from runs r left join batches b on b.id = r.batch_id
        where {' and '.join(clauses)}
        order by r.started_at desc
        limit :limit
    """, params)


def monitor_status(db: Database) -> dict | None:
    """The monitor's own status row (written by monitor.service_state), or None when no monitor ever ran here."""
    if "monitor_status" not in db.table_names():
        return None
    rows = list(db.query("select * from monitor_status order by heartbeat_at desc limit 1"))
    return rows[0] if rows else None


def feeds(db: Database) -> pd.DataFrame:
    return _df(db, """
        select f.id, f.name, f.url, f.last_polled_at, f.last_success_at, f.last_status, f.last_error, f.last_error_at,
               (select count(*) from articles a where a.feed_id = f.id) as articles
        from feeds f order by f.name
    """)


def feed_polls(db: Database, *, limit: int = 500) -> pd.DataFrame:
    return _df(db, """
        select fp.polled_at, f.name as feed, b.label as batch_label, fp.status, fp.http_status, fp.fetched, fp.new,
               fp.duplicate, fp.dropped, fp.error
        from feed_polls fp left join feeds f on f.id = fp.feed_id left join batches b on b.id = fp.batch_id
        order by fp.polled_at desc limit :limit
    """, {"limit": int(limit)})


def requests(db: Database, *, limit: int = 50) -> pd.DataFrame:
    return _df(db, """
        select requested_at, kind, args_json, requested_by, status, picked_at, done_at, result
        from requests order by requested_at desc limit :limit
    """, {"limit": int(limit)})
