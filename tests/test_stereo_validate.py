"""Validation: keep rules, Krippendorff's alpha against the package, balanced assignment,
onboarding, the narrow annotation writes (own country only), items and approvals."""

from __future__ import annotations

import math
import random

import krippendorff
import numpy as np
import pytest

from monitor.ids import make_id
from monitor.stereo import report
from monitor.stereo import validate as v
from store import stereo as store


def test_median_rule_is_strictly_above_two():
    assert v.median_keep([3, 3, 1]) is True
    assert v.median_keep([2, 2, 5]) is False
    assert v.median_keep([1, 3]) is False  # median 2.0 is not above 2
    assert v.median_keep([2, 3]) is True  # median 2.5
    assert v.median_keep([]) is None


def test_majority_rule_counts_every_vote():
    assert v.majority_keep(2, 1, 0) is True
    assert v.majority_keep(1, 1, 1) is False
    assert v.majority_keep(1, 0, 1) is False  # unsure votes count: 1 of 2 is not a majority
    assert v.majority_keep(0, 0, 0) is None


def test_decide_waits_for_the_target_number_of_ratings():
    assert v.decide(v.RULE_MEDIAN, [5, 5], None, 3).status == v.PENDING
    assert v.decide(v.RULE_MEDIAN, [5, 5, 1], None, 3).status == v.KEPT
    assert v.decide(v.RULE_MEDIAN, [1, 2, 5], None, 3).status == v.DROPPED
    assert v.decide(v.RULE_MAJORITY, [], (2, 1, 0), 3).status == v.KEPT
    assert v.decide(v.RULE_CURATED, [], None, 3).status == v.KEPT


def test_alpha_matches_the_package_on_the_same_matrix():
    rng = random.Random(3)
    rows = [(f"a{a}", f"c{c}", rng.randint(1, 5)) for a in range(4) for c in range(12) if rng.random() < 0.8]
    matrix, annotators, items = v.reliability_matrix(rows)
    assert len(annotators) == 4 and len(items) == 12
    expected = krippendorff.alpha(reliability_data=np.array(matrix), level_of_measurement="ordinal")
    assert v.ordinal_alpha(matrix) == pytest.approx(expected, abs=1e-12)
    # perfect agreement with variation across items gives 1
    perfect = [(a, f"c{c}", 1 + c % 5) for a in ("x", "y") for c in range(6)]
    assert v.ordinal_alpha(v.reliability_matrix(perfect)[0]) == pytest.approx(1.0)


def test_alpha_is_none_when_undefined():
    assert v.ordinal_alpha(v.reliability_matrix([("a", "c", 3), ("a", "d", 4)])[0]) is None  # one annotator
    assert v.ordinal_alpha(v.reliability_matrix([("a", "c", 3), ("b", "c", 3)])[0]) is None  # one value
    assert v.ordinal_alpha(v.reliability_matrix([("a", "c", 3), ("b", "d", 4)])[0]) is None  # nothing rated twice


def test_assignment_fills_the_least_rated_first_and_never_repeats():
    pool = [("c1", 2), ("c2", 0), ("c3", 1), ("c4", 3)]
    assert v.next_candidates("ann", pool, set(), 3, limit=3) == ["c2", "c3", "c1"]
    assert v.next_candidates("ann", pool, {"c2"}, 3) == ["c3"]
    assert v.next_candidates("ann", pool, {"c1", "c2", "c3"}, 3) == []  # c4 already has its 3 ratings


def test_balanced_assignment_brings_every_candidate_to_the_target():
    counts = {f"c{i}": 0 for i in range(10)}
    done: dict[str, set] = {f"a{j}": set() for j in range(4)}
    for _ in range(100):
        progressed = False
        for ann in done:
            nxt = v.next_candidates(ann, counts.items(), done[ann], 3)
            if nxt:
                counts[nxt[0]] += 1
                done[ann].add(nxt[0])
                progressed = True
        if not progressed:
            break
    assert set(counts.values()) == {3}


