"""Browser-test fixtures: Debian's Chromium driven by Playwright, a real `streamlit run` on 127.0.0.1.

Never `playwright install`: the browser is the system package (make test installs it with
apt). Without /usr/bin/chromium every browser test is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from monitor.testing.processes import free_port, stop_process

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))  # fixtures_store lives beside the other test files

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = REPO / "test-artifacts"


def _wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with {proc.returncode} before answering")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"streamlit did not answer on {url} within {timeout_s} s")


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("/usr/bin/chromium is absent: install Debian's chromium (make test does) to run browser tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def e2e_store(tmp_path_factory) -> Path:
    from fixtures_store import StoreSpec, build_store

    path = tmp_path_factory.mktemp("e2e") / "framewatch.db"
    build_store(path, StoreSpec(batches=3, families=("impact", "bias_check", "values"), articles_per_batch=2))
    return path


@contextlib.contextmanager
def running_dashboard(db: Path, *, without: tuple[str, ...] = ()):
    """`streamlit run app.py` on a free 127.0.0.1 port over ``db``; yields its URL and stops it after.

    ``without``: environment variables the server must not inherit.
    """
    from ui.serve import dashboard_command

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in without}
    env.update(FRAMEWATCH_DB=str(db), FRAMEWATCH_REVIEWER_PASSWORD="e2e-password")
    log_path = db.parent / f"streamlit-{port}.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(dashboard_command(port), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc)
            yield url
        finally:
            stop_process(proc)


@pytest.fixture(scope="session")
def dashboard_url(e2e_store, browser):
    with running_dashboard(e2e_store) as url:
        yield url


@pytest.fixture
def fresh_dashboard_url(e2e_store, browser):
    """A server no browser has talked to yet (its first request decides how Streamlit routes)."""
    with running_dashboard(e2e_store) as url:
        yield url


@pytest.fixture
def page(browser):
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    dialogs: list[str] = []
    pg.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    pg.dialogs = dialogs
    yield pg
    context.close()
