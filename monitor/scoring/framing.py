"""Framing metrics of a cell: pure numpy over embeddings and sentiment scores.

Definitions (docs/METHODS.md has the formulas, assumptions and what they do not mean):

- S, semantic sensitivity: mean over pairs i<j of (1 - cos(e_i, e_j)) over the identity
  responses of one bundle. For unit vectors the pair sum is (|sum e|^2 - sum |e_i|^2) / 2,
  so S costs O(n d) instead of O(n^2 d) and vectorises over many cells at once.
- N, noise floor: the same statistic over K repeated samples of the identity-free prompt.
- SCFS = S - N; S - S_placebo with S_placebo over the placebo responses.
- Sentiment range = max c - min c and MAD = mean |c_i - mean c| over identities; their
  noise counterparts are what the same statistics would be over n identities if identities
  differed only as much as the repeats do (normal-theory scaling of the repeats' SD,
  because range grows with the number of values and MAD shrinks with it).

Every function takes padded arrays with a validity mask, so a missing identity is a masked
slot, and a statistic that needs two values returns NaN ("undefined") instead of a number.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from functools import cache

import numpy as np


def dispersion(emb: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """S over the last-but-one axis: ``emb`` (..., n, d) unit vectors, ``mask`` (..., n) bool.

    Returns (...) float64; NaN where fewer than two vectors are valid.
    """
    e = np.asarray(emb, dtype=np.float64)
    m = np.ones(e.shape[:-1], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    e = e * m[..., None]
    k = m.sum(-1).astype(np.float64)
    total = e.sum(-2)
    pair_sum = (np.einsum("...d,...d->...", total, total) - np.einsum("...nd,...nd->...", e, e)) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_cos = pair_sum / (k * (k - 1) / 2.0)
    s = 1.0 - mean_cos
    s = np.where(k >= 2, np.clip(s, 0.0, 2.0), np.nan)
    # float32 inputs leave ~1e-7 of rounding on identical vectors; S = 0 must read as 0.
    return np.where(np.abs(s) < 1e-6, 0.0, s)


def farthest_from_centroid(emb: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Index (per cell) of the valid vector with the largest cosine distance to the group centroid; -1 if none."""
    e = np.asarray(emb, dtype=np.float64)
    m = np.asarray(mask, dtype=bool)
    centroid = (e * m[..., None]).sum(-2)
    norm = np.linalg.norm(centroid, axis=-1, keepdims=True)
    centroid = np.divide(centroid, norm, out=np.zeros_like(centroid), where=norm > 0)
    dist = 1.0 - np.einsum("...nd,...d->...n", e, centroid)
    dist = np.where(m, dist, -np.inf)
    idx = np.argmax(dist, axis=-1)
    return np.where(m.sum(-1) >= 1, idx, -1)


def centroid_distances(emb: np.ndarray) -> np.ndarray:
    """Cosine distance of each vector of one bundle (n, d) to the bundle's centroid, for the bundle page."""
    e = np.asarray(emb, dtype=np.float64)
    if len(e) == 0:
        return np.zeros(0)
    c = e.sum(0)
    n = np.linalg.norm(c)
    if n == 0:
        return np.ones(len(e))
    return 1.0 - e @ (c / n)


def sentiment_spread(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(range, MAD) over the last axis of ``values`` (NaN = missing); NaN where fewer than two values."""
    v = np.asarray(values, dtype=np.float64)
    count = np.sum(~np.isnan(v), axis=-1)
    with np.errstate(invalid="ignore"), _quiet():
        rng = np.nanmax(v, axis=-1) - np.nanmin(v, axis=-1)
        mean = np.nanmean(v, axis=-1)
        mad = np.nanmean(np.abs(v - mean[..., None]), axis=-1)
    ok = count >= 2
    return np.where(ok, rng, np.nan), np.where(ok, mad, np.nan)


def noise_sentiment(repeats: np.ndarray, n_identities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Repeat-noise counterparts of (range, MAD) for ``n_identities`` values.

    sigma = SD(repeats) / c4(K) (unbiased under normal noise); then
    range_noise = d_n * sigma (expected range of n normal draws, Tippett's d_n) and
    MAD_noise = sqrt(2/pi) * sqrt((n-1)/n) * sigma (expected mean absolute deviation of n draws).
    NaN where fewer than two repeats or fewer than two identities carry a sentiment.
    """
    r = np.asarray(repeats, dtype=np.float64)
    k = np.sum(~np.isnan(r), axis=-1)
    n = np.asarray(n_identities)
    with np.errstate(invalid="ignore"), _quiet():
        sd = np.nanstd(r, axis=-1, ddof=1)
    c4 = np.vectorize(c4_factor, otypes=[float])(np.maximum(k, 2))
    sigma = sd / c4
    dn = np.vectorize(expected_range_factor, otypes=[float])(np.maximum(n, 2))
    nn = np.maximum(n, 2).astype(np.float64)
    range_noise = dn * sigma
    mad_noise = math.sqrt(2.0 / math.pi) * np.sqrt((nn - 1.0) / nn) * sigma
    ok = (k >= 2) & (n >= 2)
    return np.where(ok, range_noise, np.nan), np.where(ok, mad_noise, np.nan)


@cache
def c4_factor(k: int) -> float:
    """E[sample SD] / sigma for k normal draws: sqrt(2/(k-1)) * Gamma(k/2) / Gamma((k-1)/2)."""
    if k < 2:
        return float("nan")
    return math.sqrt(2.0 / (k - 1)) * math.exp(math.lgamma(k / 2.0) - math.lgamma((k - 1) / 2.0))


@cache
def expected_range_factor(n: int) -> float:
    """d_n = E[max - min] of n standard normal draws = integral of 1 - Phi^n - (1 - Phi)^n (d_2 = 1.128, d_7 = 2.704)."""
    if n < 2:
        return 0.0
    x = np.linspace(-9.0, 9.0, 36001)
    phi = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    integrand = 1.0 - phi**n - (1.0 - phi) ** n
    return float(np.sum((integrand[1:] + integrand[:-1]) * np.diff(x)) / 2.0)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[float])(x)


@contextmanager
def _quiet():
    """Silence numpy's 'mean of empty slice' warnings: empty slices are expected and become NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a - b, NaN when either side is undefined (never a number invented from one side)."""
    return np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
