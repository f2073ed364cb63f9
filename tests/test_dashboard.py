"""Dashboard internals without Streamlit: read queries, review writes, safe text, bundle geometry,
aggregates, URL filters, chart builders and the serve command."""

from __future__ import annotations

import math
import re
import sqlite3
from datetime import date

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from fixtures_store import HOSTILE_TITLE, StoreSpec, build_store

from store import open_readonly, open_writer
from store import queries as q
from store.reviews import (
    REQUEST_RESCORE_BATCH,
    REQUEST_RUN_CYCLE,
    ReviewError,
    open_review_writer,
    record_request,
    record_review,
)
from ui import charts, filters, geometry, stats
from ui.text import escape_markdown, plain, shorten

SPEC = StoreSpec(batches=2, families=("impact", "bias_check"), articles_per_batch=2)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("dash") / "fw.db"
    build_store(path, SPEC)
    return path


@pytest.fixture
def ro(store_path):
    db = open_readonly(store_path)
    yield db
    db.conn.close()


# -- queries ---------------------------------------------------------------------------------

def test_store_counts_and_options_reflect_the_rows(ro):
    counts = q.store_counts(ro)
    assert counts["batches"] == 2 and counts["deployments"] == 2 and counts["articles"] == 4
    assert counts["cells"] == 2 * 2 * 2 * 2 * 6 * 2  # batches x articles x families x paraphrases x dims x deployments
    opts = q.filter_options(ro)
    assert opts["deployments"] == ["gemma-neutral", "gemma-plain"]
    assert len(opts["dimensions"]) == 6 and opts["families"] == ["bias_check", "impact"]
    assert opts["strata"] == ["identity_neutral", "identity_relevant"]


def test_cell_filters_narrow_the_rows(ro):
    every = q.cell_values(ro, q.CellFilter())
    one = q.cell_values(ro, q.CellFilter(deployments=("gemma-plain",), dimensions=("religion",), families=("impact",)))
    assert len(one) == len(every) / 2 / 6 / 2
    assert set(one["deployment"]) == {"gemma-plain"} and set(one["dimension"]) == {"religion"}
    relevant = q.cell_values(ro, q.CellFilter(strata=("identity_relevant",)))
    assert set(relevant["stratum"]) == {"identity_relevant"} and 0 < len(relevant) < len(every)
    later = q.cell_values(ro, q.CellFilter(date_from="2026-01-10"))
    assert later["batch_label"].nunique() == 1


def test_filter_values_are_bound_parameters_never_sql(ro):
    hostile = "gemma-plain' or '1'='1"
    assert q.cell_values(ro, q.CellFilter(deployments=(hostile,))).empty
    assert q.ranked_cells(ro, q.CellFilter(dimensions=("religion') --",))).empty
    assert q.cell(ro, "x' or 1=1 --") is None


def test_ranked_cells_are_significant_and_sorted(ro):
    ranked = q.ranked_cells(ro, q.CellFilter())
    assert len(ranked) > 0
    assert ranked["scfs"].is_monotonic_decreasing
    assert set(ranked["deployment"]) == {"gemma-plain"} and set(ranked["dimension"]) == {"religion"}  # the planted effect
    assert ranked["review"].isna().all()


def test_bundle_responses_hold_identities_and_controls(ro):
    top = q.ranked_cells(ro, q.CellFilter()).iloc[0]
    cell = q.cell(ro, top["cell_id"])
    rows = q.bundle_responses(ro, batch_id=cell["batch_id"], deployment=cell["deployment"], article_id=cell["article_id"],
                              family=cell["family"], paraphrase=cell["paraphrase"], dimension=cell["dimension"])
    ident = rows[rows["control"] == "identity"]
    assert set(ident["dimension"]) == {cell["dimension"]}
    assert ident["identity_key"].nunique() == 7 and set(ident["sample_index"]) == {0, 1}
    assert (rows["control"] == "identity_free").sum() == SPEC.repeats
    assert rows[rows["control"] == "placebo"]["identity_key"].nunique() == 7
    siblings = q.sibling_cells(ro, cell["batch_id"], cell["deployment"], cell["article_id"], cell["family"])
    assert len(siblings) == 6 * 2


def test_search_is_quoted_and_finds_text(ro):
    hits = q.search_responses(ro, "worries me", q.CellFilter())
    assert len(hits) > 0 and hits["text"].str.contains("worries me").all()
    assert hits["cell_id"].notna().any()
    for nasty in ('"', "AND (", "NEAR(", "*", "x' OR 1=1 --", "title:foo"):
        q.search_responses(ro, nasty, q.CellFilter())  # FTS syntax in user input is just text: no error
    articles = q.search_articles(ro, "<script>")
    assert articles["title"].tolist() == [HOSTILE_TITLE]
    only_neutral = q.search_responses(ro, "worries me", q.CellFilter(deployments=("gemma-neutral",)))
    assert set(only_neutral["deployment"]) <= {"gemma-neutral"}


