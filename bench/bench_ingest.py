"""Ingest throughput: parse (pure) and a whole ingest cycle over the real feeds in ../shared/data/feeds.

No target in the issue; this records what one cycle costs so a regression shows up. The
cycle serves every feed from a loopback HTTP server (the real fetch path: httpx, limits,
conditional GET), stores into a fresh SQLite file, groups stories and samples; the second
cycle shows the cost of polling unchanged feeds (304).

    .venv/bin/python bench/bench_ingest.py
"""

from __future__ import annotations

import platform
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monitor import config, feeds  # noqa: E402
from monitor.config import FeedConfig  # noqa: E402
from monitor.ingest import run_ingest  # noqa: E402
from monitor.testing.feed_server import FeedServer, Route  # noqa: E402
from store import open_writer  # noqa: E402

SHARED_FEEDS = Path(__file__).resolve().parents[2] / "shared" / "data" / "feeds"


def main() -> int:
    if not SHARED_FEEDS.is_dir():
        print(f"{SHARED_FEEDS} is absent: nothing to measure")
        return 0
    files = sorted(SHARED_FEEDS.iterdir())
    payloads = {f.name: f.read_bytes() for f in files}
    now = datetime.now(UTC)
    feeds.parse(payloads[files[0].name], feed_id="warm", fetched_at=now)  # langdetect loads its profiles once
    t0 = time.perf_counter()
    items = sum(len(feeds.parse(b, feed_id=n, fetched_at=now).items) for n, b in payloads.items())
    parse_s = time.perf_counter() - t0

    routes = {f"/{n}": Route(body=b, etag=f'"{n}"') for n, b in payloads.items()}
    with tempfile.TemporaryDirectory() as tmp, FeedServer(routes) as srv:
        cfg = config.load(None, db_path=Path(tmp) / "bench.db")
        cfg = replace(cfg, feeds=tuple(FeedConfig(n, srv.url(f"/{n}")) for n in payloads))
        db = open_writer(cfg.db_path)
        t1 = time.perf_counter()
        first = run_ingest(db, cfg, label="bench-1")
        cycle_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        second = run_ingest(db, cfg, label="bench-2")
        unchanged_s = time.perf_counter() - t2
        stories = db.execute("select count(distinct story_id) from articles").fetchone()[0]
    mb = sum(len(b) for b in payloads.values()) / 1e6
    print(f"machine: {platform.machine()} {platform.system()} Python {platform.python_version()}, date {now:%Y-%m-%d}")
    print(f"parse: {len(files)} files, {mb:.2f} MB, {items} items in {parse_s:.2f} s = {items / parse_s:.0f} items/s")
    print(f"cycle 1: {first.new_articles} new articles, {stories} stories, {first.sampled_articles} sampled, "
          f"{sum(f.status == 'failed' for f in first.feeds)} failed feeds, {cycle_s:.2f} s")
    print(f"cycle 2: {[f.status for f in second.feeds].count('unchanged')}/{len(second.feeds)} unchanged, "
          f"{second.new_articles} new, {unchanged_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
