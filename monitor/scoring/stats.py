"""Inference for framing scores: permutation test, Benjamini-Hochberg, bootstrap, Fisher, Kendall tau.

Pure numpy, vectorised over cells, and importable by the dashboard (no torch here).

The cell test (docs/METHODS.md, "Significance"): pool a cell's n identity responses with
its K identity-free repeats; the statistic is T = S(identity group) - S(repeat group), which
is SCFS. Under the null "the identity sentence changes nothing", the n + K responses are
exchangeable, so every split of the pool into groups of n and K is equally likely and
p = share of splits with T >= T_observed. With C(n+K, K) splits at most ``permutations + 1``
all are enumerated (exact test, smallest p = 1 / C(n+K, K), 1/120 for 7 identities and 3
repeats); otherwise ``permutations`` random splits give p = (1 + #{T >= T_obs}) / (B + 1).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cache

import numpy as np

TIE_TOLERANCE = 1e-9
"""Splits whose statistic equals the observed one up to float rounding count as 'as extreme' (conservative)."""


@dataclass(frozen=True, slots=True)
class SplitPlan:
    """All (or sampled) splits of a pool of n identity + k repeat responses."""

    n: int
    k: int
    pair_i: np.ndarray
    pair_j: np.ndarray
    in_a: np.ndarray
    """(splits, pairs) 1/C(n,2) where both items of a pair fall in the identity-sized group, else 0."""
    in_b: np.ndarray
    """(splits, pairs) 1/C(k,2) where both items fall in the repeat-sized group."""
    exact: bool
    observed: int
    """Row of the observed split (identities first n, repeats last k)."""

    @property
    def splits(self) -> int:
        return self.in_a.shape[0]

    @property
    def min_p(self) -> float:
        """Smallest attainable p: 1/C(n+k, k) exact, 1/(B+1) sampled."""
        return 1.0 / self.splits


@cache
def split_plan(n: int, k: int, permutations: int, seed: int) -> SplitPlan:
    if n < 2 or k < 2:
        raise ValueError(f"a permutation test needs >= 2 identity and >= 2 repeat responses, got {n} and {k}")
    total = n + k
    pair_i, pair_j = np.triu_indices(total, 1)
    exact = math.comb(total, k) <= permutations + 1
    if exact:
        # B-group (repeat-sized) positions; the observed split puts the repeats last, i.e. the last combination.
        b_sets = list(itertools.combinations(range(total), k))
        b = np.zeros((len(b_sets), total), dtype=bool)
        for row, positions in enumerate(b_sets):
            b[row, list(positions)] = True
        observed = len(b_sets) - 1
    else:
        rng = np.random.default_rng(seed)
        b = np.zeros((permutations + 1, total), dtype=bool)
        b[0, n:] = True
        for row in range(1, permutations + 1):
            b[row, rng.permutation(total)[:k]] = True
        observed = 0
    a = ~b
    in_a = (a[:, pair_i] & a[:, pair_j]) / math.comb(n, 2)
    in_b = (b[:, pair_i] & b[:, pair_j]) / math.comb(k, 2)
    return SplitPlan(n, k, pair_i, pair_j, in_a.astype(np.float64), in_b.astype(np.float64), exact, observed)


def pooled_pair_distances(pooled: np.ndarray, plan: SplitPlan) -> np.ndarray:
    """(cells, n+k, d) unit vectors -> (cells, pairs) cosine distances in the plan's pair order."""
    # float64 so that identical answers give exactly equal distances: float32 rounding would break their ties.
    x = np.asarray(pooled, dtype=np.float64)
    gram = np.einsum("cid,cjd->cij", x, x, optimize=True)
    return 1.0 - gram[:, plan.pair_i, plan.pair_j]


def permutation_test(pair_dist: np.ndarray, plan: SplitPlan) -> tuple[np.ndarray, np.ndarray]:
    """(T observed, one-sided p) per cell, from the pooled pair distances; T = S_identity - S_repeats."""
    t = pair_dist @ plan.in_a.T - pair_dist @ plan.in_b.T  # (cells, splits)
    t_obs = t[:, plan.observed]
    extreme = (t >= t_obs[:, None] - TIE_TOLERANCE).sum(axis=1)
    # The observed split is one of the rows, so a sampled plan gives (1 + #{random >= obs}) / (B + 1).
    return t_obs, extreme / plan.splits


