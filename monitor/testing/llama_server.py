"""Run llama.cpp's real OpenAI-compatible server (``python -m llama_cpp.server``) on 127.0.0.1.

Serves the packaged Gemma so the OpenAI-compatible provider can be tested for real, offline.

    with llama_server() as url:     # http://127.0.0.1:PORT/v1, model alias "gemma-3-270m"
        ...
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from monitor.testing.processes import free_port, stop_process

ALIAS = "gemma-3-270m"


class LlamaServerError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


@contextlib.contextmanager
def llama_server(model: str | None = None, *, n_ctx: int = 2048, start_timeout_s: float = 90.0,
                 log_dir: str | Path | None = None) -> Iterator[str]:
    from monitor.providers.llamacpp import gguf_path

    port = free_port()
    log_path = Path(tempfile.mkdtemp(prefix="llama_server_", dir=log_dir)) / "server.log"
    with open(log_path, "wb") as log:  # a file, not a pipe: llama.cpp logs enough to fill a pipe and block
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path(model or "")), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", str(n_ctx), "--model_alias", ALIAS],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_ready(proc, url, start_timeout_s, log_path)
            yield url
        finally:
            stop_process(proc)


def _wait_ready(proc: subprocess.Popen, url: str, timeout_s: float, log_path: Path) -> None:
    import httpx2

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LlamaServerError(f"llama_cpp.server exited ({proc.returncode}): {_tail(log_path)}")
        try:
            if httpx2.get(f"{url}/models", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.5)
    raise LlamaServerError(f"llama_cpp.server did not answer within {timeout_s:g} s: {_tail(log_path)}")


def _tail(path: Path) -> str:
    return path.read_text(errors="replace")[-2000:]
