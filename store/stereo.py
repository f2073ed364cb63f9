"""Stereotype-probe writes and reads.

Three kinds of function live here:

- monitor-side writes (retrieval outputs, candidates, items, probe runs): idempotent
  upserts keyed by deterministic ids, one short transaction each;
- the dashboard's narrow annotation writes (onboarding, a Likert rating, an item written
  by an annotator, an approval): each validates its input, writes one row and touches no
  monitoring table, through a connection that never creates or migrates the store;
- reads returning DataFrames for the dashboard and the CLI. User-chosen values always
  travel as bound parameters.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
from sqlite_utils import Database

from monitor.ids import iso, make_id, utcnow
from monitor.stereo import validate as v
from store.db import StoreError

ITEM_DRAFT, ITEM_APPROVED, ITEM_REJECTED, ITEM_INVALID = "draft", "approved", "rejected", "invalid"
STEREO_TABLES = (
    "stereo_outputs", "stereo_candidates", "stereo_mentions", "stereo_annotators", "stereo_ratings",
    "stereo_items", "stereo_item_approvals", "stereo_probe_runs", "stereo_probe_results",
)


def _df(db: Database, sql: str, params: dict | None = None) -> pd.DataFrame:
    return pd.read_sql_query(sql, db.conn, params=params or {})


def has_stereo_tables(db: Database) -> bool:
    return all(db[t].exists() for t in STEREO_TABLES)


# ---------------------------------------------------------------- monitor-side writes


def save_output(db: Database, row: dict) -> None:
    with db.conn:
        db["stereo_outputs"].upsert(row, pk="id")


def output(db: Database, output_id: str) -> dict | None:
    rows = list(db.query("select * from stereo_outputs where id = :id", {"id": output_id}))
    return rows[0] if rows else None


def save_candidates(db: Database, rows: list[dict]) -> int:
    """Insert candidates not stored yet (by id); returns how many were new. Stored rows are never overwritten."""
    if not rows:
        return 0
    with db.conn:
        before = db["stereo_candidates"].count
        db["stereo_candidates"].insert_all(rows, pk="id", ignore=True)
        return db["stereo_candidates"].count - before


def save_mentions(db: Database, rows: list[dict]) -> None:
    if rows:
        with db.conn:
            db["stereo_mentions"].insert_all(rows, pk="id", ignore=True)


def save_items(db: Database, rows: list[dict]) -> int:
    """Insert items not stored yet; an approved or rejected item is never reset by a re-import."""
    if not rows:
        return 0
    with db.conn:
        before = db["stereo_items"].count
        db["stereo_items"].insert_all(rows, pk="id", ignore=True)
        return db["stereo_items"].count - before


def start_probe_run(db: Database, row: dict) -> None:
    with db.conn:
        db["stereo_probe_runs"].upsert(row, pk="id")


def save_probe_result(db: Database, row: dict) -> None:
    with db.conn:
        db["stereo_probe_results"].upsert(row, pk="id")


def finish_probe_run(db: Database, run_id: str, *, status: str, error: str | None = None) -> None:
    with db.conn:
        db["stereo_probe_runs"].update(run_id, {"status": status, "finished_at": iso(utcnow()), "error": error})


# ---------------------------------------------------------------- narrow annotation writes (dashboard)


def open_annotation_writer(path: str | Path) -> Database:
    """A read-write connection to an existing store for the annotation functions below only."""
    p = Path(path)
    if not p.exists():
        raise StoreError(f"{p}: no database here yet. Run `framewatch init` (or `framewatch demo --no-serve`) first.")
    conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=rw", uri=True, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    db = Database(conn)
    if not has_stereo_tables(db):
        conn.close()
        raise StoreError(f"{p}: the stereotype tables are missing; run `framewatch init --db {p}` to bring the schema up to date.")
    return db


def annotator_id(name: str, country: str) -> str:
    return make_id("annotator", " ".join(name.split()).lower(), country)


def register_annotator(db: Database, *, name: str, country: str, born_raised: bool, fluent: bool,
                       age_band: str | None = None, region: str | None = None) -> str:
    """Onboard (or sign back in) an annotator; returns their id. Demographics are optional and non-sensitive."""
    countries = [r[0] for r in db.execute("select distinct country from stereo_candidates")]
    from prompts.stereo import load_catalog

    clean = v.check_onboarding(name, country, born_raised, fluent, [*load_catalog().countries, *countries])
    if age_band and age_band not in v.AGE_BANDS:
        raise v.ValidationError(f"franja de edad desconocida {age_band!r}; elige una de {', '.join(v.AGE_BANDS)}")
    region = " ".join((region or "").split())[:80] or None
    aid = annotator_id(clean, country)
    with db.conn:
        if db["stereo_annotators"].count_where("id = ?", [aid]):
            db["stereo_annotators"].update(aid, {"age_band": age_band, "region": region})
        else:
            db["stereo_annotators"].insert(
                {"id": aid, "name": clean, "country": country, "born_raised": 1, "fluent": 1, "age_band": age_band,
                 "region": region, "created_at": iso(utcnow())}, pk="id")
    return aid


def _annotator(db: Database, aid: str) -> dict:
    rows = list(db.query("select * from stereo_annotators where id = :id", {"id": aid}))
    if not rows:
        raise v.ValidationError("anotador desconocido: completa el registro de nuevo")
    return rows[0]


def record_rating(db: Database, *, annotator_id: str, candidate_id: str, rating: int | None) -> str:
    """Store (or change) one annotator's Likert rating of one candidate; ``rating=None`` records a skip."""
    rating = v.check_rating(rating)
    who = _annotator(db, annotator_id)
    row = db.execute("select country from stereo_candidates where id = ?", [candidate_id]).fetchone()
    if row is None:
        raise v.ValidationError(f"no existe el candidato {candidate_id!r}")
    if row[0] != who["country"]:
        raise v.ValidationError("solo puedes valorar candidatos de tu propio país")
    rid = make_id("rating", annotator_id, candidate_id)
    now = iso(utcnow())
    with db.conn:
        if db["stereo_ratings"].count_where("id = ?", [rid]):
            db["stereo_ratings"].update(rid, {"rating": rating, "skipped": int(rating is None), "updated_at": now})
        else:
            db["stereo_ratings"].insert(
                {"id": rid, "annotator_id": annotator_id, "candidate_id": candidate_id, "country": row[0],
                 "rating": rating, "skipped": int(rating is None), "created_at": now, "updated_at": now}, pk="id")
    return rid