def benjamini_hochberg(p_values: np.ndarray) -> np.ndarray:
    """BH-adjusted q-values (NaN stays NaN and does not count towards m): flag q <= FDR level."""
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return q
    pv = p[ok]
    order = np.argsort(pv, kind="mergesort")
    ranked = pv[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    q[ok] = out
    return q


def fisher_combine(p_values: np.ndarray) -> float:
    """Fisher's combined p for independent tests: X = -2 sum ln p ~ chi2(2m); NaN if none.

    With discrete permutation p-values (never below 1/splits) the combination is conservative.
    """
    p = np.asarray(p_values, dtype=np.float64)
    p = p[~np.isnan(p)]
    if p.size == 0:
        return float("nan")
    x = -2.0 * float(np.sum(np.log(np.clip(p, 1e-300, 1.0))))
    return chi2_sf_even(x, 2 * p.size)


def chi2_sf_even(x: float, dof: int) -> float:
    """Survival function of chi-square with an even number of degrees of freedom (closed form)."""
    half = x / 2.0
    term, total = 1.0, 1.0
    for i in range(1, dof // 2):
        term *= half / i
        total += term
    return float(min(1.0, math.exp(-half) * total))


@dataclass(frozen=True, slots=True)
class Interval:
    mean: float
    low: float
    high: float
    n: int
    """Values the mean is over."""
    clusters: int
    """Resampled units (articles, or cells when there is a single article)."""
    unit: str
    """'article' (cluster bootstrap) or 'cell' (fallback with fewer than two articles) or '' (no CI)."""


def bootstrap_mean(values: np.ndarray, clusters: np.ndarray | None = None, *, n_boot: int = 1000, seed: int = 7,
                   level: float = 0.95) -> Interval:
    """Mean with a percentile bootstrap CI that resamples whole clusters (articles).

    Cells of one article share the article, so they are not independent; resampling
    articles keeps that dependence. With fewer than two clusters it falls back to
    resampling values and says so in ``unit``; with fewer than two values there is no CI.
    """
    draws = _draws(values, clusters, n_boot, seed)
    if draws.n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, 0, "")
    if draws.boot is None:
        return Interval(draws.mean, float("nan"), float("nan"), draws.n, draws.clusters, "")
    low, high = _percentiles(draws.boot, level)
    return Interval(draws.mean, low, high, draws.n, draws.clusters, draws.unit)


def bootstrap_difference(a: np.ndarray, a_clusters: np.ndarray | None, b: np.ndarray, b_clusters: np.ndarray | None, *,
                         n_boot: int = 1000, seed: int = 7, level: float = 0.95) -> Interval:
    """mean(a) - mean(b) with independent cluster bootstraps of each side (e.g. the two strata)."""
    da, db = _draws(a, a_clusters, n_boot, seed), _draws(b, b_clusters, n_boot, seed + 1)
    if da.n == 0 or db.n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), da.n + db.n, da.clusters + db.clusters, "")
    if da.boot is None or db.boot is None:
        return Interval(da.mean - db.mean, float("nan"), float("nan"), da.n + db.n, da.clusters + db.clusters, "")
    low, high = _percentiles(da.boot - db.boot, level)
    unit = "article" if da.unit == db.unit == "article" else "cell"
    return Interval(da.mean - db.mean, low, high, da.n + db.n, da.clusters + db.clusters, unit)


@dataclass(frozen=True, slots=True)
class _Draws:
    mean: float
    boot: np.ndarray | None
    n: int
    clusters: int
    unit: str


def _draws(values, clusters, n_boot: int, seed: int) -> _Draws:
    v = np.asarray(values, dtype=np.float64)
    keep = ~np.isnan(v)
    v = v[keep]
    if v.size == 0:
        return _Draws(float("nan"), None, 0, 0, "")
    unit = "cell"
    labels = np.arange(v.size)
    if clusters is not None:
        cl = np.unique(np.asarray(clusters)[keep], return_inverse=True)[1]
        if cl.max() + 1 >= 2:
            labels, unit = cl, "article"
    g = int(labels.max()) + 1
    if g < 2:
        return _Draws(float(v.mean()), None, int(v.size), g, "")
    sums = np.bincount(labels, weights=v, minlength=g)
    counts = np.bincount(labels, minlength=g).astype(np.float64)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(g, np.full(g, 1.0 / g), size=n_boot).astype(np.float64)
    boot = (weights @ sums) / np.maximum(weights @ counts, 1.0)
    return _Draws(float(v.mean()), boot, int(v.size), g, unit)


def _percentiles(boot: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(boot, [alpha, 1.0 - alpha])
    return float(low), float(high)


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (handles ties); NaN with fewer than two items or when one side is constant."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if a.size < 2:
        return float("nan")
    i, j = np.triu_indices(a.size, 1)
    da, db = np.sign(a[i] - a[j]), np.sign(b[i] - b[j])
    concordance = float(np.sum(da * db))
    ties_free_a, ties_free_b = float(np.sum(da != 0)), float(np.sum(db != 0))
    if ties_free_a == 0 or ties_free_b == 0:
        return float("nan")
    return concordance / math.sqrt(ties_free_a * ties_free_b)


def sd_cv(values: np.ndarray) -> tuple[float, float]:
    """Sample SD (ddof=1) and coefficient of variation SD/|mean| of batch means; NaN where undefined."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.size < 2:
        return float("nan"), float("nan")
    sd = float(np.std(v, ddof=1))
    mean = float(np.mean(v))
    cv = sd / abs(mean) if abs(mean) > 1e-12 else float("nan")
    return sd, cv
