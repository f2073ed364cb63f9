"""Helpers for the monitor service tests: a config on the scripted provider, a feed that grows, a monitor process."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from email.utils import format_datetime
from pathlib import Path

from monitor.ids import utcnow
from scripted_config import scripted_toml

REPO = Path(__file__).resolve().parents[1]

SCHEDULE = """
[schedule]
cycle_minutes = {minutes}
request_poll_s = 0.5
stop_grace_s = {grace}
misfire_grace_s = 30
{extra}
"""

def write_config(tmp: Path, *, minutes: float = 0.05, articles: int = 2, grace: float = 10, extra: str = "") -> Path:
    feed = tmp / "feed.xml"
    if not feed.exists():
        write_feed(feed, 0, 4)
    path = tmp / "framewatch.toml"
    schedule = SCHEDULE.format(minutes=minutes, grace=grace, extra=extra)
    path.write_text(scripted_toml(feed=feed.as_uri(), feed_name="growing", articles=articles, permutations=99,
                                  bootstrap=100, tail=schedule), encoding="utf-8")
    return path


_SYLLABLES = ["ka", "lo", "mi", "ren", "tu", "vas", "qui", "dor", "sel", "na", "bri", "mot", "zan", "pel", "gor", "fi"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(3))


def write_feed(path: Path, start: int, count: int) -> None:
    """An RSS file whose items start..start+count-1 have unrelated titles (no two are one story). Atomic."""
    items = []
    for i in range(start, start + count):
        rng = random.Random(i)
        title = " ".join(_word(rng) for _ in range(6)).capitalize()
        summary = " ".join(_word(rng) for _ in range(30)) + "."
        link = f"https://news.example.org/item/{i}"
        items.append(f"<item><title>{title}</title><link>{link}</link><guid>{link}</guid>"
                     f"<pubDate>{format_datetime(utcnow())}</pubDate><description>{summary}</description></item>")
    xml = ('<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>growing</title>'
           f'<link>https://news.example.org/</link><description>test</description><language>en</language>'
           f'{"".join(items)}</channel></rss>')
    tmp = path.with_suffix(".tmp")
    tmp.write_text(xml, encoding="utf-8")
    os.replace(tmp, path)


class GrowingFeed:
    """Adds fresh items to the feed file every ``every`` seconds, so each cycle has new articles."""

    def __init__(self, path: Path, every: float = 0.5, per_step: int = 3):
        self.path, self.every, self.per_step = path, every, per_step
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.next = 1000

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            write_feed(self.path, self.next, self.per_step)
            self.next += self.per_step

    def __enter__(self) -> GrowingFeed:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def start_monitor(config: Path, *extra: str, embedder: str = "fake", log: Path | None = None) -> subprocess.Popen:
    """`python -m monitor.cli monitor` as a child process."""
    env = {**os.environ, "FRAMEWATCH_EMBEDDER": embedder, "PYTHONUNBUFFERED": "1"}
    out = open(log, "ab") if log else subprocess.PIPE  # noqa: SIM115  (closed by the caller's process lifetime)
    return subprocess.Popen(
        [sys.executable, "-m", "monitor.cli", "monitor", "--no-progress", "--config", str(config),
         *extra],
        cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT if log else subprocess.PIPE,
    )


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(10)


def wait_for(predicate, timeout: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None,
             interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"monitor exited ({proc.returncode}) while waiting for {what}\n{_tail(log)}")
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{_tail(log)}")


def _tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    return log.read_text(encoding="utf-8", errors="replace")[-4000:]


def read(db_path: Path, sql: str, params=()) -> list[dict]:
    """A fresh read-only connection per query, as the dashboard does; [] while the schema is still being created."""
    import sqlite3

    from store.db import open_readonly

    if not db_path.exists():
        return []
    db = open_readonly(db_path)
    try:
        return list(db.query(sql, params))
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc) or "no such column" in str(exc):
            return []
        raise
    finally:
        db.conn.close()
