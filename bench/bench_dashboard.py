"""Dashboard scale benchmark: first render of every page, filter changes, process memory.

Targets (issue 7) on a store of ~1,000,000 responses (bench/make_store.py): first render of
every page <= 2 s, a filter change <= 1 s, the dashboard process < 1 GiB.

How it measures, with Debian's Chromium driven by Playwright against `streamlit run` on
127.0.0.1 (the same way a user reaches it):
- first render: for each page a FRESH server (empty data caches). "In app": a browser session
  already showing another page (Runs, or Review queue before Runs itself: a page with a chart,
  so the browser has loaded the chart library, and no query shared) follows the sidebar link
  (the Bundle through the top hotspot on Hotspots, Search by entering a query); this is
  the target figure. "New session": a brand-new browser session opens the page's URL, so
  Streamlit's JavaScript is loaded too (reported, worst case). The time runs from the click
  or navigation to the moment the script-finished message has arrived AND every chart is
  drawn and nothing is stale or still loading.
- filter change: on a warm page, from the click on a filter option to the same condition.
- memory: peak resident set (VmHWM) of the Streamlit server process after every page and
  filter change has been served in one process.

    .venv/bin/python bench/bench_dashboard.py [--db data/bench-1m.db] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from store import open_readonly  # noqa: E402
from store import queries as q  # noqa: E402
from ui.serve import dashboard_command  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
FIRST_RENDER_TARGET_S, FILTER_TARGET_S, MEMORY_TARGET_MIB = 2.0, 1.0, 1024

DONE_JS = """() => {
  const stale = document.querySelector('[data-stale="true"]');
  const skeleton = document.querySelector('[data-testid="stSkeleton"]');
  const running = document.querySelector('[data-testid="stStatusWidget"]');
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  const drawn = charts.every(c => c.querySelector('.main-svg'));
  return !stale && !skeleton && !running && drawn && !!document.querySelector('h1');
}"""


def pages(db: Path) -> dict[str, str]:
    ro = open_readonly(db)
    try:
        latest = q.batches(ro).iloc[-1]["id"]
        top = q.ranked_cells(ro, q.CellFilter(batch_ids=(latest,)), limit=1).iloc[0]["cell_id"]
    finally:
        ro.conn.close()
    return {
        "Overview": "/", "Stability": "/stability", "Compare": "/compare", "Hotspots": "/hotspots",
        "Bundle": f"/bundle?cell={top}", "Review queue": "/review_queue", "Search": "/search?q=worries+me",
        "Runs and feeds": "/runs", "Alerts": "/alerts", "Stereotype probe": "/stereo", "Annotate": "/annotate",
        "Methods": "/methods",
    }


class Server:
    def __init__(self, db: Path, port: int):
        env = {**os.environ, "FRAMEWATCH_DB": str(db.resolve())}
        self.proc = subprocess.Popen(dashboard_command(port), cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("streamlit did not start")

    def peak_rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Probe:
    """A browser page that notes when each Streamlit script run finishes (from the websocket)."""

    def __init__(self, browser):
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.context = browser.new_context(viewport={"width": 1500, "height": 1000})
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.finished: list[float] = []

        def on_frame(payload):
            if isinstance(payload, (bytes, bytearray)):
                msg = ForwardMsg()
                try:
                    msg.ParseFromString(bytes(payload))
                except Exception:  # noqa: BLE001 - not every frame is a ForwardMsg
                    return
                if msg.WhichOneof("type") == "script_finished":
                    self.finished.append(time.perf_counter())

        self.page.on("websocket", lambda ws: ws.on("framereceived", on_frame))

    def wait_done(self, runs_before: int, timeout_s: float = 60.0) -> float:
        """Wait for the next script run to finish and the page to be drawn; returns the time drawn.

        ``self.last_script_s`` keeps when that run's script-finished message arrived, so a slow
        figure can be told apart from a slow server.
        """
        deadline = time.perf_counter() + timeout_s
        while len(self.finished) <= runs_before:
            if time.perf_counter() > deadline:
                raise TimeoutError("no script run finished")
            self.page.wait_for_timeout(5)
        self.page.wait_for_function(DONE_JS, polling="raf", timeout=timeout_s * 1000)
        self.last_script_at = self.finished[-1]
        return time.perf_counter()

    def open(self, url: str) -> float:
        n = len(self.finished)
        t0 = time.perf_counter()
        self.page.goto(url, wait_until="commit")
        return self.wait_done(n) - t0

    def close(self) -> None:
        self.context.close()


NAV_TITLES = {"Compare": "Compare"}


def navigate(probe: Probe, name: str) -> float:
    """Go to a page the way a user does inside the app; seconds until it is fully drawn."""
    page = probe.page
    if name == "Bundle":  # a bundle is reached from a hotspot
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Hotspots", exact=True).click()
        page.get_by_role("link", name=re.compile(r"^#1 ")).wait_for()
        probe.wait_done(len(probe.finished) - 1)
        target = page.get_by_role("link", name=re.compile(r"^#1 "))
    elif name == "Search":  # search results appear when the query is entered
        page.get_by_test_id("stSidebarNav").get_by_role("link", name="Search", exact=True).click()
        box = page.get_by_role("textbox", name="Search text")
        box.wait_for()
        probe.wait_done(len(probe.finished) - 1)
        box.fill("worries me")
        n = len(probe.finished)
        t0 = time.perf_counter()
        box.press("Enter")
        page.get_by_test_id("stDataFrame").first.wait_for()
        done = probe.wait_done(n)
        probe.script_s = probe.last_script_at - t0
        return done - t0
    else:
        target = page.get_by_test_id("stSidebarNav").get_by_role("link", name=name, exact=True)
    n = len(probe.finished)
    t0 = time.perf_counter()
    target.click()
    done = probe.wait_done(n)
    probe.script_s = probe.last_script_at - t0
    return done - t0


def first_renders(browser, db: Path, urls: dict[str, str], repeat: int, port: int) -> dict[str, dict[str, list[float]]]:
    """Per page, two first renders on a fresh server: reached inside the app from a warm browser
    session (the usual way), and opened by URL in a brand-new browser session (worst case)."""
    out: dict[str, dict[str, list[float]]] = {k: {n: [] for n in urls} for k in ("in_app", "in_app_script", "new_session")}
    for _ in range(repeat):
        for name, path in urls.items():
            server = Server(db, port)
            try:
                probe = Probe(browser)
                # The warm-up page has a chart (the browser loads the chart library once per session)
                # and shares no query with the page measured.
                probe.open(server.url + ("/review_queue" if name == "Runs and feeds" else "/runs"))
                out["in_app"][name].append(navigate(probe, name))
                out["in_app_script"][name].append(probe.script_s)
                probe.close()
            finally:
                server.stop()
            server = Server(db, port)
            try:
                warm = Probe(browser)
                warm.open(server.url + "/methods")  # the server's Python imports, no data
                warm.close()
                probe = Probe(browser)
                out["new_session"][name].append(probe.open(server.url + path))
                probe.close()
            finally:
                server.stop()
            print(f"  first render {name}: in app {out['in_app'][name][-1]:.2f} s (script finished at "
                  f"{out['in_app_script'][name][-1]:.2f} s), new session {out['new_session'][name][-1]:.2f} s", flush=True)
    return out


def pick_option(probe: Probe, widget_label: str, option: str) -> float:
    """Choose ``option`` in the sidebar multiselect labelled ``widget_label``; seconds until redrawn."""
    page = probe.page
    box = page.get_by_test_id("stSidebar").get_by_role("combobox", name=re.compile(widget_label))
    box.scroll_into_view_if_needed()
    box.click()
    page.keyboard.type(option)
    page.get_by_role("option", name=option, exact=True).wait_for()
    n = len(probe.finished)
    t0 = time.perf_counter()
    page.keyboard.press("Enter")
    took = probe.wait_done(n) - t0
    page.keyboard.press("Escape")
    return took


def filter_changes(browser, server: Server, urls: dict[str, str], repeat: int) -> dict[str, list[float]]:
    cases = [("Overview", "Dimension", "Religion"), ("Overview", "Deployment", "hosted-a"),
             ("Stability", "Prompt family", "Bias check"), ("Hotspots", "Deployment", "gemma-neutral"),
             ("Compare", "Dimension", "Political orientation"), ("Review queue", "Dimension", "Religion")]
    out: dict[str, list[float]] = {}
    for _ in range(repeat):
        for page_name, label, option in cases:
            if page_name not in urls:
                continue
            probe = Probe(browser)
            try:
                probe.open(server.url + urls[page_name])
                key = f"{page_name}: {label} -> {option}"
                out.setdefault(key, []).append(pick_option(probe, label, option))
                print(f"  filter change {key}: {out[key][-1]:.2f} s", flush=True)
            finally:
                probe.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, default=REPO / "data" / "bench-1m.db")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--port", type=int, default=8611)
    ap.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    ap.add_argument("--pages", nargs="*", default=None, help="Only these pages (names as in the sidebar).")
    args = ap.parse_args()
    if not args.db.exists():
        sys.exit(f"{args.db} is missing: run bench/make_store.py first")
    if not Path(CHROMIUM).exists():
        sys.exit("/usr/bin/chromium is missing: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    ro = open_readonly(args.db)
    responses = ro.execute("select count(*) from responses").fetchone()[0]
    cells = ro.execute("select count(*) from cells").fetchone()[0]
    ro.conn.close()
    urls = pages(args.db)
    if args.pages:
        urls = {k: v for k, v in urls.items() if k in args.pages}
    print(f"store {args.db}: {responses:,} responses, {cells:,} cells, {args.db.stat().st_size / 2**30:.2f} GiB")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        firsts = first_renders(browser, args.db, urls, args.repeat, args.port)
        server = Server(args.db, args.port)
        try:
            for path in urls.values():  # every page served by this one process before memory is read
                probe = Probe(browser)
                probe.open(server.url + path)
                probe.close()
            filters = filter_changes(browser, server, urls, args.repeat)
            peak = server.peak_rss_mib()
        finally:
            server.stop()
        browser.close()

    def summary(d: dict[str, list[float]]) -> dict[str, float]:
        return {k: round(statistics.median(v), 3) for k, v in d.items()}

    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": f"{platform.node()} {os.cpu_count()} cores",
        "load_average": os.getloadavg(), "responses": responses, "cells": cells,
        "first_render_in_app_s": summary(firsts["in_app"]),
        "first_render_in_app_script_finished_s": summary(firsts["in_app_script"]),
        "first_render_new_session_s": summary(firsts["new_session"]),
        "filter_change_s": summary(filters), "peak_rss_mib": round(peak, 1),
        "targets_met": {
            "first_render": max(summary(firsts["in_app"]).values()) <= FIRST_RENDER_TARGET_S,
            "filter_change": max(summary(filters).values()) <= FILTER_TARGET_S,
            "memory": peak < MEMORY_TARGET_MIB,
        },
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0 if all(result["targets_met"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
