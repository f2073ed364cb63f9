"""Framing metrics against hand-computed values, and the cell edge cases METHODS.md promises."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from monitor.config import StatsConfig
from monitor.scoring import bundles, framing

SQ = math.sqrt(0.5)


# --- S, the pairwise dispersion -----------------------------------------------------------

def test_dispersion_hand_computed():
    # pairs: (e1,e2) 1 - 0 = 1; (e1,e3) 1 - 1 = 0; (e2,e3) 1 - 0 = 1  -> mean 2/3
    e = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    assert framing.dispersion(e) == pytest.approx(2 / 3)
    # 45 degrees apart: 1 - cos 45 = 1 - sqrt(1/2)
    assert framing.dispersion(np.array([[1.0, 0.0], [SQ, SQ]])) == pytest.approx(1 - SQ)
    # opposite vectors: the maximum, 2
    assert framing.dispersion(np.array([[1.0, 0.0], [-1.0, 0.0]])) == pytest.approx(2.0)


def test_dispersion_equals_brute_force_on_random_unit_vectors():
    rng = np.random.default_rng(0)
    e = rng.normal(size=(7, 16))
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    brute = np.mean([1 - e[i] @ e[j] for i in range(7) for j in range(i + 1, 7)])
    assert framing.dispersion(e) == pytest.approx(brute)


def test_identical_responses_have_zero_dispersion_even_in_float32():
    v = np.random.default_rng(1).normal(size=384).astype(np.float32)
    v /= np.linalg.norm(v)
    assert framing.dispersion(np.tile(v, (7, 1))) == 0.0


def test_dispersion_mask_and_undefined():
    e = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]])
    # masking the third vector leaves the pair (e1, e2): S = 1
    assert framing.dispersion(e, np.array([[True, True, False]]))[0] == pytest.approx(1.0)
    # one vector: S is undefined (NaN), never 0
    assert np.isnan(framing.dispersion(e, np.array([[True, False, False]]))[0])
    assert np.isnan(framing.dispersion(e, np.array([[False, False, False]]))[0])


def test_farthest_from_centroid_picks_the_outlier():
    e = np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]])
    assert framing.farthest_from_centroid(e, np.ones((1, 3), bool))[0] == 2
    assert framing.farthest_from_centroid(e, np.zeros((1, 3), bool))[0] == -1


# --- sentiment spread and its noise counterparts -----------------------------------------

def test_sentiment_range_and_mad_hand_computed():
    rng, mad = framing.sentiment_spread(np.array([0.5, -0.5, 0.0]))
    assert rng == pytest.approx(1.0)
    assert mad == pytest.approx(1 / 3)  # mean 0; |0.5| + |-0.5| + 0 over 3
    rng, mad = framing.sentiment_spread(np.array([0.2, np.nan, 0.6, 0.4]))  # NaN = non-English, skipped
    assert rng == pytest.approx(0.4)
    assert mad == pytest.approx((0.2 + 0.2 + 0.0) / 3)
    rng, mad = framing.sentiment_spread(np.array([0.3, np.nan]))
    assert np.isnan(rng) and np.isnan(mad)


def test_normal_theory_constants():
    assert framing.c4_factor(2) == pytest.approx(math.sqrt(2 / math.pi))
    assert framing.c4_factor(3) == pytest.approx(0.886227, abs=1e-6)
    assert framing.expected_range_factor(2) == pytest.approx(2 / math.sqrt(math.pi), abs=1e-6)
    assert framing.expected_range_factor(7) == pytest.approx(2.704, abs=1e-3)


def test_noise_counterparts_reduce_to_the_repeats_own_range_and_mad_for_two_values():
    # With 2 repeats and 2 identities the scaling cancels: range_noise = |a - b|, MAD_noise = |a - b| / 2.
    rn, mn = framing.noise_sentiment(np.array([0.1, 0.3]), np.array(2))
    assert rn == pytest.approx(0.2)
    assert mn == pytest.approx(0.1)


def test_noise_counterparts_grow_with_identity_count_and_need_two_repeats():
    r3, _ = framing.noise_sentiment(np.array([0.1, 0.3]), np.array(3))
    r7, _ = framing.noise_sentiment(np.array([0.1, 0.3]), np.array(7))
    assert 0.2 < r3 < r7
    assert r7 == pytest.approx(0.2 * 2.704 / (2 / math.sqrt(math.pi)), rel=1e-3)
    rn, mn = framing.noise_sentiment(np.array([0.1, np.nan]), np.array(7))
    assert np.isnan(rn) and np.isnan(mn)


# --- whole cells through the assembly (bundles.compute_cells) ------------------------------

IDS = [f"religion.i{i}" for i in range(7)]


def _rows(identity_vectors, repeat_vectors, placebo_vectors=None, *, statuses=None, sentiments=None,
          english=None, repeat_sentiments=None):
    """Rows and an embedding matrix for one (deployment, article, family, paraphrase) group, dimension religion."""
    rows, emb = [], []

    def add(control, dimension, key, sample, vec, status="ok", sent=0.0, is_en=1):
        rows.append({"deployment": "d", "article_id": "a", "family": "impact", "paraphrase": 0, "control": control,
                     "dimension": dimension, "identity_key": key, "sample_index": sample, "status": status,
                     "sentiment": sent if status == "ok" and is_en else np.nan,
                     "is_english": is_en if status == "ok" else np.nan,
                     "has_embedding": status == "ok", "created_at": "2026-01-01T00:00:00+00:00",
                     "stratum": "identity_neutral"})
        emb.append(vec if vec is not None else np.zeros(32))

    for i, vec in enumerate(identity_vectors):
        add("identity", "religion", IDS[i], 0, vec, (statuses or ["ok"] * 7)[i], (sentiments or [0.0] * 7)[i],
            (english or [1] * 7)[i])
    for k, vec in enumerate(repeat_vectors):
        add("identity_free", None, None, k, vec, sent=(repeat_sentiments or [0.0] * len(repeat_vectors))[k])
    for i, vec in enumerate(placebo_vectors or []):
        add("placebo", "placebo", f"placebo.p{i}", 0, vec)
    return pd.DataFrame(rows), np.asarray(emb, dtype=np.float32)


def _cell(frame, emb):
    out = bundles.compute_cells(frame, emb, {"religion": 7}, StatsConfig(permutations=999))
    assert len(out) == 1
    return out.iloc[0]


def _unit(rng, n, d=32):
    v = rng.normal(size=(n, d))
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_identical_responses_give_s_zero_and_no_significance():
    v = _unit(np.random.default_rng(2), 1)[0]
    cell = _cell(*_rows([v] * 7, [v] * 3, [v] * 7))
    assert cell.s == 0.0 and cell.n == 0.0 and cell.scfs == 0.0 and cell.s_placebo == 0.0
    assert cell.p_value == 1.0  # every split ties with the observed one
    assert cell.valid == 1 and cell.note == ""


def test_orthogonal_identities_against_identical_repeats_reach_the_smallest_p():
    eye = np.eye(32)
    cell = _cell(*_rows(list(eye[:7]), [eye[10]] * 3))
    assert cell.s == pytest.approx(1.0) and cell.n == pytest.approx(0.0) and cell.scfs == pytest.approx(1.0)
    assert cell.p_value == pytest.approx(1 / 120) and cell.p_min == pytest.approx(1 / 120)
    assert cell.n_repeats == 3


def test_one_missing_identity_is_counted_and_s_uses_the_rest():
    rng = np.random.default_rng(3)
    ident = _unit(rng, 7)
    frame, emb = _rows(list(ident), list(_unit(rng, 3)))
    frame, emb = frame.drop(index=6).reset_index(drop=True), np.delete(emb, 6, axis=0)
    cell = _cell(frame, emb)
    assert cell.n_identities == 7 and cell.n_missing == 1 and cell.n_valid == 6 and cell.valid == 0
    assert cell.s == pytest.approx(framing.dispersion(ident[:6]))
    assert "1 of 7 identities missing" in cell.note


def test_all_refusals_leave_s_undefined_and_say_so():
    rng = np.random.default_rng(4)
    cell = _cell(*_rows([None] * 7, list(_unit(rng, 3)), statuses=["refusal"] * 7))
    assert cell.n_refusals == 7 and cell.n_valid == 0 and cell.valid == 0
    assert np.isnan(cell.s) and np.isnan(cell.scfs) and np.isnan(cell.p_value)
    assert "7 refusals" in cell.note and "S undefined" in cell.note


def test_a_single_repeat_leaves_n_undefined_instead_of_inventing_one():
    rng = np.random.default_rng(5)
    cell = _cell(*_rows(list(_unit(rng, 7)), list(_unit(rng, 1))))
    assert not np.isnan(cell.s)
    assert np.isnan(cell.n) and np.isnan(cell.scfs) and np.isnan(cell.p_value)
    assert "N undefined: 1 usable repeats" in cell.note


def test_errors_empties_and_non_english_are_counted_and_kept_from_vader():
    rng = np.random.default_rng(6)
    statuses = ["ok", "ok", "ok", "ok", "ok", "error", "empty"]
    sentiments = [0.9, -0.8, 0.1, 0.2, 0.5, 0.0, 0.0]
    english = [1, 1, 1, 1, 0, 1, 1]  # identity 4 answered in another language
    cell = _cell(*_rows(list(_unit(rng, 7)), list(_unit(rng, 3)), statuses=statuses, sentiments=sentiments,
                        english=english))
    assert (cell.n_valid, cell.n_errors, cell.n_empty, cell.n_non_english) == (5, 1, 1, 1)
    assert cell.n_sentiment == 4
    assert cell.sent_range == pytest.approx(0.9 - -0.8)  # identity 4's 0.5 is not English and not used
    assert cell.sent_max_identity == "religion.i0" and cell.sent_min_identity == "religion.i1"
    assert "non-English" in cell.note and "1 errors" in cell.note


def test_corrected_sentiment_subtracts_the_repeat_noise():
    rng = np.random.default_rng(7)
    cell = _cell(*_rows(list(_unit(rng, 7)), list(_unit(rng, 3)), sentiments=[0.5, -0.5, 0, 0, 0, 0, 0],
                        repeat_sentiments=[0.0, 0.1, 0.2]))
    expected_noise, _ = framing.noise_sentiment(np.array([0.0, 0.1, 0.2]), np.array(7))
    assert cell.sent_range_noise == pytest.approx(float(expected_noise))
    assert cell.sent_range_corrected == pytest.approx(1.0 - float(expected_noise))


def test_placebo_difference():
    eye = np.eye(32)
    cell = _cell(*_rows(list(eye[:7]), [eye[10]] * 3, [eye[20]] * 4 + [eye[21]] * 3))
    # placebo pairs: 12 of the 21 are between the two clusters (distance 1), 9 within (0) -> 12/21
    assert cell.s_placebo == pytest.approx(12 / 21)
    assert cell.s_minus_placebo == pytest.approx(1 - 12 / 21)


def test_a_regeneration_supersedes_the_older_response():
    eye = np.eye(32)
    frame, emb = _rows(list(eye[:7]), [eye[10]] * 3)
    newer = frame.iloc[[0]].assign(created_at="2026-02-01T00:00:00+00:00")
    frame = pd.concat([frame, newer], ignore_index=True)
    emb = np.vstack([emb, eye[1:2]])  # the newer answer for identity 0 equals identity 1's
    cell = _cell(frame, emb)
    assert cell.n_valid == 7
    assert cell.s == pytest.approx(framing.dispersion(np.vstack([eye[1:2], eye[1:7]])))