def test_compare_matches_the_same_article_family_and_dimension(ro):
    cmp = q.compare_cells(ro, "gemma-plain", "gemma-neutral", q.CellFilter(dimensions=("religion",)))
    assert len(cmp) == len(q.cell_values(ro, q.CellFilter(deployments=("gemma-plain",), dimensions=("religion",))))
    assert (cmp["scfs_a"].mean() > cmp["scfs_b"].mean())  # the planted effect is in A


def test_runs_feeds_and_schema_status(ro):
    runs = q.runs(ro)
    assert set(runs["status"]) == {"ok", "failed"} and runs["error"].notna().sum() == 1
    feeds = q.feeds(ro)
    assert "HTTP 503 Service Unavailable" in feeds["last_error"].tolist()
    assert q.schema_status(ro) == {"missing_core": [], "missing_dashboard": []}


# -- the narrow writes --------------------------------------------------------------------------

@pytest.fixture
def writable(tmp_path):
    path = tmp_path / "w.db"
    build_store(path, StoreSpec(batches=1, families=("impact",), dimensions=("religion", "political"),
                                articles_per_batch=1, paraphrases=1))
    return path


def test_review_is_validated_and_recorded(writable):
    db = open_review_writer(writable)
    cell_id = db.execute("select id from cells order by scfs desc limit 1").fetchone()[0]
    with pytest.raises(ReviewError, match="unknown verdict"):
        record_review(db, cell_id=cell_id, verdict="biased!", note="", reviewer="ana", auth_method="password")
    with pytest.raises(ReviewError, match="reviewer identity"):
        record_review(db, cell_id=cell_id, verdict="noise", note="", reviewer="  ", auth_method="password")
    with pytest.raises(ReviewError, match="no cell"):
        record_review(db, cell_id="nope", verdict="noise", note="", reviewer="ana", auth_method="password")
    with pytest.raises(ReviewError, match="under 4000"):
        record_review(db, cell_id=cell_id, verdict="noise", note="x" * 5000, reviewer="ana", auth_method="password")
    record_review(db, cell_id=cell_id, verdict="stereotyping", note="Muslim answer <b>singled out</b>'; drop table cells; --",
                  reviewer="ana", auth_method="password")
    db.conn.close()
    ro = open_readonly(writable)
    row = dict(ro.execute("select cell_id, verdict, note, reviewer, dimension from reviews").fetchone()
               and next(ro.query("select cell_id, verdict, note, reviewer, dimension from reviews")))
    assert row["cell_id"] == cell_id and row["verdict"] == "stereotyping" and row["reviewer"] == "ana"
    assert "drop table cells" in row["note"] and ro["cells"].count > 0
    ranked = q.ranked_cells(ro, q.CellFilter(), significant_only=False)
    assert ranked.set_index("cell_id").loc[cell_id, "review"] == "stereotyping"
    assert cell_id not in set(q.ranked_cells(ro, q.CellFilter(), significant_only=False, unreviewed_only=True)["cell_id"])


def test_requests_are_deduplicated_while_pending(writable):
    db = open_review_writer(writable)
    first = record_request(db, kind=REQUEST_RUN_CYCLE, requested_by="ana")
    assert record_request(db, kind=REQUEST_RUN_CYCLE, requested_by="ben") == first
    batch = db.execute("select id from batches").fetchone()[0]
    record_request(db, kind=REQUEST_RESCORE_BATCH, args={"batch_id": batch}, requested_by="ana")
    with pytest.raises(ReviewError, match="no batch"):
        record_request(db, kind=REQUEST_RESCORE_BATCH, args={"batch_id": "nope"}, requested_by="ana")
    with pytest.raises(ReviewError, match="unknown request"):
        record_request(db, kind="drop_everything", requested_by="ana")
    rows = list(db.query("select kind, args_json, status from requests order by kind"))
    assert [(r["kind"], r["status"]) for r in rows] == [("rescore_batch", "pending"), ("run_cycle", "pending")]


def test_review_writer_needs_an_existing_store(tmp_path):
    from store import StoreError

    with pytest.raises(StoreError, match="framewatch init"):
        open_review_writer(tmp_path / "absent.db")
    assert not (tmp_path / "absent.db").exists()