def record_annotator_item(db: Database, *, annotator_id: str, candidate_id: str, context: str,
                          stereotype_sentence: str, counter_sentence: str) -> str:
    """An item written by an annotator for a candidate of their country; it waits for another annotator's approval."""
    who = _annotator(db, annotator_id)
    cand = list(db.query("select * from stereo_candidates where id = :id", {"id": candidate_id}))
    if not cand:
        raise v.ValidationError(f"no existe el candidato {candidate_id!r}")
    cand = cand[0]
    if cand["country"] != who["country"]:
        raise v.ValidationError("solo puedes escribir ítems para estereotipos de tu propio país")
    texts = [" ".join((t or "").split()) for t in (context, stereotype_sentence, counter_sentence)]
    if not all(texts):
        raise v.ValidationError("escribe las tres frases: contexto, estereotipo y contraestereotipo")
    if texts[1] == texts[2]:
        raise v.ValidationError("la frase estereotipada y la contraestereotipada deben ser distintas")
    iid = make_id("item", candidate_id, *texts)
    with db.conn:
        db["stereo_items"].insert(
            {"id": iid, "candidate_id": candidate_id, "country": cand["country"], "category": cand["category"],
             "target_group": cand["target_group"], "stereotype": cand["text"], "context": texts[0],
             "stereotype_sentence": texts[1], "counter_sentence": texts[2], "source": "annotator",
             "dataset": cand["dataset"], "author": annotator_id, "status": ITEM_DRAFT, "created_at": iso(utcnow())},
            pk="id", ignore=True)
    return iid


def record_item_approval(db: Database, *, annotator_id: str, item_id: str, approve: bool, note: str = "") -> str:
    """An annotator of the item's country approves or rejects a draft item (not their own)."""
    who = _annotator(db, annotator_id)
    items = list(db.query("select * from stereo_items where id = :id", {"id": item_id}))
    if not items:
        raise v.ValidationError(f"no existe el ítem {item_id!r}")
    item = items[0]
    if item["country"] != who["country"]:
        raise v.ValidationError("solo puedes aprobar ítems de tu propio país")
    if item["author"] == annotator_id:
        raise v.ValidationError("otra persona del país debe aprobar los ítems que escribiste tú")
    if item["status"] != ITEM_DRAFT:
        raise v.ValidationError(f"este ítem ya está decidido ({item['status']})")
    note = (note or "").strip()[:2000]
    now = iso(utcnow())
    decision = ITEM_APPROVED if approve else ITEM_REJECTED
    aid = make_id("approval", item_id, annotator_id)
    with db.conn:
        db["stereo_item_approvals"].upsert(
            {"id": aid, "item_id": item_id, "annotator_id": annotator_id, "decision": decision, "note": note,
             "created_at": now}, pk="id")
        db["stereo_items"].update(item_id, {"status": decision, "decided_at": now})
    return aid


# ---------------------------------------------------------------- reads


def annotator(db: Database, aid: str) -> dict | None:
    if not db["stereo_annotators"].exists():
        return None
    rows = list(db.query("select * from stereo_annotators where id = :id", {"id": aid}))
    return rows[0] if rows else None


def rating_pool(db: Database, country: str) -> pd.DataFrame:
    """Candidates of ``country`` that need Likert ratings, with their count of (non-skip) ratings."""
    return _df(db, """
        select c.id, c.text, c.target_group, c.category, c.dataset,
               count(r.rating) as n_ratings
        from stereo_candidates c left join stereo_ratings r on r.candidate_id = c.id
        where c.country = :country and c.keep_rule = :rule
        group by c.id order by c.id""", {"country": country, "rule": v.RULE_MEDIAN})


