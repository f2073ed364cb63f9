"""Reads that select a snapshot's rows, and the writes that build its SQLite copy.

A snapshot holds chosen batches x chosen deployments: those responses, the prompts and
articles they answer, their scores and cells, the batches, runs, feeds and deployments
they belong to. Rows come back as plain dicts in the store's own types, so the SQLite copy
is row-for-row what the live store had (after scrubbing by the caller).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from sqlite_utils import Database

SNAPSHOT_TABLES = ("batches", "runs", "feeds", "deployments", "articles", "prompts", "responses", "scores", "cells")
"""Store tables a snapshot copies, in an order that keeps references pointing backwards."""
PRIMARY_KEYS = {"batches": "id", "runs": "id", "feeds": "id", "deployments": "name", "articles": "id", "prompts": "id",
                "responses": "id", "scores": "response_id", "cells": "id"}


class SelectionError(ValueError):
    """The chosen batches or deployments do not exist; the message lists what does."""


def _marks(values: Sequence) -> str:
    return ", ".join("?" for _ in values) or "null"


def resolve_batches(db: Database, refs: Sequence[str]) -> list[str]:
    """Batch ids for ``refs`` (each an id or a label), oldest first; all batches with responses when empty."""
    if not refs:
        return [r["id"] for r in db.query(
            "select b.id from batches b where exists (select 1 from responses r where r.batch_id = b.id) "
            "order by b.opened_at, b.rowid")]
    known = list(db.query("select id, label, opened_at from batches order by opened_at, rowid"))
    out = []
    for ref in refs:
        match = [b["id"] for b in known if ref in (b["id"], b["label"])]
        if not match:
            labels = ", ".join(b["label"] or b["id"] for b in known[-10:]) or "none yet"
            raise SelectionError(f"no batch with id or label {ref!r}; recent batches: {labels}")
        out.extend(m for m in match if m not in out)
    order = {b["id"]: i for i, b in enumerate(known)}
    return sorted(out, key=order.__getitem__)


def resolve_deployments(db: Database, batch_ids: Sequence[str], names: Sequence[str]) -> list[str]:
    """``names`` checked against the deployments that answered in these batches; all of them when empty."""
    present = [r["deployment"] for r in db.query(
        f"select distinct deployment from responses where batch_id in ({_marks(batch_ids)}) order by deployment",
        list(batch_ids))]
    if not names:
        return present
    missing = [n for n in names if n not in present]
    if missing:
        raise SelectionError(f"deployment(s) {missing} have no responses in the chosen batches; present: {present}")
    return list(dict.fromkeys(names))


def batch_deployments(db: Database, batch_id: str) -> list[str]:
    return [r[0] for r in db.execute("select distinct deployment from responses where batch_id = ? order by 1",
                                     [batch_id]).fetchall()]


def select_rows(db: Database, batch_ids: Sequence[str], deployments: Sequence[str]) -> dict[str, list[dict]]:
    """Every row of SNAPSHOT_TABLES that belongs to the selection."""
    b, d = list(batch_ids), list(deployments)
    sel_resp = f"r.batch_id in ({_marks(b)}) and r.deployment in ({_marks(d)})"
    resp_params = [*b, *d]

    def rows(sql: str, params: Sequence = ()) -> list[dict]:
        return list(db.query(sql, list(params)))

    out = {
        "batches": rows(f"select * from batches where id in ({_marks(b)}) order by opened_at, rowid", b),
        "runs": rows(f"select * from runs where batch_id in ({_marks(b)}) order by started_at, id", b),
        "deployments": rows(f"select * from deployments where name in ({_marks(d)}) order by name", d),
        "responses": rows(f"select r.* from responses r where {sel_resp} order by r.batch_id, r.id", resp_params),
        "prompts": rows(f"select p.* from prompts p where p.id in (select r.prompt_id from responses r where {sel_resp}) "
                        "order by p.id", resp_params),
        "scores": rows(f"select s.* from scores s where s.response_id in (select r.id from responses r where {sel_resp}) "
                       "order by s.response_id", resp_params),
        "cells": rows(f"select * from cells where batch_id in ({_marks(b)}) and deployment in ({_marks(d)}) "
                      "order by batch_id, id", [*b, *d]),
    }
    article_ids = sorted({p["article_id"] for p in out["prompts"]} | {c["article_id"] for c in out["cells"]})
    out["articles"] = rows(
        f"select * from articles where batch_id in ({_marks(b)}) or id in ({_marks(article_ids)}) order by batch_id, id",
        [*b, *article_ids])
    feed_ids = sorted({a["feed_id"] for a in out["articles"] if a["feed_id"]})
    out["feeds"] = rows(f"select * from feeds where id in ({_marks(feed_ids)}) order by name", feed_ids)
    return {t: out[t] for t in SNAPSHOT_TABLES}


@contextmanager
def consistent_read(db: Database) -> Iterator[None]:
    """One read transaction around all of a snapshot's reads: under WAL it sees a single committed state,
    so a cycle the monitor commits half-way through an export cannot mix into it."""
    if db.conn.in_transaction:
        yield
        return
    db.conn.execute("BEGIN")
    try:
        yield
    finally:
        db.conn.execute("COMMIT")


def column_types(db: Database, table: str) -> dict[str, type]:
    """Column -> Python type as declared in the live schema (int, float, str, bytes)."""
    return dict(db[table].columns_dict)


def copy_rows(db: Database, tables: dict[str, list[dict]]) -> None:
    """Insert the (already scrubbed) rows into a freshly migrated store, one transaction per table."""
    for table in SNAPSHOT_TABLES:
        records = tables.get(table) or []
        if not records:
            continue
        with db.conn:
            db[table].insert_all(records, pk=PRIMARY_KEYS[table], alter=True, replace=True, batch_size=500)
