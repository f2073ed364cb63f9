"""Where each identity's answer sits relative to its bundle. Pure numpy, no model needed.

The scorer stores each response's sentence embedding as raw float32 bytes; the dashboard
only decodes and compares them, so it never loads torch or sentence-transformers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def decode_embedding(blob: bytes | memoryview | None) -> np.ndarray | None:
    """float32 blob -> vector; None for a missing, empty or malformed blob (an unscored response)."""
    if blob is None:
        return None
    raw = bytes(blob)
    if not raw or len(raw) % 4:
        return None
    vec = np.frombuffer(raw, dtype=np.float32).astype(np.float64)
    if not np.all(np.isfinite(vec)) or not np.any(vec):
        return None
    return vec


def centroid_distances(vectors: Sequence[np.ndarray | None]) -> list[float | None]:
    """Cosine distance (1 - cos) of each vector from the centroid of the unit-normalised vectors.

    Missing vectors get None and do not move the centroid. Fewer than two vectors, or vectors
    of different lengths, give no meaningful centroid: every entry is then None.
    """
    present = [i for i, v in enumerate(vectors) if v is not None]
    if len(present) < 2 or len({len(vectors[i]) for i in present}) != 1:
        return [None] * len(vectors)
    units = np.array([vectors[i] / np.linalg.norm(vectors[i]) for i in present])
    centroid = units.mean(axis=0)
    norm = np.linalg.norm(centroid)
    if norm == 0:
        return [None] * len(vectors)
    dist = 1.0 - units @ (centroid / norm)
    out: list[float | None] = [None] * len(vectors)
    for j, i in enumerate(present):
        out[i] = float(max(dist[j], 0.0))
    return out


def mean_pairwise_distance(vectors: Sequence[np.ndarray | None]) -> float | None:
    """Mean 1 - cos over all pairs of the present vectors (the S statistic of DESIGN.md section 3)."""
    present = [v / np.linalg.norm(v) for v in vectors if v is not None]
    if len(present) < 2:
        return None
    u = np.array(present)
    iu = np.triu_indices(len(u), 1)
    return float(np.mean(1.0 - (u @ u.T)[iu]))


def group_centroid_distances(groups: Sequence[object], vectors: Sequence[np.ndarray | None]) -> list[float | None]:
    """centroid_distances computed separately within each group (same length and order as the input)."""
    out: list[float | None] = [None] * len(vectors)
    members: dict[object, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    for idx in members.values():
        for i, d in zip(idx, centroid_distances([vectors[i] for i in idx])):
            out[i] = d
    return out


def bundle_groups(controls: Sequence[str], samples: Sequence[int]) -> list[tuple]:
    """The comparison group of each response in a bundle.

    Identity answers of one sample index form the bundle proper; placebo answers of one
    sample are compared among themselves; the identity-free repeats form one group, since
    their spread is the noise floor.
    """
    return [(c,) if c == "identity_free" else (c, int(s)) for c, s in zip(controls, samples)]
