"""Connections. The monitor opens the only writer (WAL); everyone else reads with mode=ro.

WAL lets a read-only connection read while the writer holds a transaction, so the
dashboard never sees 'database is locked' from the monitor's short write transactions.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlite_utils import Database


class StoreError(RuntimeError):
    """The database cannot be opened or is not a framewatch store; the message says what to do."""


def open_writer(path: str | Path) -> Database:
    """Open (creating if needed) the store for writing and bring its schema up to date."""
    from store.migrations import migrate

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(p), timeout=30, check_same_thread=False)
        db = Database(conn)
        db.enable_wal()
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=30000")
        db.execute("PRAGMA foreign_keys=ON")
        migrate(db)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{p}: cannot open as a framewatch database ({exc}). Point --db at another file, or move this one away.") from exc
    return db


def open_readonly(path: str | Path) -> Database:
    """Read-only connection (file:...?mode=ro). Writes fail with 'attempt to write a readonly database'."""
    p = Path(path)
    if not p.exists():
        raise StoreError(f"{p}: no database here yet. Run `framewatch demo --no-serve` or `framewatch run-once` first, or pass --db.")
    conn = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True, timeout=30, check_same_thread=False)
    conn.execute("PRAGMA busy_timeout=30000")
    return Database(conn)


@contextmanager
def reading(path: str | Path) -> Iterator[Database]:
    """A read-only connection for one unit of work, closed afterwards (connections are cheap; sharing one across threads is not)."""
    db = open_readonly(path)
    try:
        yield db
    finally:
        db.conn.close()
