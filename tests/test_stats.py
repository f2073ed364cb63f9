"""Permutation test, Benjamini-Hochberg, Fisher, bootstrap, Kendall tau: hand values and reference implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from monitor.scoring import stats


def _unit(rng, shape):
    v = rng.normal(size=shape)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_exact_split_plan_enumerates_every_split():
    plan = stats.split_plan(7, 3, 999, 0)
    assert plan.exact and plan.splits == math.comb(10, 3) == 120
    assert plan.min_p == pytest.approx(1 / 120)
    # observed split: the identity-sized group is the first 7 items, so its pairs are those among 0..6
    a_pairs = plan.in_a[plan.observed] > 0
    assert set(zip(plan.pair_i[a_pairs], plan.pair_j[a_pairs], strict=True)) == {
        (i, j) for i in range(7) for j in range(i + 1, 7)}
    assert plan.in_a.sum(axis=1) == pytest.approx(np.ones(120))  # weights average each group's pairs
    assert plan.in_b.sum(axis=1) == pytest.approx(np.ones(120))


def test_sampled_plan_when_there_are_too_many_splits():
    plan = stats.split_plan(20, 10, 199, 3)
    assert not plan.exact and plan.splits == 200 and plan.observed == 0
    assert plan.min_p == pytest.approx(1 / 200)
    with pytest.raises(ValueError):
        stats.split_plan(7, 1, 999, 0)


def test_statistic_is_s_identity_minus_s_repeats():
    from monitor.scoring.framing import dispersion

    x = _unit(np.random.default_rng(0), (1, 10, 16))
    plan = stats.split_plan(7, 3, 999, 0)
    t, p = stats.permutation_test(stats.pooled_pair_distances(x, plan), plan)
    assert t[0] == pytest.approx(dispersion(x[0, :7]) - dispersion(x[0, 7:]))
    assert 1 / 120 <= p[0] <= 1


def test_clear_effect_gets_the_smallest_attainable_p():
    eye = np.eye(16)
    x = np.concatenate([eye[:7], np.tile(eye[15], (3, 1))])[None]
    plan = stats.split_plan(7, 3, 999, 0)
    _, p = stats.permutation_test(stats.pooled_pair_distances(x, plan), plan)
    assert p[0] == pytest.approx(1 / 120)


def test_p_values_are_valid_under_exchangeability():
    # 4000 null cells: identity and repeat responses drawn from one distribution.
    rng = np.random.default_rng(11)
    centre = _unit(rng, (4000, 1, 24))
    x = centre + 0.4 * rng.normal(size=(4000, 10, 24)) / np.sqrt(24)
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    plan = stats.split_plan(7, 3, 999, 0)
    _, p = stats.permutation_test(stats.pooled_pair_distances(x, plan), plan)
    se = lambda a: 3 * math.sqrt(a * (1 - a) / 4000)  # noqa: E731
    for alpha in (1 / 120, 0.05, 0.2):
        assert np.mean(p <= alpha + 1e-12) <= alpha + se(alpha)
    assert abs(np.mean(p <= 0.5) - 0.5) < 0.05  # and not uselessly conservative


def test_benjamini_hochberg_hand_computed_and_against_scipy():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted 0.005, 0.01, 0.03, 0.04 -> x m/rank: 0.02, 0.02, 0.04, 0.04 (already monotone)
    assert stats.benjamini_hochberg(p) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    rng = np.random.default_rng(1)
    p = rng.uniform(size=200) ** 3
    assert stats.benjamini_hochberg(p) == pytest.approx(scipy.stats.false_discovery_control(p, method="bh"))


def test_benjamini_hochberg_ignores_undefined_p_values():
    q = stats.benjamini_hochberg(np.array([0.01, np.nan, 0.04]))
    assert np.isnan(q[1])
    assert q[[0, 2]] == pytest.approx([0.02, 0.04])  # m = 2, not 3
    assert np.isnan(stats.benjamini_hochberg(np.array([np.nan]))).all()


def test_fisher_combination_against_scipy():
    assert stats.fisher_combine(np.array([0.05])) == pytest.approx(0.05)
    p = np.array([0.01, 0.2, 0.5, 0.03])
    assert stats.fisher_combine(p) == pytest.approx(scipy.stats.combine_pvalues(p, method="fisher").pvalue)
    assert math.isnan(stats.fisher_combine(np.array([np.nan])))
    for x, dof in ((3.2, 2), (10.0, 8), (40.0, 24)):
        assert stats.chi2_sf_even(x, dof) == pytest.approx(scipy.stats.chi2.sf(x, dof))


def test_bootstrap_resamples_articles_and_falls_back_to_cells():
    values = np.array([1.0, 1.0, 3.0, 3.0, np.nan])
    ci = stats.bootstrap_mean(values, np.array(["a", "a", "b", "b", "c"]), n_boot=500, seed=1)
    assert ci.mean == pytest.approx(2.0) and ci.n == 4 and ci.clusters == 2 and ci.unit == "article"
    assert 1.0 <= ci.low <= ci.high <= 3.0
    single = stats.bootstrap_mean(values, np.array(["a"] * 5), n_boot=500, seed=1)
    assert single.unit == "cell" and single.clusters == 4
    constant = stats.bootstrap_mean(np.full(6, 0.3), np.arange(6), n_boot=200)
    assert (constant.low, constant.high) == pytest.approx((0.3, 0.3))
    one = stats.bootstrap_mean(np.array([0.5]), np.array(["a"]))
    assert one.mean == 0.5 and math.isnan(one.low) and one.unit == ""
    assert stats.bootstrap_mean(np.array([np.nan]), None).n == 0


def test_bootstrap_ci_covers_the_true_mean_most_of_the_time():
    rng = np.random.default_rng(5)
    covered = 0
    for i in range(200):
        v = rng.normal(size=60)
        ci = stats.bootstrap_mean(v, np.arange(60), n_boot=400, seed=i)
        covered += ci.low <= 0.0 <= ci.high
    assert 0.88 <= covered / 200 <= 0.99


def test_bootstrap_difference():
    ci = stats.bootstrap_difference(np.array([1.0, 1.2, 0.8, 1.0]), np.arange(4), np.array([0.0, 0.1, -0.1, 0.0]),
                                    np.arange(4), n_boot=500)
    assert ci.mean == pytest.approx(1.0)
    assert 0 < ci.low < 1.0 < ci.high


def test_kendall_tau_against_scipy_with_ties():
    x = np.array([1, 2, 3, 4, 5, 5])
    y = np.array([2, 1, 4, 3, 6, 6])
    assert stats.kendall_tau(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic)
    assert stats.kendall_tau(np.array([1, 2, 3]), np.array([3, 2, 1])) == pytest.approx(-1.0)
    assert math.isnan(stats.kendall_tau(np.array([1.0]), np.array([2.0])))
    assert math.isnan(stats.kendall_tau(np.array([1, 1]), np.array([1, 2])))


def test_sd_and_cv_of_batch_means():
    assert stats.sd_cv(np.array([1.0, 2.0, 3.0])) == pytest.approx((1.0, 0.5))
    sd, cv = stats.sd_cv(np.array([-1.0, 1.0]))
    assert sd == pytest.approx(math.sqrt(2)) and math.isnan(cv)  # mean 0: CV undefined
    assert all(math.isnan(v) for v in stats.sd_cv(np.array([0.4])))
