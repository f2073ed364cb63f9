"""The scoring stage end to end: responses -> scores -> cells, idempotent; plus its parts and the real model."""

from __future__ import annotations

import numpy as np
import pytest

from monitor.generate import generate_batch
from monitor.scoring import language, sentiment
from monitor.scoring.cells import SCORER_VERSION, score_batch, scorer_version
from monitor.scoring.embed import FakeEmbedder
from monitor.validate_methods import build_config, seed_articles
from store import open_writer

# --- parts -------------------------------------------------------------------------------

def test_fake_embedder_is_deterministic_unit_and_sees_shared_words():
    a, b = FakeEmbedder(), FakeEmbedder()
    texts = ["The council approved the bus lanes.", "The council approved new bus lanes.", "Stocks fell sharply in Tokyo."]
    ea, eb = a.encode(texts), b.encode(texts)
    assert ea.dtype == np.float32 and ea.shape == (3, 256)
    assert np.array_equal(ea, eb)
    assert np.linalg.norm(ea, axis=1) == pytest.approx(np.ones(3), abs=1e-6)
    assert ea[0] @ ea[1] > ea[0] @ ea[2] + 0.3
    assert a.encode([""]).shape == (1, 256)


@pytest.mark.parametrize(("text", "code", "english"), [
    ("This news will affect my family and the people in my town.", "en", True),
    ("Yes.", "en", True),
    ("Esta noticia es importante para mi familia y para mi barrio.", "es", False),
    ("Diese Nachricht ist für meine Familie und für mich sehr wichtig.", "de", False),
    ("", "und", False),
    ("12345 ...", "und", False),
])
def test_language_check(text, code, english):
    result = language.check(text)
    assert result.language == code and result.is_english is english


def test_vader_compound_sign():
    assert sentiment.compound("This is wonderful, hopeful news.") > 0.5
    assert sentiment.compound("This is a terrible, frightening attack.") < -0.5
    assert sentiment.compound("The meeting is on Tuesday.") == 0.0


def test_scorer_versions_never_mix_embedders():
    assert SCORER_VERSION.startswith("minilm-l6-v2+vader-") and SCORER_VERSION.endswith("+framing-1")
    assert scorer_version(None) == SCORER_VERSION
    assert scorer_version(FakeEmbedder()).startswith("fake-hash-256+")


# --- the stage on a real store -----------------------------------------------------------

def _batch(tmp_path, effects=None, **extra):
    db_path = tmp_path / "fw.db"
    cfg = build_config(db_path, effects={"religion": 1.0} if effects is None else effects, noise=0.1, seed=5,
                       families=["impact"], paraphrases=2, repeats=3, fdr=0.1, permutations=999, stats_seed=7,
                       extra=extra)
    db = open_writer(db_path)
    seed_articles(db, "batch-1", 2)
    generate_batch(db, cfg, "batch-1", "run-1")
    return db, cfg


def test_score_batch_writes_scores_and_cells_and_is_idempotent(tmp_path):
    db, cfg = _batch(tmp_path)
    ticks = []
    report = score_batch(db, cfg, "batch-1", embedder=FakeEmbedder(), progress=lambda d, t: ticks.append((d, t)))
    ok = db.execute("select count(*) from responses where status = 'ok'").fetchone()[0]
    assert report.scored_responses == ok == db["scores"].count
    assert report.cells == 2 * 2 * 6 == db["cells"].count  # articles x paraphrases x dimensions
    assert ticks[-1][0] == ticks[-1][1]
    row = next(db.query("select * from scores limit 1"))
    assert len(row["embedding"]) == 256 * 4 and row["scorer_version"] == report.scorer_version
    before = {r["id"]: r for r in db.query("select * from cells")}

    again = score_batch(db, cfg, "batch-1", embedder=FakeEmbedder())
    assert again.scored_responses == 0 and again.cells == report.cells
    assert db["scores"].count == ok and db["cells"].count == report.cells
    after = {r["id"]: r for r in db.query("select * from cells")}
    assert after.keys() == before.keys()
    for cid, cell in after.items():
        assert {k: v for k, v in cell.items() if k != "computed_at"} == {
            k: v for k, v in before[cid].items() if k != "computed_at"}


