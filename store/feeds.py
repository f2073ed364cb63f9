"""Ingest reads and writes: batches, feed polls, feed health, articles, stories, samples.

One feed poll is one transaction (poll row + new articles + feed state), so a crash
mid-cycle leaves each feed either fully recorded or not at all, and a resumed cycle
repeats only what is missing. A closed batch is never written again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlite_utils import Database

from monitor.dedup import StoryItem, global_guid
from monitor.ids import iso, parse_iso

BATCH_OPEN = "open"
BATCH_CLOSED = "closed"


class BatchClosedError(RuntimeError):
    """A write aimed at a closed batch; closed batches are immutable."""


def get_batch(db: Database, batch_id: str) -> dict | None:
    rows = list(db.query("select * from batches where id = ?", [batch_id]))
    return rows[0] if rows else None


def open_batch(db: Database, batch_id: str, label: str, opened_at: datetime) -> dict:
    with db.conn:
        db["batches"].insert(
            {"id": batch_id, "label": label, "status": BATCH_OPEN, "opened_at": iso(opened_at), "closed_at": None,
             "feeds_ok": 0, "feeds_failed": 0, "feeds_unchanged": 0, "articles": 0},
            pk="id", ignore=True,
        )
    return get_batch(db, batch_id)


def close_batch(db: Database, batch_id: str, closed_at: datetime) -> dict:
    """Count the batch's polls and articles into its row and mark it closed (once)."""
    with db.conn:
        _require_open(db, batch_id)
        counts = {s: 0 for s in ("ok", "failed", "unchanged")}
        for row in db.query("select status, count(*) as n from feed_polls where batch_id = ? group by status", [batch_id]):
            counts[row["status"]] = row["n"]
        n_articles = db.execute("select count(*) from articles where batch_id = ?", [batch_id]).fetchone()[0]
        db.execute(
            "update batches set status = ?, closed_at = ?, feeds_ok = ?, feeds_failed = ?, feeds_unchanged = ?, articles = ?"
            " where id = ? and status = ?",
            [BATCH_CLOSED, iso(closed_at), counts["ok"], counts["failed"], counts["unchanged"], n_articles, batch_id, BATCH_OPEN],
        )
    return get_batch(db, batch_id)


def _require_open(db: Database, batch_id: str) -> None:
    row = db.execute("select status from batches where id = ?", [batch_id]).fetchone()
    if row is None:
        raise BatchClosedError(f"batch {batch_id} does not exist; open it first")
    if row[0] != BATCH_OPEN:
        raise BatchClosedError(f"batch {batch_id} is {row[0]}; closed batches are immutable")


def feed_state(db: Database, feed_id: str) -> dict:
    """Validators from the last successful poll: etag, last_modified, content_hash."""
    rows = list(db.query("select etag, last_modified, content_hash from feeds where id = ?", [feed_id]))
    return rows[0] if rows else {"etag": None, "last_modified": None, "content_hash": None}


def polls_of_batch(db: Database, batch_id: str) -> list[dict]:
    return list(db.query(
        "select p.*, f.name as feed_name from feed_polls p left join feeds f on f.id = p.feed_id"
        " where p.batch_id = ? order by p.polled_at, p.id", [batch_id]))


