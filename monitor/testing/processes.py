"""Loopback ports and child processes for the test servers that ship with the code."""

from __future__ import annotations

import socket
import subprocess


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now (also usable as a 'connection refused' target)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen, timeout_s: float = 15) -> int:
    """Terminate, wait up to ``timeout_s``, then kill; returns the exit code."""
    proc.terminate()
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