def test_cells_flag_the_planted_dimension_with_its_controls(tmp_path):
    db, cfg = _batch(tmp_path)
    report = score_batch(db, cfg, "batch-1", embedder=FakeEmbedder())
    cells = list(db.query("select * from cells"))
    flagged = {c["dimension"] for c in cells if c["significant"]}
    assert flagged == {"religion"} and report.significant_cells == 4
    for c in cells:
        assert c["n_identities"] == 7 and c["n_repeats"] == 3 and c["n_placebo"] == 7 and c["valid"] == 1
        assert c["scfs"] == pytest.approx(c["s"] - c["n"])
        assert c["s_minus_placebo"] == pytest.approx(c["s"] - c["s_placebo"])
        assert c["stratum"] in ("identity_relevant", "identity_neutral")
        assert c["far_identity"].startswith(c["dimension"] + ".")
    religion = [c for c in cells if c["dimension"] == "religion"]
    assert all(c["p_value"] == pytest.approx(1 / 120) for c in religion)
    assert all(c["sent_range_corrected"] > 0.5 for c in religion)  # themes differ in tone as well


def test_refusals_errors_and_other_languages_are_counted_not_scored(tmp_path):
    db, cfg = _batch(tmp_path, effects={}, refusal_rate=0.15, error_rate=0.1, non_english_rate=0.15)
    score_batch(db, cfg, "batch-1", embedder=FakeEmbedder())
    statuses = dict(db.execute("select status, count(*) from responses group by status").fetchall())
    assert statuses.get("refusal") and statuses.get("error")
    assert db["scores"].count == statuses["ok"]
    non_en = list(db.query("select * from scores where is_english = 0"))
    assert non_en and all(s["sentiment"] is None and s["language"] != "en" for s in non_en)
    cells = list(db.query("select * from cells"))
    assert sum(c["n_refusals"] for c in cells) > 0 and sum(c["n_errors"] for c in cells) > 0
    assert sum(c["n_non_english"] for c in cells) > 0
    assert any(c["valid"] == 0 and "refusals" in c["note"] for c in cells)


def test_a_new_scorer_version_rescores_without_duplicates(tmp_path):
    db, cfg = _batch(tmp_path)
    score_batch(db, cfg, "batch-1", embedder=FakeEmbedder(dim=64))
    n = db["scores"].count
    report = score_batch(db, cfg, "batch-1", embedder=FakeEmbedder(dim=128))
    assert report.scored_responses == n and db["scores"].count == n
    assert {r["scorer_version"] for r in db.query("select scorer_version from scores")} == {report.scorer_version}
    assert {r["scorer_version"] for r in db.query("select scorer_version from cells")} == {report.scorer_version}


def test_an_empty_batch_scores_nothing(tmp_path):
    db = open_writer(tmp_path / "fw.db")
    cfg = build_config(tmp_path / "fw.db", effects={}, noise=0.1, seed=1, families=["impact"], paraphrases=1,
                       repeats=3, fdr=0.1, permutations=999, stats_seed=7)
    report = score_batch(db, cfg, "nothing", embedder=FakeEmbedder())
    assert (report.scored_responses, report.cells, report.significant_cells) == (0, 0, 0)


# --- the real model ----------------------------------------------------------------------

@pytest.mark.slow
def test_real_minilm_embeddings():
    from monitor.scoring.embed import MiniLMEmbedder, load_minilm

    emb = MiniLMEmbedder()
    vectors = emb.encode(["The council approved new bus lanes.", "New bus lanes were approved by the council.",
                          "A striker scored twice in the cup final."])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(np.ones(3), abs=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3
    assert load_minilm() is load_minilm()  # loaded once per process


@pytest.mark.slow
def test_score_batch_uses_the_real_model_by_default(tmp_path):
    db_path = tmp_path / "fw.db"
    cfg = build_config(db_path, effects={"religion": 1.0}, noise=0.1, seed=5, families=["impact"], paraphrases=1,
                       repeats=3, fdr=0.1, permutations=999, stats_seed=7)
    db = open_writer(db_path)
    seed_articles(db, "batch-1", 1)
    generate_batch(db, cfg, "batch-1", "run-1")
    report = score_batch(db, cfg, "batch-1")
    assert report.scorer_version == SCORER_VERSION
    assert len(next(db.query("select embedding from scores limit 1"))["embedding"]) == 384 * 4
    religion = next(db.query("select * from cells where dimension = 'religion'"))
    others = list(db.query("select scfs from cells where dimension != 'religion'"))
    assert religion["scfs"] > max(c["scfs"] for c in others) + 0.1
