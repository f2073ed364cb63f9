"""One ingest cycle: open a batch, fetch + parse + save every feed, group stories, sample, close.

The batch id derives from its label, so running the same cycle again returns the closed
batch untouched, and a cycle that crashed half-way resumes: feeds already polled in the
batch are not polled again. Per-feed problems are recorded as failed polls; the cycle
goes on with the others.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

from sqlite_utils import Database

from monitor import feeds as feed_mod
from monitor.config import Config, ConfigError, FeedConfig
from monitor.dedup import STORY_WINDOW, group_stories
from monitor.ids import iso, make_id, utcnow
from monitor.sampling import Candidate, choose
from monitor.strata import STRATA
from store import feeds as store
from store.writes import feed_id as feed_id_of

FETCH_WORKERS = 4
"""Fetches are I/O bound; a few in parallel keep one slow outlet from stalling the cycle."""


@dataclass(frozen=True, slots=True)
class FeedReport:
    name: str
    status: str
    """ok | unchanged | failed"""
    fetched: int
    new: int
    duplicate: int
    failed_reason: str | None
    dropped: int = 0
    warning: str | None = None


@dataclass(frozen=True, slots=True)
class IngestReport:
    batch_id: str
    feeds: tuple[FeedReport, ...]
    new_articles: int
    sampled_articles: int
    label: str = ""
    resumed: bool = False
    """True when the batch was already closed (nothing was changed) or was resumed after a crash."""


def batch_label(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def batch_id_for(label: str) -> str:
    return make_id("batch", label)


def run_ingest(db: Database, cfg: Config, *, feeds: Sequence[FeedConfig] | None = None, now: datetime | None = None,
               label: str | None = None, client=None,
               on_feed: Callable[[FeedReport], None] | None = None) -> IngestReport:
    now = now or utcnow()
    label = label or batch_label(now)
    batch_id = batch_id_for(label)
    selected = [f for f in (cfg.feeds if feeds is None else feeds) if f.enabled]
    check_feeds(selected)  # a malformed url is a configuration error: fail before opening a batch
    existing = store.get_batch(db, batch_id)
    if existing and existing["status"] == store.BATCH_CLOSED:
        return _report_from_store(db, batch_id, label, [f.name for f in selected], resumed=True)
    store.open_batch(db, batch_id, label, now)
    done = {p["feed_id"] for p in store.polls_of_batch(db, batch_id)}
    todo = [f for f in selected if feed_id_of(f.name) not in done]
    # Validators are read here, on the writer's thread; the workers only touch the network.
    states = {f.name: store.feed_state(db, feed_id_of(f.name)) if _is_http(f) else {} for f in todo}
    with ThreadPoolExecutor(max_workers=FETCH_WORKERS) as pool:
        futures = [pool.submit(_fetch, cfg, f, states[f.name], client) for f in todo]
        for f, fut in zip(todo, futures, strict=True):
            report = _save(db, cfg, batch_id, f, fut.result())
            if on_feed:
                on_feed(report)
    _group(db, batch_id)
    _sample(db, cfg, batch_id)
    store.close_batch(db, batch_id, utcnow())
    return _report_from_store(db, batch_id, label, [f.name for f in selected], resumed=bool(existing))


def _fetch(cfg: Config, f: FeedConfig, state: dict, client) -> feed_mod.FetchResult:
    try:
        return feed_mod.fetch(f.url, cfg.fetch, etag=state.get("etag"), last_modified=state.get("last_modified"), client=client)
    except Exception as exc:  # noqa: BLE001 - one feed's surprise must not end the cycle for the others
        return feed_mod.FetchResult(f.url, f.url, feed_mod.FAILED, utcnow(), error=f"unexpected error: {type(exc).__name__}: {exc}"[:300])


def _is_http(f: FeedConfig) -> bool:
    return isinstance(feed_mod.resolve_source(f.url), str)


def _save(db: Database, cfg: Config, batch_id: str, f: FeedConfig, fetched: feed_mod.FetchResult) -> FeedReport:
    fid = feed_id_of(f.name)
    base = dict(batch_id=batch_id, feed_id=fid, feed_name=f.name, feed_url=f.url, polled_at=fetched.fetched_at,
                http_status=fetched.http_status, elapsed_s=fetched.elapsed_s, final_url=fetched.final_url,
                etag=fetched.etag, last_modified=fetched.last_modified)
    if fetched.status == feed_mod.FAILED:
        store.save_poll(db, store.PollRecord(status=feed_mod.FAILED, error=fetched.error, **base))
        return FeedReport(f.name, feed_mod.FAILED, 0, 0, 0, fetched.error)
    if fetched.status == feed_mod.UNCHANGED or fetched.content_hash == store.feed_state(db, fid).get("content_hash"):
        store.save_poll(db, store.PollRecord(status=feed_mod.UNCHANGED, bytes=_size(fetched), **base))
        return FeedReport(f.name, feed_mod.UNCHANGED, 0, 0, 0, None)
    parsed = feed_mod.parse(
        fetched.content, feed_id=fid, fetched_at=fetched.fetched_at, content_type=fetched.content_type,
        base_url=fetched.final_url, default_language=f.language,
        title_max=cfg.fetch.title_max_chars, summary_max=cfg.fetch.summary_max_chars,
    )
    if not parsed.ok:
        store.save_poll(db, store.PollRecord(status=feed_mod.FAILED, error=parsed.error, bytes=_size(fetched), **base))
        return FeedReport(f.name, feed_mod.FAILED, 0, 0, 0, parsed.error)
    dupes = store.find_duplicates(db, fid, [(i.id, i.canonical_link, i.guid) for i in parsed.items])
    fresh = [i for i in parsed.items if i.id not in dupes]
    dropped: dict[str, int] = {}
    for reason, _detail in parsed.dropped:
        dropped[reason] = dropped.get(reason, 0) + 1
    in_feed_dupes = dropped.pop("duplicate_in_feed", 0)
    poll = store.PollRecord(
        status=feed_mod.OK, warning=parsed.warning, fetched=parsed.entries, duplicate=len(dupes) + in_feed_dupes,
        dropped=dropped, bytes=_size(fetched), content_hash=fetched.content_hash, feed_title=parsed.title,
        language=parsed.language, **base,
    )
    new = store.save_poll(db, poll, [_row(i, batch_id) for i in fresh])
    return FeedReport(f.name, feed_mod.OK, parsed.entries, new, poll.duplicate + len(fresh) - new, None,
                      dropped=sum(dropped.values()), warning=parsed.warning)


def _size(fetched: feed_mod.FetchResult) -> int | None:
    return len(fetched.content) if fetched.content is not None else None


def _row(item: feed_mod.FeedItem, batch_id: str) -> dict:
    return {
        "id": item.id, "feed_id": item.feed_id, "batch_id": batch_id, "guid": item.guid, "link": item.link,
        "canonical_link": item.canonical_link, "title": item.title, "summary": item.summary,
        "published_at": iso(item.published_at), "fetched_at": iso(item.fetched_at), "date_missing": int(item.date_missing),
        "language": item.language, "language_declared": item.language_declared, "stratum": item.stratum,
        "story_id": None, "flags": json.dumps(list(item.flags)), "sampled": 0, "sample_reason": None,
        "stratum_topics": json.dumps(list(item.stratum_topics)), "stratum_terms": json.dumps(list(item.stratum_terms)),
        "stratum_version": item.stratum_version,
    }


def _group(db: Database, batch_id: str) -> None:
    new = store.batch_story_items(db, batch_id, ungrouped=True)
    if not new:
        return
    since = min(i.published_at for i in new) - STORY_WINDOW
    until = max(i.published_at for i in new) + STORY_WINDOW
    store.set_story_ids(db, batch_id, group_stories(new, store.recent_story_items(db, since, until)))


def _sample(db: Database, cfg: Config, batch_id: str) -> None:
    per_batch = cfg.grid.articles_per_batch
    if cfg.budget.max_articles_per_cycle is not None:
        per_batch = min(per_batch, cfg.budget.max_articles_per_cycle)
    candidates = [Candidate(r["id"], r["feed_id"], r["story_id"] or r["id"], r["stratum"], r["published_at"],
                            bool(r["story_seen"]), bool(r["injection_like"])) for r in store.sample_candidates(db, batch_id)]
    chosen = choose(candidates, per_batch=per_batch, per_feed=cfg.grid.articles_per_feed, balance=cfg.grid.balance_strata,
                    first=store.least_sampled_stratum(db, batch_id, STRATA))
    store.mark_sampled(db, batch_id, chosen)


def _report_from_store(db: Database, batch_id: str, label: str, order: list[str], *, resumed: bool) -> IngestReport:
    reports = []
    for p in store.polls_of_batch(db, batch_id):
        dropped = json.loads(p["dropped_json"] or "{}")
        reports.append(FeedReport(p["feed_name"] or p["feed_id"], p["status"], p["fetched"] or 0, p["new"] or 0,
                                  p["duplicate"] or 0, p["error"], sum(dropped.values()), p.get("warning")))
    rank = {name: i for i, name in enumerate(order)}
    reports.sort(key=lambda r: rank.get(r.name, len(rank)))
    new = db.execute("select count(*) from articles where batch_id = ?", [batch_id]).fetchone()[0]
    return IngestReport(batch_id, tuple(reports), new, store.sampled_count(db, batch_id), label, resumed)


def check_feeds(feeds: Sequence[FeedConfig]) -> None:
    """Raise ConfigError for a feed url that can never work (bad scheme, malformed sample:N)."""
    for f in feeds:
        try:
            feed_mod.resolve_source(f.url)
        except ConfigError as exc:
            raise ConfigError(f"feeds: {f.name!r}: {exc}") from exc


def format_feed_line(r: FeedReport) -> str:
    """One line per feed for the CLI: fetched / new / duplicate / failed (with the reason)."""
    if r.status == feed_mod.FAILED:
        return f"{r.name:<24} failed: {r.failed_reason}"
    head = f"{r.name:<24} {r.status:<9}"
    line = f"{head} fetched {r.fetched:>4}  new {r.new:>4}  duplicate {r.duplicate:>4}  dropped {r.dropped:>3}"
    return line + (f"  ({r.warning})" if r.warning else "")
