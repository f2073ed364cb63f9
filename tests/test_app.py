"""Every dashboard page rendered through Streamlit's AppTest against fixture stores:
a realistic store, a store with one batch, an empty store and no store at all; the shared
filters in the URL; hotspot -> bundle navigation; reviews with and without a reviewer."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_store import HOSTILE_TITLE, StoreSpec, build_store
from streamlit.testing.v1 import AppTest

from store import open_readonly, open_writer
from store import queries as q

APP = str(Path(__file__).resolve().parents[1] / "app.py")
PAGES = {
    "pages/overview.py": "Overview", "pages/stability.py": "Stability", "pages/hotspots.py": "Hotspots",
    "pages/bundle.py": "Bundle", "pages/compare.py": "Compare deployments", "pages/search.py": "Search",
    "pages/runs.py": "Runs and feeds", "pages/methods.py": "Methods", "pages/review_queue.py": "Review queue",
}
SPEC = StoreSpec(batches=3, families=("impact", "bias_check", "values"), articles_per_batch=2)


@pytest.fixture(scope="module")
def full_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "full.db"
    build_store(path, SPEC)
    return path


@pytest.fixture(scope="module")
def one_batch_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "one.db"
    build_store(path, StoreSpec(batches=1, families=("impact",), articles_per_batch=2))
    return path


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("app") / "empty.db"
    open_writer(path).conn.close()
    return path


@pytest.fixture
def writable_store(tmp_path):
    path = tmp_path / "w.db"
    build_store(path, StoreSpec(batches=1, families=("impact",), articles_per_batch=1, paraphrases=1))
    return path


def make_app(monkeypatch, db: Path, *, user: dict | None = None, params: dict | None = None) -> AppTest:
    monkeypatch.setenv("FRAMEWATCH_DB", str(db))
    at = AppTest.from_file(APP, default_timeout=60)
    at.user = user or {"is_logged_in": False}  # AppTest's default user has no is_logged_in
    for key, value in (params or {}).items():
        at.query_params[key] = value
    return at


def qp(at: AppTest, key: str) -> list[str]:
    """A URL parameter as a list, however AppTest happens to hold it."""
    value = at.query_params.get(key)
    return [] if value is None else list(value) if isinstance(value, (list, tuple)) else [value]


def texts(at: AppTest) -> str:
    parts = [e.value for kind in ("title", "markdown", "caption", "info", "success", "warning", "error", "subheader")
             for e in getattr(at, kind)]
    return "\n".join(str(p) for p in parts)


def top_cell(db: Path) -> dict:
    ro = open_readonly(db)
    try:
        return q.ranked_cells(ro, q.CellFilter(batch_ids=(q.batches(ro).iloc[-1]["id"],))).iloc[0].to_dict()
    finally:
        ro.conn.close()


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_on_a_realistic_store(monkeypatch, full_store, page):
    at = make_app(monkeypatch, full_store)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert at.title[0].value == PAGES[page]


@pytest.mark.parametrize("page", list(PAGES))
def test_empty_store_gives_a_first_run_message(monkeypatch, empty_store, page):
    at = make_app(monkeypatch, empty_store)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    if page != "pages/methods.py":
        assert "no batch yet" in texts(at) and "framewatch run-once" in texts(at)


def test_missing_store_says_how_to_create_one(monkeypatch, tmp_path):
    at = make_app(monkeypatch, tmp_path / "nothing-here.db")
    at.run()
    assert not at.exception
    assert "framewatch demo" in at.info[0].value
    assert not (tmp_path / "nothing-here.db").exists()  # viewing never creates a database


def test_not_a_framewatch_store_is_explained(monkeypatch, tmp_path):
    path = tmp_path / "other.db"
    import sqlite3

    sqlite3.connect(path).execute("create table t (x)").connection.close()
    at = make_app(monkeypatch, path)
    at.run()
    assert not at.exception and "not a framewatch database" in at.info[0].value


@pytest.mark.parametrize("page", list(PAGES))
def test_one_batch_only(monkeypatch, one_batch_store, page):
    at = make_app(monkeypatch, one_batch_store)
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    if page == "pages/overview.py":
        assert "Only one batch so far" in texts(at)
    if page == "pages/stability.py":
        assert "needs at least two scored batches" in texts(at)


def test_overview_shows_counts_caveat_and_series(monkeypatch, full_store):
    at = make_app(monkeypatch, full_store)
    at.run()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Batches in range"] == "3" and metrics["Deployments"] == "2" and metrics["Articles"] == "2"
    assert int(metrics["Hotspot cells"]) > 0
    assert "not a fairness ranking" in texts(at) and "not proof of harm" in texts(at)
    assert len(at.get("plotly_chart")) == 2
    latest = at.dataframe[0].value
    assert set(latest["deployment"]) == {"gemma-plain", "gemma-neutral"}


def test_filters_come_from_the_url_and_go_back_to_it(monkeypatch, full_store):
    at = make_app(monkeypatch, full_store, params={"dep": "gemma-neutral", "dim": "religion"})
    at.run()
    assert not at.exception
    assert at.multiselect(key="w_dep").value == ["gemma-neutral"]
    assert {m.label: m.value for m in at.metric}["Deployments"] == "1"
    assert set(at.dataframe[0].value["deployment"]) == {"gemma-neutral"}
    at.switch_page("pages/hotspots.py").run()
    assert "No cell in this batch is significant" in texts(at)  # the planted effect is in the other deployment
    assert qp(at, "dep") == ["gemma-neutral"] and qp(at, "dim") == ["religion"]

    # AppTest runs a switched-to page without app.py (as a legacy multipage app, see
    # ui.page._leave_legacy_multipage_mode), so the sidebar is driven on the first page; the
    # widget -> URL step is checked by the browser test.
    at = make_app(monkeypatch, full_store, params={"dep": "gemma-neutral", "dim": "religion"})
    at.run()
    at.multiselect(key="w_dep").set_value(["gemma-plain"]).run()
    assert set(at.dataframe[0].value["deployment"]) == {"gemma-plain"}
    at.switch_page("pages/hotspots.py").run()
    assert set(at.dataframe[0].value["deployment"]) == {"gemma-plain"}
    assert set(at.dataframe[0].value["dimension"]) == {"Religion"}


def test_batch_and_date_filters(monkeypatch, full_store):
    ro = open_readonly(full_store)
    batches = q.batches(ro)
    ro.conn.close()
    first = batches.iloc[0]
    at = make_app(monkeypatch, full_store, params={"batch": first["id"]})
    at.run()
    assert f"Batch {first['label']}" in texts(at)
    at = make_app(monkeypatch, full_store, params={"to": first["opened_at"][:10]})
    at.run()
    assert {m.label: m.value for m in at.metric}["Batches in range"] == "1"
    at = make_app(monkeypatch, full_store, params={"from": "2030-01-01"})
    at.run()
    assert not at.exception and qp(at, "from") == [batches.iloc[-1]["opened_at"][:10]]  # clamped to the data


def test_hotspot_table_row_opens_its_bundle(monkeypatch, full_store):
    top = top_cell(full_store)
    at = make_app(monkeypatch, full_store)
    at.run()
    at.switch_page("pages/hotspots.py").run()
    table = at.dataframe[0].value
    assert table.iloc[0]["cell_id"] == top["cell_id"] and table["scfs"].is_monotonic_decreasing
    at.session_state["table_hotspots"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception
    assert at.title[0].value == "Bundle" and qp(at, "cell") == [top["cell_id"]]
    body = texts(at)
    for label in ("Christian", "Muslim", "Jewish", "Hindu", "Buddhist", "Sikh", "Atheist"):
        assert f"**{label}**" in body
    answers = {t.value for t in at.text}
    ro = open_readonly(full_store)
    cell = q.cell(ro, top["cell_id"])
    rows = q.bundle_responses(ro, batch_id=cell["batch_id"], deployment=cell["deployment"], article_id=cell["article_id"],
                              family=cell["family"], paraphrase=cell["paraphrase"], dimension=cell["dimension"])
    ro.conn.close()
    expected = rows[(rows["control"] == "identity") & (rows["sample_index"] == 0) & rows["text"].notna()]["text"]
    assert len(expected) >= 6 and set(expected) <= answers  # every identity's raw answer, verbatim


def test_a_selected_grid_square_names_its_cell():
    # AppTest cannot click a plotly point (the browser test does); the event -> cell step is checked here.
    from types import SimpleNamespace

    from ui.page import selected_cell

    event = SimpleNamespace(selection=SimpleNamespace(points=[{"customdata": ["c42", "religion", "impact"]}]))
    assert selected_cell(event) == "c42"
    assert selected_cell(SimpleNamespace(selection=SimpleNamespace(points=[]))) is None
    assert selected_cell(SimpleNamespace(selection=SimpleNamespace(points=[{"x": 1}]))) is None
    assert selected_cell(None) is None


def test_shared_bundle_link_reopens_the_same_bundle(monkeypatch, full_store):
    top = top_cell(full_store)
    at = make_app(monkeypatch, full_store, params={"cell": top["cell_id"], "sample": "1"})
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = top["cell_id"]
    at.query_params["sample"] = "1"
    at.run()
    assert not at.exception
    assert at.title[0].value == "Bundle"
    assert "Every identity\\'s answer (sample 1)" in texts(at) or "Every identity's answer (sample 1)" in texts(at)
    assert at.selectbox(key=f"sample_{top['cell_id']}").value == 1


def test_bundle_shows_hostile_title_as_text(monkeypatch, full_store):
    top = top_cell(full_store)
    assert top["title"] == HOSTILE_TITLE
    at = make_app(monkeypatch, full_store)
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = top["cell_id"]
    at.run()
    heading = next(m.value for m in at.markdown if m.value.startswith("#### "))
    assert "\\<script\\>" in heading and "<script>" not in heading
    assert all(not getattr(m, "allow_html", False) for m in at.markdown)


def test_bundle_switches_paraphrase(monkeypatch, full_store):
    top = top_cell(full_store)
    at = make_app(monkeypatch, full_store)
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = top["cell_id"]
    at.run()
    box = at.selectbox(key=f"para_{top['cell_id']}")
    other = box.options.index(f"paraphrase {1 - int(top['paraphrase'])}")
    ro = open_readonly(full_store)
    siblings = q.sibling_cells(ro, top["batch_id"], top["deployment"], q.cell(ro, top["cell_id"])["article_id"],
                               top["family"])
    ro.conn.close()
    target = siblings[(siblings["dimension"] == top["dimension"]) & (siblings["paraphrase"] != top["paraphrase"])]
    box.select_index(other).run()
    assert not at.exception and qp(at, "cell") == [target.iloc[0]["cell_id"]]


def test_bundle_says_when_sentiment_is_missing_because_not_english(monkeypatch, full_store):
    ro = open_readonly(full_store)
    row = next(ro.query(
        "select c.id from cells c join prompts p on p.article_id = c.article_id and p.family = c.family "
        "and p.paraphrase = c.paraphrase and p.dimension = c.dimension "
        "join responses r on r.prompt_id = p.id and r.deployment = c.deployment and r.sample_index = 0 "
        "join scores s on s.response_id = r.id where s.is_english = 0 limit 1"))
    ro.conn.close()
    at = make_app(monkeypatch, full_store)
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = row["id"]
    at.run()
    assert "answer is not English (es); VADER scores English only" in texts(at)


def test_unknown_bundle_link_is_explained(monkeypatch, full_store):
    at = make_app(monkeypatch, full_store)
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = "nope' or 1=1"
    at.run()
    assert not at.exception and "not in this database" in at.error[0].value


def test_review_needs_a_reviewer_and_is_recorded_with_password(monkeypatch, writable_store):
    top = top_cell(writable_store)
    monkeypatch.delenv("FRAMEWATCH_REVIEWER_PASSWORD", raising=False)
    at = make_app(monkeypatch, writable_store)
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = top["cell_id"]
    at.run()
    assert "Reviews are off" in texts(at) and not at.main.radio

    monkeypatch.setenv("FRAMEWATCH_REVIEWER_PASSWORD", "correct horse")
    at.run()
    at.main.text_input[0].input("Ana")
    at.main.text_input[1].input("wrong")
    at.main.button[0].click().run()
    assert "Wrong reviewer password" in texts(at)
    at.main.text_input[0].input("Ana")
    at.main.text_input[1].input("correct horse")
    at.main.button[0].click().run()
    assert "Signed in as reviewer: Ana (password)" in texts(at)
    at.main.radio[0].set_value("cultural_personalisation")
    at.main.text_area[0].input("Answers adapt examples to the faith; no negative framing.")
    next(b for b in at.main.button if b.label == "Record verdict").click().run()
    assert not at.exception
    ro = open_readonly(writable_store)
    reviews = list(ro.query("select cell_id, verdict, reviewer, auth_method, note from reviews"))
    ro.conn.close()
    assert reviews == [{"cell_id": top["cell_id"], "verdict": "cultural_personalisation", "reviewer": "Ana",
                        "auth_method": "password", "note": "Answers adapt examples to the faith; no negative framing."}]
    assert "Latest verdict: **Cultural personalisation** by Ana" in texts(at)
    at.switch_page("pages/hotspots.py").run()
    assert at.dataframe[0].value.set_index("cell_id").loc[top["cell_id"], "review"] == "Cultural personalisation"
    at.switch_page("pages/review_queue.py").run()
    queue = at.dataframe[0].value if at.dataframe else None
    assert queue is None or top["cell_id"] not in set(queue["cell_id"])


def test_review_through_oidc_sign_in(monkeypatch, writable_store):
    top = top_cell(writable_store)
    at = make_app(monkeypatch, writable_store, user={"is_logged_in": True, "email": "auditor@example.org"})
    at.secrets["auth"] = {"client_id": "x", "client_secret": "y", "cookie_secret": "z",
                          "redirect_uri": "http://localhost:8501/oauth2callback",
                          "server_metadata_url": "https://id.example.org/.well-known/openid-configuration"}
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = top["cell_id"]
    at.run()
    assert "Signed in as reviewer: auditor@example.org (oidc)" in texts(at)
    at.main.radio[0].set_value("noise")
    next(b for b in at.main.button if b.label == "Record verdict").click().run()
    ro = open_readonly(writable_store)
    assert [dict(r) for r in ro.query("select reviewer, auth_method, verdict from reviews")] == [
        {"reviewer": "auditor@example.org", "auth_method": "oidc", "verdict": "noise"}]
    ro.conn.close()


def test_oidc_configured_but_signed_out_offers_sign_in(monkeypatch, writable_store):
    at = make_app(monkeypatch, writable_store, user={"is_logged_in": False})
    at.secrets["auth"] = {"client_id": "x"}
    at.run()
    at.switch_page("pages/bundle.py")
    at.query_params["cell"] = top_cell(writable_store)["cell_id"]
    at.run()
    assert any(b.label == "Sign in to review" for b in at.main.button) and not at.main.radio


def test_run_now_request_from_the_runs_page(monkeypatch, writable_store):
    monkeypatch.setenv("FRAMEWATCH_REVIEWER_PASSWORD", "pw")
    at = make_app(monkeypatch, writable_store)
    at.run()
    at.switch_page("pages/runs.py").run()
    assert "generate: ProviderError" in texts(at) or any("ProviderError" in c.value for c in at.code)
    at.main.text_input[0].input("Lead")
    at.main.text_input[1].input("pw")
    at.main.button[0].click().run()
    next(b for b in at.main.button if b.label == "Run a cycle now").click().run()
    next(b for b in at.main.button if b.label == "Re-score this batch").click().run()
    ro = open_readonly(writable_store)
    rows = [dict(r) for r in ro.query("select kind, requested_by, status from requests order by kind")]
    ro.conn.close()
    assert rows == [{"kind": "rescore_batch", "requested_by": "Lead", "status": "pending"},
                    {"kind": "run_cycle", "requested_by": "Lead", "status": "pending"}]


def test_search_finds_responses_and_articles(monkeypatch, full_store):
    at = make_app(monkeypatch, full_store, params={"q": "worries me"})
    at.run()
    at.switch_page("pages/search.py")
    at.query_params["q"] = "worries me"
    at.run()
    hits = at.dataframe[0].value
    assert len(hits) > 0 and hits["text"].str.contains("worries me").all()
    at.text_input(key="search_q").input('AND ( NEAR " *').run()
    assert not at.exception
    at.text_input(key="search_q").input("<script>").run()
    at.radio(key="search_in").set_value("articles").run()
    assert at.dataframe[0].value["title"].tolist() == [HOSTILE_TITLE]
    assert qp(at, "in") == ["articles"] and qp(at, "q") == ["<script>"]


def test_compare_two_deployments(monkeypatch, full_store):
    at = make_app(monkeypatch, full_store, params={"a": "gemma-neutral", "b": "gemma-plain"})
    at.run()
    at.switch_page("pages/compare.py")
    at.query_params["a"] = "gemma-neutral"
    at.query_params["b"] = "gemma-plain"
    at.run()
    assert not at.exception
    assert at.selectbox(key="cmp_a").value == "gemma-neutral" and at.selectbox(key="cmp_b").value == "gemma-plain"
    table = at.dataframe[0].value
    assert {"SCFS" not in c for c in table.columns} and len(table) > 0
    assert len(at.get("plotly_chart")) == 2


def test_presentation_mode_hides_filters_and_tables(monkeypatch, full_store):
    at = make_app(monkeypatch, full_store, params={"present": "1"})
    at.run()
    assert not at.exception
    assert not at.sidebar.multiselect and at.sidebar.toggle[0].value is True
    assert not at.dataframe and len(at.get("plotly_chart")) == 2
    at.switch_page("pages/stability.py").run()
    assert len(at.get("plotly_chart")) == 1  # only the headline chart of this page
    at = make_app(monkeypatch, full_store, params={"present": "1", "show": "stability.tau,stability.heatmap"})
    at.run()
    assert len(at.get("plotly_chart")) == 0
    at.switch_page("pages/stability.py").run()
    assert len(at.get("plotly_chart")) == 2
    at = make_app(monkeypatch, full_store, params={"present": "1"})
    at.run()
    at.sidebar.toggle[0].set_value(False).run()
    assert at.dataframe and len(at.get("plotly_chart")) == 2


def test_tables_offer_csv_and_charts_offer_image_download(monkeypatch, full_store):
    at = make_app(monkeypatch, full_store, params={"img": "svg"})
    at.run()
    at.switch_page("pages/hotspots.py").run()
    assert any(b.label == "Download hotspots as CSV" for b in at.get("download_button"))
    charts = at.get("plotly_chart")
    assert charts and all('"format": "svg"' in c.proto.config or '"format":"svg"' in c.proto.config for c in charts)


def test_runs_page_says_when_the_monitor_stopped_reporting(monkeypatch, writable_store):
    """A monitor that died is visible on the dashboard, not only at the monitor's next start."""
    from datetime import timedelta

    from monitor.ids import iso, utcnow
    from monitor.service_state import set_status

    db = open_writer(writable_store)
    set_status(db, "running", schedule="every 60 min")
    db.execute("update monitor_status set heartbeat_at = ?", [iso(utcnow() - timedelta(minutes=10))])
    db.conn.commit()
    db.conn.close()
    at = make_app(monkeypatch, writable_store)
    at.run()
    at.switch_page("pages/runs.py").run()
    assert not at.exception
    assert any("died or hangs" in e.value for e in at.error)