def find_duplicates(db: Database, feed_id: str, candidates: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """For (id, canonical_link, guid) triples, the stored article each one duplicates:
    same id, same canonical link, or same guid (in the same feed, or anywhere when the guid is a URL/URN)."""
    found: dict[str, str] = {}
    for item_id, canon, guid in candidates:
        row = db.execute("select id from articles where id = ?", [item_id]).fetchone()
        if row is None and canon:
            row = db.execute("select id from articles where canonical_link = ? limit 1", [canon]).fetchone()
        if row is None and guid:
            if global_guid(guid):
                row = db.execute("select id from articles where guid = ? limit 1", [guid]).fetchone()
            else:
                row = db.execute("select id from articles where guid = ? and feed_id = ? limit 1", [guid, feed_id]).fetchone()
        if row is not None:
            found[item_id] = row[0]
    return found


@dataclass(frozen=True, slots=True)
class PollRecord:
    batch_id: str
    feed_id: str
    feed_name: str
    feed_url: str
    polled_at: datetime
    status: str
    http_status: int | None = None
    error: str | None = None
    warning: str | None = None
    fetched: int = 0
    new: int = 0
    duplicate: int = 0
    dropped: dict | None = None
    elapsed_s: float = 0.0
    bytes: int | None = None
    final_url: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_hash: str | None = None
    feed_title: str | None = None
    language: str | None = None


def poll_id(batch_id: str, feed_id: str) -> str:
    from monitor.ids import make_id

    return make_id("poll", batch_id, feed_id)


def save_poll(db: Database, poll: PollRecord, articles: Sequence[dict] = ()) -> int:
    """Record one feed's poll, its new articles and the feed's health, atomically.
    Returns the number of articles actually inserted (an article already stored is never re-assigned)."""
    dropped = poll.dropped or {}
    with db.conn:
        _require_open(db, poll.batch_id)
        before = db.execute("select count(*) from articles where batch_id = ?", [poll.batch_id]).fetchone()[0]
        if articles:
            db["articles"].insert_all(articles, pk="id", ignore=True)
        inserted = db.execute("select count(*) from articles where batch_id = ?", [poll.batch_id]).fetchone()[0] - before
        db["feed_polls"].insert(
            {"id": poll_id(poll.batch_id, poll.feed_id), "batch_id": poll.batch_id, "feed_id": poll.feed_id,
             "polled_at": iso(poll.polled_at), "status": poll.status, "http_status": poll.http_status,
             "error": poll.error, "warning": poll.warning, "fetched": poll.fetched, "new": inserted,
             "duplicate": poll.duplicate + (len(articles) - inserted), "dropped": sum(dropped.values()),
             "dropped_json": json.dumps(dropped, sort_keys=True), "elapsed_s": poll.elapsed_s, "bytes": poll.bytes,
             "final_url": poll.final_url},
            pk="id", replace=True,
        )
        _update_feed(db, poll)
    return inserted


def _update_feed(db: Database, poll: PollRecord) -> None:
    row = {"id": poll.feed_id, "name": poll.feed_name, "url": poll.feed_url, "last_polled_at": iso(poll.polled_at),
           "last_status": poll.status, "last_http_status": poll.http_status}
    if poll.status == "failed":
        row.update(last_error=poll.error, last_error_at=iso(poll.polled_at))
    else:
        row.update(last_success_at=iso(poll.polled_at))
        if poll.etag is not None or poll.status == "ok":
            row["etag"] = poll.etag
        if poll.last_modified is not None or poll.status == "ok":
            row["last_modified"] = poll.last_modified
        if poll.status == "ok":
            row.update(content_hash=poll.content_hash, feed_title=poll.feed_title, language=poll.language)
    db["feeds"].upsert(row, pk="id")


def batch_story_items(db: Database, batch_id: str, *, ungrouped: bool) -> list[StoryItem]:
    sql = "select id, title, summary, published_at, story_id from articles where batch_id = ?"
    if ungrouped:
        sql += " and story_id is null"
    return [_story_item(r) for r in db.query(sql, [batch_id])]


def recent_story_items(db: Database, since: datetime, until: datetime, limit: int = 5000) -> list[StoryItem]:
    """Grouped articles published in [since, until]: the stories new articles may join."""
    rows = db.query(
        "select id, title, summary, published_at, story_id from articles where story_id is not null"
        " and published_at >= ? and published_at <= ? order by published_at desc limit ?",
        [iso(since), iso(until), limit])
    return [_story_item(r) for r in rows]


def _story_item(r: dict) -> StoryItem:
    return StoryItem(r["id"], r["title"] or "", r["summary"] or "", parse_iso(r["published_at"]), r["story_id"])


def set_story_ids(db: Database, batch_id: str, story_ids: dict[str, str]) -> None:
    with db.conn:
        _require_open(db, batch_id)
        db.conn.executemany("update articles set story_id = ? where id = ? and batch_id = ? and story_id is null",
                       [(story, article, batch_id) for article, story in story_ids.items()])


def sample_candidates(db: Database, batch_id: str) -> list[dict]:
    return list(db.query(
        "select a.id, a.feed_id, a.story_id, a.stratum, a.published_at,"
        " exists(select 1 from articles b where b.story_id = a.story_id and b.sampled = 1 and b.batch_id != a.batch_id)"
        " as story_seen, coalesce(a.flags, '') like '%injection_like%' as injection_like"
        " from articles a where a.batch_id = ? order by a.id", [batch_id]))


def mark_sampled(db: Database, batch_id: str, chosen: dict[str, str]) -> None:
    """Exactly the ``chosen`` articles (id -> reason) of the batch are sampled; the others are not."""
    with db.conn:
        _require_open(db, batch_id)
        db.execute("update articles set sampled = 0, sample_reason = null where batch_id = ?", [batch_id])
        db.conn.executemany("update articles set sampled = 1, sample_reason = ? where id = ? and batch_id = ?",
                       [(reason, article, batch_id) for article, reason in chosen.items()])


def sampled_count(db: Database, batch_id: str) -> int:
    return db.execute("select count(*) from articles where batch_id = ? and sampled = 1", [batch_id]).fetchone()[0]


def least_sampled_stratum(db: Database, batch_id: str, strata: Sequence[str]) -> str:
    """Of ``strata``, the one with the fewest sampled articles in other batches (ties: the first)."""
    counts = {s: 0 for s in strata}
    for row in db.query("select stratum, count(*) as n from articles where sampled = 1 and batch_id != ?"
                        " group by stratum", [batch_id]):
        if row["stratum"] in counts:
            counts[row["stratum"]] = row["n"]
    return min(strata, key=lambda s: (counts[s], list(strata).index(s)))


def feed_health(db: Database, *, last_polls: int = 20) -> list[dict]:
    """Per feed, for the dashboard: its state plus, over its last ``last_polls`` polls, how many
    failed, items per successful poll, the share of items dropped and why ({reason: count}).
    Read-only; works on a mode=ro connection."""
    out = []
    for f in db.query("select * from feeds order by name"):
        polls = list(db.query(
            "select status, fetched, dropped, dropped_json, warning from feed_polls where feed_id = ?"
            " order by polled_at desc limit ?", [f["id"], last_polls]))
        parsed = [p for p in polls if p["status"] == "ok"]
        fetched = sum(p["fetched"] or 0 for p in parsed)
        reasons: dict[str, int] = {}
        for p in parsed:
            for reason, n in json.loads(p["dropped_json"] or "{}").items():
                reasons[reason] = reasons.get(reason, 0) + n
        out.append({
            "name": f["name"], "url": f["url"], "last_status": f["last_status"], "last_http_status": f.get("last_http_status"),
            "last_polled_at": f["last_polled_at"], "last_success_at": f["last_success_at"],
            "last_error": f["last_error"], "last_error_at": f["last_error_at"],
            "last_warning": next((p["warning"] for p in polls if p["warning"]), None),
            "polls": len(polls), "polls_failed": sum(p["status"] == "failed" for p in polls),
            "items_per_poll": round(fetched / len(parsed), 1) if parsed else None,
            "dropped_share": round(sum(p["dropped"] or 0 for p in parsed) / fetched, 3) if fetched else None,
            "dropped_reasons": reasons,
            "articles": db.execute("select count(*) from articles where feed_id = ?", [f["id"]]).fetchone()[0],
        })
    return out
