"""Alert rows: writes by the monitor (alerts, condition state, deliveries) and reads for the
rule evaluation and the dashboard's alerts page. The only SQL about alerts lives here.
"""

from __future__ import annotations

import pandas as pd
from sqlite_utils import Database

ALERT_TABLES = ("alerts", "alert_state", "alert_deliveries")
DELIVERED_STATUSES = ("sent", "partial", "failed", "stored")
"""Alert statuses that count towards the hourly rate limit (everything except 'rate_limited')."""


def has_alert_tables(db: Database) -> bool:
    names = set(db.table_names())
    return all(t in names for t in ALERT_TABLES)


# -- writes (monitor only) ---------------------------------------------------------------

def condition_states(db: Database, rule: str) -> dict[str, dict]:
    """Every stored condition of one rule, keyed by condition_key."""
    return {r["condition_key"]: r for r in db.query("select * from alert_state where rule = ?", [rule])}


def save_state(db: Database, state: dict) -> None:
    with db.conn:
        db["alert_state"].upsert(state, pk="condition_key")


def save_alert(db: Database, alert: dict, state: dict) -> None:
    """The alert and the condition state that now remembers it, in one transaction."""
    with db.conn:
        db["alerts"].insert(alert, pk="id", replace=True)
        db["alert_state"].upsert(state, pk="condition_key")


def save_delivery(db: Database, delivery: dict) -> None:
    with db.conn:
        db["alert_deliveries"].insert(delivery, pk="id", replace=True)


def set_alert_status(db: Database, alert_id: str, status: str) -> None:
    with db.conn:
        db["alerts"].update(alert_id, {"status": status})


def alerts_since(db: Database, since_iso: str) -> int:
    """Alerts that went (or tried to go) out since ``since_iso``: the hourly rate limit counts these."""
    marks = ", ".join("?" for _ in DELIVERED_STATUSES)
    row = db.execute(f"select count(*) from alerts where created_at >= ? and status in ({marks})",
                     [since_iso, *DELIVERED_STATUSES]).fetchone()
    return int(row[0])


# -- reads for rule evaluation -----------------------------------------------------------

def scored_batches(db: Database) -> list[dict]:
    """Batches that have cells, oldest first (the last is the one threshold rules look at).

    opened_at has one-second resolution, so insertion order (rowid) breaks ties between quick cycles."""
    return list(db.query("""
        select b.id, b.label, b.opened_at from batches b
        where exists (select 1 from cells c where c.batch_id = b.id)
        order by b.opened_at, b.rowid
    """))


def cells_of_batches(db: Database, batch_ids: list[str]) -> pd.DataFrame:
    marks = ", ".join("?" for _ in batch_ids) or "null"
    return pd.read_sql_query(
        f"""select c.*, b.label as batch_label, b.opened_at, b.rowid as batch_order from cells c
            join batches b on b.id = c.batch_id where c.batch_id in ({marks}) order by b.opened_at, b.rowid, c.id""",
        db.conn, params=list(batch_ids),
    )


def feed_status(db: Database) -> list[dict]:
    """Each feed with its last poll, last success and the start of its current run of failures."""
    return list(db.query("""
        select f.id, f.name, f.url, f.last_polled_at, f.last_success_at, f.last_status, f.last_error, f.last_error_at,
          (select p.status from feed_polls p where p.feed_id = f.id order by p.polled_at desc limit 1) as last_poll_status,
          (select p.error from feed_polls p where p.feed_id = f.id order by p.polled_at desc limit 1) as last_poll_error,
          (select p.polled_at from feed_polls p where p.feed_id = f.id order by p.polled_at desc limit 1) as last_poll_at,
          (select min(p.polled_at) from feed_polls p where p.feed_id = f.id and p.polled_at > coalesce(
              (select max(q.polled_at) from feed_polls q where q.feed_id = f.id and q.status in ('ok', 'unchanged')), ''))
            as failing_since,
          (select count(*) from feed_polls p where p.feed_id = f.id and p.polled_at > coalesce(
              (select max(q.polled_at) from feed_polls q where q.feed_id = f.id and q.status in ('ok', 'unchanged')), ''))
            as failed_polls
        from feeds f order by f.name
    """))


def latest_cycle(db: Database) -> dict | None:
    """The most recently started cycle run that has finished (a running one has no verdict yet)."""
    rows = list(db.query("""
        select id, status, stage, started_at, finished_at, batch_id, error, counts_json, skipped_json
        from runs where kind = 'cycle' and status != 'running'
        order by started_at desc, id desc limit 1
    """))
    return rows[0] if rows else None


def run_cost(db: Database, run_id: str) -> float:
    row = db.execute("select coalesce(sum(cost), 0.0) from responses where run_id = ?", [run_id]).fetchone()
    return float(row[0])


# -- reads for the dashboard -------------------------------------------------------------

def alerts(db: Database, *, rules: tuple[str, ...] = (), statuses: tuple[str, ...] = (), limit: int = 500) -> pd.DataFrame:
    """Stored alerts, newest first, with a summary of their deliveries."""
    params: list = []
    where = ["1 = 1"]
    if rules:
        where.append(f"a.rule in ({', '.join('?' for _ in rules)})")
        params.extend(rules)
    if statuses:
        where.append(f"a.status in ({', '.join('?' for _ in statuses)})")
        params.extend(statuses)
    params.append(int(limit))
    return pd.read_sql_query(f"""
        select a.id, a.created_at, a.rule, a.kind, a.severity, a.status, a.title, a.message, a.link,
               a.batch_id, a.deployment, a.dimension, a.family, a.feed, a.run_id, a.condition_key, a.data_json,
               (select group_concat(d.channel || ':' || d.status || ' x' || d.attempts, ', ')
                  from alert_deliveries d where d.alert_id = a.id) as deliveries
        from alerts a where {' and '.join(where)}
        order by a.created_at desc, a.id limit ?
    """, db.conn, params=params)


def alert_deliveries(db: Database, alert_id: str) -> pd.DataFrame:
    return pd.read_sql_query(
        "select channel, target, status, attempts, http_status, error, sent_at from alert_deliveries "
        "where alert_id = ? order by sent_at, channel", db.conn, params=[alert_id])


def active_conditions(db: Database) -> pd.DataFrame:
    """Conditions that are true now and were alerted (so they stay quiet until they clear)."""
    return pd.read_sql_query(
        "select rule, condition_key, first_seen_at, last_seen_at, last_alert_at, times_seen, last_alert_id "
        "from alert_state where active = 1 order by last_seen_at desc", db.conn)


def alert_rules_seen(db: Database) -> list[str]:
    return [r[0] for r in db.execute("select distinct rule from alerts order by rule").fetchall()]