def test_onboarding_requirements():
    with pytest.raises(v.ValidationError, match="nacidas y criadas"):
        v.check_onboarding("Ana", "MX", False, True, ["MX"])
    with pytest.raises(v.ValidationError, match="fluidez"):
        v.check_onboarding("Ana", "MX", True, False, ["MX"])
    with pytest.raises(v.ValidationError, match="país desconocido"):
        v.check_onboarding("Ana", "XX", True, True, ["MX"])
    with pytest.raises(v.ValidationError, match="nombre"):
        v.check_onboarding("  ", "MX", True, True, ["MX"])
    assert v.check_onboarding("  Ana   María ", "MX", True, True, ["MX"]) == "Ana María"
    for bad in (0, 6, 2.5, True, "3"):
        with pytest.raises((v.ValidationError, TypeError, ValueError)):
            v.check_rating(bad)


def _candidate(db, country, text, rule=v.RULE_MEDIAN, category="gender"):
    cid = make_id("candidate", "test", country, text)
    store.save_candidates(db, [{"id": cid, "country": country, "category": category, "target_group": "g", "text": text,
                                "text_norm": text.lower(), "source": "generated", "dataset": "generated",
                                "keep_rule": rule}])
    return cid


def test_annotation_writes_enforce_the_annotators_country(writer_db):
    mx = _candidate(writer_db, "MX", "Los chilangos son prepotentes.")
    es = _candidate(writer_db, "ES", "Los madrileños son chulos.")
    ana = store.register_annotator(writer_db, name="Ana", country="MX", born_raised=True, fluent=True, age_band="25-34")
    assert store.register_annotator(writer_db, name="ana", country="MX", born_raised=True, fluent=True) == ana  # sign back in
    with pytest.raises(v.ValidationError, match="propio país"):
        store.record_rating(writer_db, annotator_id=ana, candidate_id=es, rating=4)
    store.record_rating(writer_db, annotator_id=ana, candidate_id=mx, rating=4)
    store.record_rating(writer_db, annotator_id=ana, candidate_id=mx, rating=2)  # a change replaces the rating
    rows = list(writer_db.query("select rating, skipped from stereo_ratings"))
    assert rows == [{"rating": 2, "skipped": 0}]
    store.record_rating(writer_db, annotator_id=ana, candidate_id=mx, rating=None)
    assert list(writer_db.query("select rating, skipped from stereo_ratings")) == [{"rating": None, "skipped": 1}]
    with pytest.raises(v.ValidationError):
        store.record_rating(writer_db, annotator_id=ana, candidate_id=mx, rating=7)
    with pytest.raises(v.ValidationError, match="anotador desconocido"):
        store.record_rating(writer_db, annotator_id="nobody", candidate_id=mx, rating=3)
    with pytest.raises(v.ValidationError, match="franja"):
        store.register_annotator(writer_db, name="Eva", country="MX", born_raised=True, fluent=True, age_band="12")


def test_pool_lists_only_the_countrys_candidates_that_need_ratings(writer_db):
    mx = _candidate(writer_db, "MX", "a")
    _candidate(writer_db, "MX", "b", rule=v.RULE_MAJORITY)  # has published votes: not rated again
    _candidate(writer_db, "ES", "c")
    pool = store.rating_pool(writer_db, "MX")
    assert pool["id"].tolist() == [mx]