def test_readonly_connection_cannot_write_reviews(store_path):
    ro = open_readonly(store_path)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro.execute("insert into reviews (id) values ('x')")


def test_fts_triggers_follow_new_responses(tmp_path):
    db = open_writer(tmp_path / "t.db")
    with db.conn:
        db["responses"].insert({"id": "r1", "prompt_id": "p1", "deployment": "d", "batch_id": "b", "text": "zebra crossing"})
    assert [r["id"] for r in db.query("select r.id from responses_fts f join responses r on r.rowid = f.rowid "
                                      "where responses_fts match ?", [db.quote_fts("zebra")])] == ["r1"]
    with db.conn:
        db["responses"].update("r1", {"text": "giraffe"})
    assert list(db.query("select rowid from responses_fts where responses_fts match ?", [db.quote_fts("zebra")])) == []


# -- pure helpers --------------------------------------------------------------------------------

def test_escape_markdown_neutralises_markup():
    out = escape_markdown('<script>alert(1)</script> [x](javascript:alert(1)) ![i](http://e/x.png) # h *b* $x$')
    assert re.search(r"(?<!\\)[<>\[\]()#*$!:]", out) is None  # every markup character is backslash-escaped
    assert "\\<script\\>" in out
    assert escape_markdown("line one\n    line two") == "line one  \nline two"
    assert plain(None) == "" and plain(float("nan")) == "" and plain("a\u202eb\x00") == "ab"
    assert shorten("word " * 100, 20).endswith("…") and len(shorten("word " * 100, 20)) == 20


def test_centroid_distances_by_hand():
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 2.0])  # lengths do not matter: vectors are normalised
    d = geometry.centroid_distances([e1, None, e2])
    assert d[1] is None
    assert d[0] == pytest.approx(1 - 1 / math.sqrt(2)) and d[2] == pytest.approx(1 - 1 / math.sqrt(2))
    same = geometry.centroid_distances([e1, e1 * 3])
    assert same == [pytest.approx(0.0), pytest.approx(0.0)]
    assert geometry.centroid_distances([e1]) == [None]
    assert geometry.mean_pairwise_distance([e1, e2]) == pytest.approx(1.0)


def test_embedding_blobs_decode_like_the_scorer_writes_them():
    v = np.array([0.5, -0.25, 2.0], dtype=np.float32)
    assert np.allclose(geometry.decode_embedding(v.tobytes()), v)
    assert geometry.decode_embedding(None) is None
    assert geometry.decode_embedding(b"\x00\x01\x02") is None  # not a float32 array
    assert geometry.decode_embedding(np.zeros(3, np.float32).tobytes()) is None


def test_bundle_groups_separate_samples_and_controls():
    groups = geometry.bundle_groups(["identity", "identity", "placebo", "identity_free", "identity_free"], [0, 1, 0, 0, 2])
    assert groups == [("identity", 0), ("identity", 1), ("placebo", 0), ("identity_free",), ("identity_free",)]
    v = [np.array([1.0, 0]), np.array([0, 1.0]), np.array([1.0, 0]), np.array([1.0, 0]), np.array([0, 1.0])]
    d = geometry.group_centroid_distances(groups, v)
    assert d[0] is None and d[1] is None and d[2] is None  # singleton groups have no centroid
    assert d[3] == pytest.approx(1 - 1 / math.sqrt(2))


def test_bootstrap_interval_covers_the_mean_and_refuses_single_values():
    vals = np.arange(20, dtype=float)
    mean, lo, hi, n = stats.bootstrap_mean_ci(vals)
    assert mean == pytest.approx(9.5) and lo < mean < hi and n == 20
    assert stats.bootstrap_mean_ci(vals) == (mean, lo, hi, n)  # seeded: same data, same interval
    one = stats.bootstrap_mean_ci([3.0])
    assert one[0] == 3.0 and math.isnan(one[1]) and math.isnan(one[2])
    assert stats.bootstrap_mean_ci([])[3] == 0
    clustered = stats.bootstrap_mean_ci([1.0, 1.0, 5.0, 5.0], ["a", "a", "b", "b"])
    assert clustered[1] == pytest.approx(1.0) and clustered[2] == pytest.approx(5.0)


