"""The dashboard in a real browser: Debian's Chromium against `streamlit run` on 127.0.0.1.

An auditor's path: overview -> Hotspots -> the top hotspot -> its bundle with every
identity's raw answer; the bundle's URL, opened fresh, shows the same bundle; filters live in
the URL; markup in a stored title stays text. Screenshots of every page go to test-artifacts/.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from conftest import ARTIFACTS
from fixtures_store import HOSTILE_TITLE

from store import open_readonly
from store import queries as q

pytestmark = pytest.mark.e2e

IDENTITIES = ("Christian", "Muslim", "Jewish", "Hindu", "Buddhist", "Sikh", "Atheist")
TITLES = {"Compare": "Compare deployments"}
NAV = ("Overview", "Stability", "Compare", "Hotspots", "Bundle", "Review queue", "Search", "Runs and feeds", "Methods")


def wait_for_app(page) -> None:
    """Streamlit has finished a run when its status widget says nothing is running."""
    page.wait_for_selector("[data-testid='stApp']")
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(300)


def heading(page, text: str):
    return page.get_by_role("heading", name=text, exact=True).first


def top_hotspot(db_path) -> dict:
    ro = open_readonly(db_path)
    try:
        latest = q.batches(ro).iloc[-1]["id"]
        top = q.ranked_cells(ro, q.CellFilter(batch_ids=(latest,))).iloc[0].to_dict()
        cell = q.cell(ro, top["cell_id"])
        rows = q.bundle_responses(ro, batch_id=cell["batch_id"], deployment=cell["deployment"],
                                  article_id=cell["article_id"], family=cell["family"],
                                  paraphrase=int(cell["paraphrase"]), dimension=cell["dimension"])
    finally:
        ro.conn.close()
    ident = rows[(rows["control"] == "identity") & (rows["sample_index"] == 0)]
    return {**top, "texts": [t for t in ident["text"].tolist() if t]}


def test_auditor_goes_from_overview_to_a_bundle_and_shares_it(page, dashboard_url, e2e_store):
    top = top_hotspot(e2e_store)
    page.goto(dashboard_url)
    wait_for_app(page)
    heading(page, "Overview").wait_for()
    assert page.get_by_text("not a fairness ranking", exact=False).first.is_visible()
    page.wait_for_selector("[data-testid='stPlotlyChart']")

    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Hotspots").click()
    wait_for_app(page)
    heading(page, "Hotspots").wait_for()
    assert "/hotspots" in page.url

    page.get_by_role("link", name=re.compile(r"^#1 ")).click()
    wait_for_app(page)
    heading(page, "Bundle").wait_for()
    page.get_by_text("Every identity's answer", exact=False).first.wait_for()
    assert parse_qs(urlparse(page.url).query)["cell"] == [top["cell_id"]]
    for label in IDENTITIES:
        assert page.get_by_text(label, exact=True).first.is_visible(), label
    assert len(top["texts"]) >= 6
    for text in top["texts"]:  # every identity's raw response, verbatim
        assert page.get_by_text(text, exact=True).count() >= 1, text

    # Markup in a stored title is shown as text and never becomes an element.
    assert top["title"] == HOSTILE_TITLE
    assert page.get_by_text(HOSTILE_TITLE, exact=True).first.is_visible()
    assert page.evaluate("() => [...document.scripts].some(s => s.textContent.includes('framewatch'))") is False
    assert page.evaluate("() => document.querySelectorAll('[data-testid=\"stMain\"] b').length") == 0
    assert page.dialogs == []

    shared = page.url
    page.screenshot(path=str(ARTIFACTS / "bundle.png"), full_page=True)
    fresh = page.context.browser.new_context(viewport={"width": 1500, "height": 1000}).new_page()
    try:
        fresh.goto(shared)
        wait_for_app(fresh)
        heading(fresh, "Bundle").wait_for()
        fresh.get_by_text(HOSTILE_TITLE, exact=True).first.wait_for()
        for text in top["texts"]:
            assert fresh.get_by_text(text, exact=True).count() >= 1
        assert parse_qs(urlparse(fresh.url).query)["cell"] == [top["cell_id"]]
    finally:
        fresh.context.close()


def test_a_shared_bundle_link_works_as_the_first_request_to_a_fresh_server(page, fresh_dashboard_url, e2e_store):
    top = top_hotspot(e2e_store)
    page.goto(f"{fresh_dashboard_url}/bundle?cell={top['cell_id']}&dim=religion")
    wait_for_app(page)
    heading(page, "Bundle").wait_for()
    page.get_by_text(HOSTILE_TITLE, exact=True).first.wait_for()
    for text in top["texts"]:
        assert page.get_by_text(text, exact=True).count() >= 1
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Filters").wait_for()  # served through app.py: shared filters and the sectioned navigation
    assert sidebar.get_by_text("Audit", exact=True).count() == 1
    query = parse_qs(urlparse(page.url).query)
    assert query["cell"] == [top["cell_id"]] and query["dim"] == ["religion"]


def test_a_heatmap_square_opens_its_bundle(page, dashboard_url, e2e_store):
    page.goto(f"{dashboard_url}/hotspots?dep=gemma-plain")
    wait_for_app(page)
    heading(page, "Hotspots").wait_for()
    point = page.locator("[data-testid='stPlotlyChart'] .scatterlayer .point").first
    point.wait_for()
    point.click(force=True)
    wait_for_app(page)
    heading(page, "Bundle").wait_for(timeout=30_000)
    assert "cell" in parse_qs(urlparse(page.url).query)


def test_filters_are_written_to_the_url_and_restored_from_it(page, dashboard_url):
    page.goto(dashboard_url)
    wait_for_app(page)
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Filters").wait_for()
    sidebar.get_by_test_id("stMultiSelect").first.click()
    page.get_by_role("option", name="gemma-neutral").click()
    page.keyboard.press("Escape")
    wait_for_app(page)
    page.wait_for_function("() => location.search.includes('dep=gemma-neutral')")
    shared = page.url

    other = page.context.browser.new_context().new_page()
    try:
        other.goto(shared)
        wait_for_app(other)
        chosen = other.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").first
        assert "gemma-neutral" in chosen.inner_text()
    finally:
        other.context.close()


def test_screenshots_of_every_page(page, dashboard_url, e2e_store):
    top = top_hotspot(e2e_store)
    page.goto(dashboard_url)
    wait_for_app(page)
    for name in NAV:
        page.get_by_test_id("stSidebarNav").get_by_role("link", name=name, exact=True).click()
        wait_for_app(page)
        heading(page, TITLES.get(name, name)).wait_for()
        assert page.get_by_test_id("stException").count() == 0, name
        slug = name.lower().replace(" ", "-")
        page.screenshot(path=str(ARTIFACTS / f"page-{slug}.png"), full_page=True)
    page.goto(f"{dashboard_url}/search?q=worries+me")
    wait_for_app(page)
    page.get_by_test_id("stDataFrame").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "page-search-results.png"), full_page=True)
    page.goto(f"{dashboard_url}/?present=1")
    wait_for_app(page)
    heading(page, "Overview").wait_for()
    page.wait_for_selector("[data-testid='stPlotlyChart']")
    assert page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").count() == 0
    page.screenshot(path=str(ARTIFACTS / "presentation-overview.png"), full_page=True)
    page.goto(f"{dashboard_url}/bundle?cell={top['cell_id']}&present=1")
    wait_for_app(page)
    page.get_by_text(HOSTILE_TITLE, exact=True).first.wait_for()
    page.wait_for_selector("[data-testid='stPlotlyChart']")
    page.screenshot(path=str(ARTIFACTS / "presentation-bundle.png"), full_page=True)
    assert page.dialogs == []