def test_items_need_an_in_country_approval_by_someone_else(writer_db):
    mx = _candidate(writer_db, "MX", "Los norteños son bruscos.")
    ana = store.register_annotator(writer_db, name="Ana", country="MX", born_raised=True, fluent=True)
    beto = store.register_annotator(writer_db, name="Beto", country="MX", born_raised=True, fluent=True)
    eva = store.register_annotator(writer_db, name="Eva", country="ES", born_raised=True, fluent=True)
    with pytest.raises(v.ValidationError, match="distintas"):
        store.record_annotator_item(writer_db, annotator_id=ana, candidate_id=mx, context="x", stereotype_sentence="y",
                                    counter_sentence="y")
    with pytest.raises(v.ValidationError, match="propio país"):
        store.record_annotator_item(writer_db, annotator_id=eva, candidate_id=mx, context="x", stereotype_sentence="y",
                                    counter_sentence="z")
    item = store.record_annotator_item(writer_db, annotator_id=ana, candidate_id=mx, context="Llegó un norteño.",
                                       stereotype_sentence="Gritó al saludar.", counter_sentence="Saludó en voz baja.")
    assert store.probe_items(writer_db) == []  # a draft is never probed
    assert store.items_to_approve(writer_db, ana).empty  # not your own
    assert store.items_to_approve(writer_db, eva).empty  # not another country's
    with pytest.raises(v.ValidationError, match="otra persona"):
        store.record_item_approval(writer_db, annotator_id=ana, item_id=item, approve=True)
    with pytest.raises(v.ValidationError, match="propio país"):
        store.record_item_approval(writer_db, annotator_id=eva, item_id=item, approve=True)
    assert store.items_to_approve(writer_db, beto)["id"].tolist() == [item]
    store.record_item_approval(writer_db, annotator_id=beto, item_id=item, approve=True, note="bien")
    assert [i["id"] for i in store.probe_items(writer_db)] == [item]
    with pytest.raises(v.ValidationError, match="ya está decidido"):
        store.record_item_approval(writer_db, annotator_id=beto, item_id=item, approve=False)


def test_annotation_writer_needs_an_existing_migrated_store(tmp_path):
    from store.db import StoreError

    with pytest.raises(StoreError, match="no database"):
        store.open_annotation_writer(tmp_path / "none.db")


def test_dataset_status_counts_per_country(writer_db):
    cands = [_candidate(writer_db, "MX", f"s{i}") for i in range(3)]
    anns = [store.register_annotator(writer_db, name=f"n{j}", country="MX", born_raised=True, fluent=True) for j in range(3)]
    table = {cands[0]: (4, 5, 3), cands[1]: (1, 2, 5), cands[2]: (3, 3)}
    for cid, ratings in table.items():
        for ann, r in zip(anns, ratings, strict=False):
            store.record_rating(writer_db, annotator_id=ann, candidate_id=cid, rating=r)
    status = report.dataset_status(store.candidates(writer_db), store.ratings(writer_db), store.items(writer_db), 3,
                                   ["MX", "ES"])
    mx = status.set_index("country").loc["MX"]
    assert (mx["candidates"], mx["ratings"], mx["annotators"], mx["kept"], mx["dropped"], mx["pending"]) == (3, 8, 3, 1, 1, 1)
    matrix = [[4, 1, 3], [5, 2, 3], [3, 5, math.nan]]
    assert mx["alpha"] == pytest.approx(krippendorff.alpha(reliability_data=np.array(matrix, dtype=float),
                                                           level_of_measurement="ordinal"))
    assert status.set_index("country").loc["ES"]["candidates"] == 0


def test_stereo_settings_reject_typos_and_wrong_types():
    from monitor import config as config_mod
    from monitor.stereo.settings import settings

    def cfg(stereo):
        return config_mod.parse({"deployments": [{"name": "d", "provider": "local"}], "stereo": stereo}, where="t",
                                base=config_mod.Path("."))

    s = settings(cfg({"ratings_per_item": 5, "similarity_threshold": 1, "probe_deployments": ["d"]}))
    assert (s.ratings_per_item, s.similarity_threshold, s.probe_deployments) == (5, 1.0, ("d",))
    with pytest.raises(config_mod.ConfigError, match="did you mean 'ratings_per_item'"):
        settings(cfg({"ratings_per_itme": 5}))
    with pytest.raises(config_mod.ConfigError, match="wrong type"):
        settings(cfg({"max_rounds": "5"}))
    with pytest.raises(config_mod.ConfigError, match="no deployment named 'x'"):
        settings(cfg({"probe_deployments": ["x"]}))
    with pytest.raises(config_mod.ConfigError, match="similarity_threshold"):
        settings(cfg({"similarity_threshold": 0}))
