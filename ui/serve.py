"""Start the dashboard: `streamlit run app.py` on 127.0.0.1, pointed at one store.

No streamlit import here: the CLI calls this, and Streamlit runs in its own process so the
monitor's heavy imports never enter the dashboard.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import webbrowser
from pathlib import Path

import monitor


def app_path() -> Path:
    """app.py beside the installed packages (the project is installed editable)."""
    return Path(monitor.__file__).resolve().parents[1] / "app.py"


def dashboard_command(port: int, *, address: str = "127.0.0.1") -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(app_path()), "--server.port", str(port),
            "--server.address", address, "--server.headless", "true"]


def _open_when_ready(url: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    webbrowser.open(url)
                    return
        except OSError:
            time.sleep(0.5)


def serve_dashboard(db_path: str | Path, port: int, *, open_browser: bool = False, settings: dict | None = None) -> int:
    """Serve the dashboard on http://127.0.0.1:PORT over ``db_path`` until interrupted; returns the exit code.

    ``settings``: environment variables carrying configuration the dashboard needs but cannot
    read itself (it never loads framewatch.toml), e.g. FRAMEWATCH_RATINGS_PER_ITEM.
    """
    app = app_path()
    if not app.exists():
        raise FileNotFoundError(f"{app} is missing: the dashboard needs the source checkout (pip install -e .)")
    env = {**os.environ, **(settings or {}), "FRAMEWATCH_DB": str(Path(db_path).resolve())}
    url = f"http://127.0.0.1:{port}"
    print(f"framewatch dashboard on {url} (database {env['FRAMEWATCH_DB']}); Ctrl+C stops it", flush=True)
    if open_browser:
        threading.Thread(target=_open_when_ready, args=(url,), daemon=True).start()
    proc = subprocess.Popen(dashboard_command(port), cwd=str(app.parent), env=env)
    if threading.current_thread() is threading.main_thread():
        # A SIGTERM to us (systemd, timeout) must stop the server too, not orphan it.
        signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()
