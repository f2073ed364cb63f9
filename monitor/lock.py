"""One monitor per database: an exclusive flock on ``<db>.lock``.

The kernel drops a flock when its process dies, however it dies (SIGKILL, OOM, power
loss of a container), so a crashed monitor never leaves a lock that blocks the next
start; a stale pid file would. The holder writes its pid, host and start time into the
file only so that a refused second monitor can say who holds it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from monitor.ids import iso, utcnow


class LockHeld(RuntimeError):
    """Another process holds the monitor lock of this database; the message names it and says what to do."""

    def __init__(self, message: str, holder: dict):
        super().__init__(message)
        self.holder = holder


@dataclass(frozen=True, slots=True)
class Holder:
    pid: int
    host: str
    started_at: str
    argv: str


def lock_path(db_path: str | Path) -> Path:
    p = Path(db_path)
    return p.with_name(p.name + ".lock")


class InstanceLock:
    """Held from ``acquire()`` until ``release()`` or process exit. Use as a context manager."""

    def __init__(self, db_path: str | Path):
        self.db_path = Path(db_path)
        self.path = lock_path(db_path)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> Holder:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # O_RDWR without O_TRUNC: truncating before we own the lock would erase the holder's note.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise LockHeld(_refusal(self.db_path, self.path, holder), holder) from None
        except BaseException:
            os.close(fd)
            raise
        me = Holder(pid=os.getpid(), host=socket.gethostname(), started_at=iso(utcnow()), argv=" ".join(sys.argv)[:300])
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_as_dict(me)).encode(), 0)
        self._fd = fd
        return me

    def release(self) -> None:
        """Unlock and keep the file: deleting it would let a racing starter lock an unlinked inode."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> InstanceLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _as_dict(h: Holder) -> dict:
    return {"pid": h.pid, "host": h.host, "started_at": h.started_at, "argv": h.argv}


def _read_holder(fd: int) -> dict:
    try:
        data = os.pread(fd, 4096, 0)
        return json.loads(data.decode("utf-8")) if data else {}
    except (OSError, ValueError):
        return {}


def _refusal(db_path: Path, path: Path, holder: dict) -> str:
    if holder.get("pid"):
        who = f"pid {holder['pid']} on host {holder.get('host', '?')}, running since {holder.get('started_at', '?')}"
    else:
        who = "another process (it has not written its pid yet)"
    return (
        f"another framewatch monitor already writes {db_path}: {who} holds {path}. "
        f"Only one monitor may write a database. Stop that one first (kill -TERM {holder.get('pid', '<pid>')}, "
        f"or systemctl stop framewatch-monitor), or pass --db to monitor another database."
    )