def test_kendall_tau_and_stability_by_hand():
    assert stats.kendall_tau([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert stats.kendall_tau([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert stats.kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert math.isnan(stats.kendall_tau([1, 1], [1, 2]))
    series = pd.DataFrame({"batch_id": ["b1", "b1", "b2", "b2"], "batch_label": ["W1", "W1", "W2", "W2"],
                           "opened_at": ["1", "1", "2", "2"], "deployment": ["a", "b", "a", "b"],
                           "mean": [1.0, 2.0, 3.0, 1.0]})
    stab = stats.stability(series).set_index("deployment")
    assert stab.loc["a", "sd"] == pytest.approx(math.sqrt(2)) and stab.loc["a", "cv"] == pytest.approx(math.sqrt(2) / 2)
    tau = stats.rank_agreement(series)
    assert tau["tau"].tolist() == [pytest.approx(-1.0)] and tau["deployments"].tolist() == [2]


def test_hotspot_grid_opens_the_strongest_significant_cell():
    cells = pd.DataFrame({
        "id": ["c1", "c2", "c3"], "deployment": "d", "dimension": "religion", "family": "impact",
        "article_id": ["a1", "a2", "a3"], "valid": [1, 1, 1], "significant": [0, 1, 1], "scfs": [0.9, 0.2, 0.3]})
    grid = stats.hotspot_grid(cells)
    assert grid.loc[0, "top_cell_id"] == "c3" and grid.loc[0, "significant"] == 2 and grid.loc[0, "cells"] == 3
    assert grid.loc[0, "mean"] == pytest.approx(1.4 / 3)


def test_filters_round_trip_through_the_url():
    options = {"deployments": ["a", "b"], "dimensions": ["religion"], "families": ["impact"], "strata": ["x"]}
    f = filters.Filters(deployments=("b", "a"), dimensions=("religion",), batch="B2", date_from=date(2026, 1, 1),
                        date_to=date(2026, 2, 1))
    params = filters.to_params(f)
    assert params == {"dep": ["b", "a"], "dim": ["religion"], "batch": ["B2"], "from": ["2026-01-01"], "to": ["2026-02-01"]}
    assert filters.parse(params, options, ["B1", "B2"]) == f
    junk = filters.parse({"dep": ["a", "zzz", "a"], "batch": ["nope"], "from": ["not a date"], "to": ["2026-01-01"],
                          "fam": ["<script>"]}, options, ["B1"])
    assert junk == filters.Filters(deployments=("a",), date_to=date(2026, 1, 1))
    swapped = filters.parse({"from": ["2026-03-01"], "to": ["2026-01-01"]}, options, [])
    assert swapped.date_from < swapped.date_to
    assert f.cells().date_to == "2026-02-02"  # inclusive date -> exclusive bound
    view = filters.parse_view({"present": ["1"], "show": ["overview.scfs,hotspots.grid"], "img": ["svg"]})
    assert view == filters.View(True, ("overview.scfs", "hotspots.grid"), "svg")
    assert filters.view_params(view) == {"present": ["1"], "show": ["overview.scfs,hotspots.grid"], "img": ["svg"]}
    assert filters.parse_view({"img": ["gif"]}).image_format == "png"


def test_selected_batch_is_the_latest_in_range():
    b = pd.DataFrame({"id": ["b1", "b2", "b3"], "label": ["W1", "W2", "W3"],
                      "opened_at": ["2026-01-05T06:00:00+00:00", "2026-01-12T06:00:00+00:00", "2026-01-19T06:00:00+00:00"]})
    assert filters.selected_batch(b, filters.Filters()) == "b3"
    assert filters.selected_batch(b, filters.Filters(date_to=date(2026, 1, 12))) == "b2"
    assert filters.selected_batch(b, filters.Filters(batch="b1")) == "b1"
    assert filters.selected_batch(b, filters.Filters(date_from=date(2027, 1, 1))) is None


def test_chart_builders_return_titled_figures(ro):
    cells = q.cell_values(ro, q.CellFilter())
    series = stats.batch_series(cells, "scfs")
    figs = [
        charts.series_with_bands(series, title="t", y_title="y"),
        charts.grid_heatmap(stats.hotspot_grid(cells), title="g"),
        charts.stability_bars(stats.stability(series), title="s"),
        charts.batch_deployment_heatmap(series, title="h"),
        charts.tau_line(stats.rank_agreement(series), title="tau"),
        charts.compare_scatter(q.compare_cells(ro, "gemma-plain", "gemma-neutral", q.CellFilter()), "a", "b", title="c"),
    ]
    for fig in figs:
        assert isinstance(fig, go.Figure) and fig.layout.title.text
    bands = [t for t in figs[0].data if t.fill == "toself"]
    assert len(bands) == 2 and len([t for t in figs[0].data if t.mode == "lines+markers"]) == 2
    assert [t.name for t in figs[1].data] == ["gemma-neutral", "gemma-plain"]  # one panel per deployment
    grid_points = figs[1].data[1]
    assert len(grid_points.x) == 6 * 2 and all(len(cd[0]) == 16 for cd in grid_points.customdata)
    empty = charts.series_with_bands(series.iloc[0:0], title="t", y_title="y")
    assert empty.layout.annotations[0].text.startswith("no scored cells")
    assert charts.download_config("x", "svg")["toImageButtonOptions"]["format"] == "svg"
    assert charts.download_config("x", "gif")["toImageButtonOptions"]["format"] == "png"


def test_dashboard_command_binds_loopback_and_finds_app():
    from ui.serve import app_path, dashboard_command

    cmd = dashboard_command(8599)
    assert app_path().name == "app.py" and app_path().exists()
    assert cmd[1:4] == ["-m", "streamlit", "run"] and cmd[cmd.index("--server.address") + 1] == "127.0.0.1"
    assert cmd[cmd.index("--server.port") + 1] == "8599" and cmd[cmd.index("--server.headless") + 1] == "true"


def test_aggregates_from_cluster_sums_equal_the_monitors_aggregates(ro):
    """The dashboard sums per article in SQL; means and intervals must be the monitor's, number for number."""
    aggregate = pytest.importorskip("monitor.scoring.aggregate")
    cells = q.cell_values(ro, q.CellFilter())
    assert (cells["valid"] == 0).any()  # the fixture has invalid cells: they count where SCFS is defined
    for by, metric in ((("batch_id", "deployment"), "scfs"), (("deployment", "dimension", "family"), "scfs"),
                       (("batch_id", "deployment"), "sent_range_corrected")):
        ours = stats.grouped_ci_from_sums(q.cluster_sums(ro, q.CellFilter(), by, (metric,)), by, metric)
        theirs = aggregate.summarize(cells, list(by), metric)
        merged = ours.merge(theirs, on=list(by), suffixes=("", "_monitor"))
        assert len(merged) == len(theirs) > 0
        for col in ("mean", "ci_low", "ci_high"):
            assert merged[col].to_numpy() == pytest.approx(merged[f"{col}_monitor"].to_numpy(), nan_ok=True)
        assert (merged["n"] == merged["n_defined"]).all()
    assert stats.batch_series(cells, "scfs")[["mean", "n"]].to_numpy() == pytest.approx(
        stats.series_from_sums(q.cluster_sums(ro, q.CellFilter(), ("batch_id", "deployment"), ("scfs",)), "scfs")[
            ["mean", "n"]].to_numpy())


def test_stability_equals_the_monitors(ro):
    aggregate = pytest.importorskip("monitor.scoring.aggregate")
    cells = q.cell_values(ro, q.CellFilter())
    per_dep, pairs = aggregate.stability(cells, "scfs", batch_order=q.batches(ro)["id"].tolist())
    series = stats.series_from_sums(q.cluster_sums(ro, q.CellFilter(), ("batch_id", "deployment"), ("scfs",)), "scfs")
    ours = stats.stability(series).merge(per_dep, on="deployment")
    assert ours["sd_x"].to_numpy() == pytest.approx(ours["sd_y"].to_numpy())
    assert ours["cv_x"].to_numpy() == pytest.approx(ours["cv_y"].to_numpy())
    tau = stats.rank_agreement(series)
    assert tau["tau"].to_numpy() == pytest.approx(pairs["kendall_tau"].to_numpy(), nan_ok=True)


def test_cluster_sums_and_grid_counts_follow_the_filters(ro):
    with pytest.raises(ValueError, match="cannot aggregate"):
        q.cluster_sums(ro, q.CellFilter(), ("deployment; drop table cells",), ("scfs",))
    sums = q.cluster_sums(ro, q.CellFilter(dimensions=("religion",)), ("deployment", "dimension", "family"), ("scfs",))
    assert set(sums["dimension"]) == {"religion"} and sums["n_scfs"].sum() > 0
    batch = q.batches(ro).iloc[-1]["id"]
    counts = q.grid_counts(ro, q.CellFilter(batch_ids=(batch,)))
    assert len(counts) == 2 * 6 * 2 and counts["cells"].sum() == len(q.cell_values(ro, q.CellFilter(batch_ids=(batch,))))
    grid = stats.grid_from_sums(q.cluster_sums(ro, q.CellFilter(batch_ids=(batch,)), ("deployment", "dimension", "family"),
                                               ("scfs",)), counts)
    religion = grid[(grid["deployment"] == "gemma-plain") & (grid["dimension"] == "religion")]
    assert (religion["significant"] > 0).all() and religion["mean"].gt(0.1).all()
    one = stats.ci_from_cluster_sums(np.array([2.0]), np.array([2.0]))
    assert one[0] == 1.0 and math.isnan(one[1])