def annotator_ratings(db: Database, aid: str) -> pd.DataFrame:
    return _df(db, """
        select r.candidate_id, r.rating, r.skipped, r.updated_at, c.text, c.target_group, c.category, c.country
        from stereo_ratings r join stereo_candidates c on c.id = r.candidate_id
        where r.annotator_id = :aid order by r.updated_at desc, r.candidate_id""", {"aid": aid})


def candidate(db: Database, candidate_id: str) -> dict | None:
    rows = list(db.query("select * from stereo_candidates where id = :id", {"id": candidate_id}))
    return rows[0] if rows else None


def ratings(db: Database, country: str | None = None) -> pd.DataFrame:
    where = "where r.country = :country" if country else ""
    return _df(db, f"""
        select r.annotator_id, r.candidate_id, r.country, r.rating, r.skipped
        from stereo_ratings r {where} order by r.candidate_id, r.annotator_id""", {"country": country})


def candidates(db: Database, country: str | None = None) -> pd.DataFrame:
    where = "where country = :country" if country else ""
    return _df(db, f"""
        select id, country, category, target_group, text, source, dataset, keep_rule, identity, attribute,
               votes_stereotype, votes_non_stereotype, votes_unsure, deployment, perspective, round, created_at
        from stereo_candidates {where} order by country, category, id""", {"country": country})


def items(db: Database, country: str | None = None, status: str | None = None) -> pd.DataFrame:
    clauses, params = ["1 = 1"], {}
    if country:
        clauses.append("country = :country")
        params["country"] = country
    if status:
        clauses.append("status = :status")
        params["status"] = status
    return _df(db, f"""
        select id, candidate_id, country, category, target_group, stereotype, context, stereotype_sentence,
               counter_sentence, source, dataset, author, status, error, created_at, decided_at
        from stereo_items where {' and '.join(clauses)} order by country, category, id""", params)


def items_to_approve(db: Database, aid: str) -> pd.DataFrame:
    """Draft items of the annotator's country that someone else wrote."""
    return _df(db, """
        select i.id, i.category, i.target_group, i.stereotype, i.context, i.stereotype_sentence,
               i.counter_sentence, i.source, i.author
        from stereo_items i join stereo_annotators a on a.id = :aid
        where i.country = a.country and i.status = 'draft' and coalesce(i.author, '') != :aid
        order by i.created_at, i.id""", {"aid": aid})


def kept_candidates_without_items(db: Database, country: str | None = None) -> pd.DataFrame:
    where = "and c.country = :country" if country else ""
    return _df(db, f"""
        select c.* from stereo_candidates c
        where not exists (select 1 from stereo_items i where i.candidate_id = c.id and i.status != 'invalid') {where}
        order by c.country, c.category, c.id""", {"country": country})


def probe_items(db: Database, countries: tuple[str, ...] = ()) -> list[dict]:
    """Approved items, the only ones a probe uses."""
    params: dict = {}
    where = ""
    if countries:
        names = []
        for i, c in enumerate(countries):
            params[f"c{i}"] = c
            names.append(f":c{i}")
        where = f"and country in ({', '.join(names)})"
    return list(db.query(f"select * from stereo_items where status = 'approved' {where} order by id", params))


def probe_runs(db: Database) -> pd.DataFrame:
    return _df(db, """
        select r.*, (select count(*) from stereo_probe_results p where p.run_id = r.id) as n_results
        from stereo_probe_runs r order by r.started_at desc, r.rowid desc""")


def probe_results(db: Database, run_id: str | None = None, deployment: str | None = None) -> pd.DataFrame:
    clauses, params = ["1 = 1"], {}
    if run_id:
        clauses.append("p.run_id = :run")
        params["run"] = run_id
    if deployment:
        clauses.append("p.deployment = :dep")
        params["dep"] = deployment
    return _df(db, f"""
        select p.*, r.started_at from stereo_probe_results p join stereo_probe_runs r on r.id = p.run_id
        where {' and '.join(clauses)} order by p.deployment, p.country, p.category, p.item_id""", params)


def latest_results(db: Database) -> pd.DataFrame:
    """For each deployment, the results of its most recent probe run (latest started, ties by insertion)."""
    return _df(db, """
        with last as (
            select p.deployment, max(r.rowid) as rid
            from stereo_probe_results p join stereo_probe_runs r on r.id = p.run_id
            where r.started_at = (select max(r2.started_at) from stereo_probe_runs r2
                                  join stereo_probe_results p2 on p2.run_id = r2.id where p2.deployment = p.deployment)
            group by p.deployment)
        select p.*, r.started_at from stereo_probe_results p
        join stereo_probe_runs r on r.id = p.run_id
        join last on last.deployment = p.deployment and last.rid = r.rowid
        order by p.deployment, p.country, p.category, p.item_id""")


def probe_result(db: Database, result_id: str) -> dict | None:
    rows = list(db.query("""
        select p.*, i.context, i.stereotype_sentence, i.counter_sentence, i.stereotype
        from stereo_probe_results p left join stereo_items i on i.id = p.item_id where p.id = :id""", {"id": result_id}))
    return rows[0] if rows else None
