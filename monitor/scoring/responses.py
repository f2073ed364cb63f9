"""Step 1 of scoring: one ``scores`` row per usable response (language, VADER, embedding).

Only responses with status 'ok' are scored; a response already scored by this scorer
version is skipped, one scored by an older version is re-scored (the row is replaced), so
the step can be re-run or resumed at any point. Texts are de-duplicated per chunk before
the embedding call, because repeats and scripted answers often coincide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from sqlite_utils import Database

from monitor.ids import iso, utcnow
from monitor.scoring import language, sentiment
from monitor.scoring.embed import Embedder

CHUNK = 512

PENDING_SQL = """
SELECT r.id AS id, r.text AS text
FROM responses r LEFT JOIN scores s ON s.response_id = r.id AND s.scorer_version = :version
WHERE r.batch_id = :batch AND r.status = 'ok' AND s.response_id IS NULL
ORDER BY r.id
"""


def pending(db: Database, batch_id: str, version: str) -> list[tuple[str, str]]:
    return [(r["id"], r["text"] or "") for r in db.query(PENDING_SQL, {"batch": batch_id, "version": version})]


def score_texts(texts: Sequence[str], embedder: Embedder) -> tuple[np.ndarray, list[language.LanguageCheck], list[float | None]]:
    """Embeddings, language checks and VADER compounds (None when not English) for ``texts``. Pure but for the model."""
    unique = list(dict.fromkeys(texts))
    position = {t: i for i, t in enumerate(unique)}
    vectors = embedder.encode(unique)
    checks = [language.check(t) for t in unique]
    compounds = [sentiment.compound(t) if c.is_english else None for t, c in zip(unique, checks, strict=True)]
    rows = [position[t] for t in texts]
    return vectors[rows], [checks[i] for i in rows], [compounds[i] for i in rows]


def score_pending(db: Database, items: Sequence[tuple[str, str]], embedder: Embedder, version: str,
                  progress: Callable[[int], None] | None = None) -> int:
    """Score and upsert ``items`` (response id, text) in chunks; returns how many were written."""
    written = 0
    for start in range(0, len(items), CHUNK):
        part = items[start:start + CHUNK]
        vectors, checks, compounds = score_texts([t for _, t in part], embedder)
        now = iso(utcnow())
        records = [
            {"response_id": rid, "scorer_version": version, "sentiment": comp, "language": chk.language,
             "is_english": int(chk.is_english), "embedding": np.asarray(vec, dtype=np.float32).tobytes(), "scored_at": now}
            for (rid, _), vec, chk, comp in zip(part, vectors, checks, compounds, strict=True)
        ]
        with db.conn:
            db["scores"].upsert_all(records, pk="response_id")
        written += len(records)
        if progress:
            progress(len(records))
    return written
