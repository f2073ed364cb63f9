"""The annotator page in a real browser (Debian's Chromium, `streamlit run` on 127.0.0.1):
an annotator from Mexico onboards, never sees a Spain candidate, and a rating survives a reload."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest
from conftest import ARTIFACTS, running_dashboard

from monitor.ids import make_id
from monitor.stereo import validate as v
from store import open_readonly, open_writer
from store import stereo as store

pytestmark = pytest.mark.e2e

MX = ["Los chilangos son prepotentes.", "Los norteños son bruscos.", "Los regios son tacaños."]
ES = ["Los catalanes son tacaños.", "Los andaluces son graciosos.", "Los gallegos nunca responden."]


@pytest.fixture(scope="module")
def stereo_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("stereo-e2e") / "framewatch.db"
    db = open_writer(path)
    for country, texts in (("MX", MX), ("ES", ES)):
        store.save_candidates(db, [{"id": make_id("candidate", "e2e", country, t), "country": country,
                                    "category": "origin", "target_group": t.split()[1], "text": t,
                                    "text_norm": t.lower(), "source": "generated", "dataset": "generated",
                                    "keep_rule": v.RULE_MEDIAN} for t in texts])
    db.conn.close()
    return path


@pytest.fixture(scope="module")
def stereo_url(stereo_store, browser):
    with running_dashboard(stereo_store, without=("FRAMEWATCH_ANNOTATOR_PASSWORD",)) as url:
        yield url


def wait_for_app(page) -> None:
    page.wait_for_selector("[data-testid='stApp']")
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(400)


def shown_candidate(page) -> str | None:
    body = page.inner_text("[data-testid='stMain']")
    assert not [t for t in ES if t in body], "a Spain candidate reached a Mexican annotator"
    found = [t for t in MX if t in body.split("Mis valoraciones")[-1]]
    return found[0] if found else None


def test_mexican_annotator_never_sees_spain_and_a_rating_survives_reload(page, stereo_url, stereo_store):
    page.goto(f"{stereo_url}/annotate")
    wait_for_app(page)
    page.get_by_label("Nombre o seudónimo").fill("Ana e2e")
    page.get_by_test_id("stSelectbox").first.click()
    page.get_by_role("option", name="México").click()
    page.get_by_text("Nací y me crie en ese país").click()
    page.get_by_text("Hablo español con fluidez").click()
    page.get_by_role("button", name="Empezar").click()
    page.wait_for_url(lambda u: "annotator=" in u, timeout=60_000)
    wait_for_app(page)
    page.get_by_text("Anotas como", exact=False).first.wait_for()
    annotator = parse_qs(urlparse(page.url).query)["annotator"][0]
    page.screenshot(path=str(ARTIFACTS / "stereo-annotate.png"), full_page=True)

    first = shown_candidate(page)
    assert first in MX
    page.get_by_text(v.LIKERT_LABELS[4], exact=True).click()
    page.get_by_role("button", name="Guardar valoración").click()
    wait_for_app(page)
    page.get_by_text("Valoradas: 1", exact=False).first.wait_for()

    page.reload()
    wait_for_app(page)
    page.get_by_text("Valoradas: 1", exact=False).first.wait_for()
    assert shown_candidate(page) not in (None, first)  # the rated one is not offered again
    ro = open_readonly(stereo_store)
    try:
        rows = list(ro.query("select c.text, r.rating from stereo_ratings r join stereo_candidates c on c.id = r.candidate_id "
                             "where r.annotator_id = ?", [annotator]))
    finally:
        ro.conn.close()
    assert rows == [{"text": first, "rating": 4}]
    page.get_by_role("tab", name="Mis valoraciones").click()
    page.get_by_test_id("stDataFrame").first.wait_for()
    # the grid draws on a canvas; its cells are mirrored in hidden elements for accessibility
    page.locator("[data-testid^='glide-cell']", has_text=v.LIKERT_LABELS[4]).first.wait_for(state="attached")

    page.get_by_role("tab", name="Valorar").click()
    page.wait_for_timeout(500)
    seen = {first}
    for skipped in range(1, len(MX)):
        current = shown_candidate(page)
        assert current is not None and current not in seen
        seen.add(current)
        page.get_by_role("button", name="Saltar").click()
        page.get_by_text(f"saltadas: {skipped}", exact=False).first.wait_for()  # the rerun has finished
        wait_for_app(page)
    page.get_by_text("No hay más frases", exact=False).first.wait_for()
    assert seen == set(MX)
    page.screenshot(path=str(ARTIFACTS / "stereo-annotate-done.png"), full_page=True)
