"""The scoring stage: responses of a batch -> scores rows -> cells rows. Re-runnable and idempotent.

Step 1 scores every 'ok' response that has no score from this scorer version (responses.py).
Step 2 assembles cells per chunk of articles (bundles.py does the maths), applies
Benjamini-Hochberg across the whole grid of the batch and upserts the cells by their
deterministic id, so scoring the same batch again rewrites the same rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sqlite_utils import Database

import prompts as prompt_data
from monitor.config import Config
from monitor.ids import iso, make_id, utcnow
from monitor.scoring import bundles, responses, stats
from monitor.scoring.embed import MINILM_NAME, Embedder
from monitor.scoring.sentiment import vader_version

FRAMING_VERSION = "framing-1"
SCORER_VERSION: str = f"{MINILM_NAME}+vader-{vader_version()}+{FRAMING_VERSION}"
ARTICLES_PER_CHUNK = 16  # bounds memory: the full grid is ~2,200 answers per article and deployment pair
WRITE_CHUNK = 1000

CELL_COLUMNS = (
    "id", "batch_id", "deployment", "article_id", "family", "paraphrase", "dimension", "stratum", "n_identities",
    "n_valid", "n_refusals", "n_errors", "n_empty", "n_missing", "n_non_english", "n_unscored", "n_sentiment",
    "n_repeats", "n_placebo", "valid", "s", "n", "scfs", "s_placebo", "s_minus_placebo", "sent_range", "sent_mad",
    "sent_range_noise", "sent_mad_noise", "sent_range_corrected", "sent_mad_corrected", "p_value", "p_min",
    "q_value", "significant", "far_identity", "sent_min_identity", "sent_max_identity", "note", "scorer_version",
    "computed_at",
)

ROWS_SQL = """
SELECT r.deployment, r.sample_index, r.status, r.created_at,
       p.article_id, p.family, p.paraphrase, p.control, p.dimension, p.identity_key,
       s.sentiment, s.is_english, s.embedding, a.stratum
FROM responses r
JOIN prompts p ON p.id = r.prompt_id
LEFT JOIN scores s ON s.response_id = r.id AND s.scorer_version = ?
LEFT JOIN articles a ON a.id = p.article_id
WHERE r.batch_id = ? AND p.article_id IN ({marks})
"""


@dataclass(frozen=True, slots=True)
class ScoreReport:
    scored_responses: int
    """Responses newly scored by this call (0 on a re-run)."""
    cells: int
    significant_cells: int
    """Cells with q <= stats.fdr across the batch's grid."""
    tested_cells: int
    """Cells with a p-value (S and N both defined)."""
    invalid_cells: int
    """Cells where some identity slot lacks a usable answer."""
    scorer_version: str
    elapsed_s: float


def scorer_version(embedder: Embedder | None) -> str:
    """The version stored with every score and cell; another embedder gives another version, so they never mix."""
    if embedder is None or embedder.name == MINILM_NAME:
        return SCORER_VERSION
    return f"{embedder.name}+vader-{vader_version()}+{FRAMING_VERSION}"


def score_batch(db: Database, cfg: Config, batch_id: str, *, embedder: Embedder | None = None,
                progress: Callable[[int, int], None] | None = None) -> ScoreReport:
    started = time.perf_counter()
    version = scorer_version(embedder)
    if embedder is None:
        from monitor.scoring.embed import default_embedder

        embedder = default_embedder()
    todo = responses.pending(db, batch_id, version)
    articles = [r["article_id"] for r in db.query(
        "SELECT DISTINCT p.article_id FROM responses r JOIN prompts p ON p.id = r.prompt_id "
        "WHERE r.batch_id = ? ORDER BY p.article_id", [batch_id])]
    chunks = [articles[i:i + ARTICLES_PER_CHUNK] for i in range(0, len(articles), ARTICLES_PER_CHUNK)]
    total = len(todo) + len(chunks)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress:
            progress(done, total)

    if progress:
        progress(0, total)
    scored = responses.score_pending(db, todo, embedder, version, progress=tick)
    expected = {d: len(ids) for d, ids in prompt_data.load_taxonomy().dimensions.items()}
    frames = []
    for chunk in chunks:
        rows, emb = load_rows(db, batch_id, chunk, version)
        frames.append(bundles.compute_cells(rows, emb, expected, cfg.stats))
        tick(1)
    cells = finalize(pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(), batch_id, version, cfg.stats.fdr)
    write_cells(db, cells)
    return ScoreReport(
        scored_responses=scored,
        cells=len(cells),
        significant_cells=int(cells["significant"].sum()) if len(cells) else 0,
        tested_cells=int(cells["p_value"].notna().sum()) if len(cells) else 0,
        invalid_cells=int((cells["valid"] == 0).sum()) if len(cells) else 0,
        scorer_version=version,
        elapsed_s=time.perf_counter() - started,
    )


def load_rows(db: Database, batch_id: str, article_ids: list[str], version: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Response rows of some articles of a batch, with their embeddings as one float32 matrix."""
    sql = ROWS_SQL.format(marks=",".join("?" * len(article_ids)))
    cursor = db.execute(sql, [version, batch_id, *article_ids])
    names = [d[0] for d in cursor.description]
    frame = pd.DataFrame.from_records(cursor.fetchall(), columns=names)
    blobs = frame.pop("embedding") if len(frame) else pd.Series(dtype=object)
    frame["has_embedding"] = blobs.notna().to_numpy() if len(frame) else []
    width = next((len(b) // 4 for b in blobs if b is not None), 0)
    emb = np.zeros((len(frame), width), dtype=np.float32)
    if width:
        present = np.flatnonzero(frame["has_embedding"].to_numpy())
        emb[present] = np.frombuffer(b"".join(blobs.iloc[present]), dtype=np.float32).reshape(len(present), width)
    frame["sentiment"] = pd.to_numeric(frame.get("sentiment"), errors="coerce")
    frame["is_english"] = pd.to_numeric(frame.get("is_english"), errors="coerce")
    return frame, emb


def finalize(cells: pd.DataFrame, batch_id: str, version: str, fdr: float) -> pd.DataFrame:
    """Add ids, BH q-values across the batch's grid, significance and versions."""
    if cells.empty:
        return pd.DataFrame(columns=list(CELL_COLUMNS))
    cells = cells.copy()
    cells["batch_id"] = batch_id
    cells["id"] = [make_id("cell", batch_id, r.deployment, r.article_id, r.family, int(r.paraphrase), r.dimension)
                   for r in cells.itertuples(index=False)]
    cells["q_value"] = stats.benjamini_hochberg(cells["p_value"].to_numpy())
    cells["significant"] = (cells["q_value"] <= fdr).fillna(False).astype(int)
    cells["scorer_version"] = version
    cells["computed_at"] = iso(utcnow())
    return cells[list(CELL_COLUMNS)]


def write_cells(db: Database, cells: pd.DataFrame) -> None:
    if cells.empty:
        return
    records = [{k: _plain(v) for k, v in row.items()} for row in cells.to_dict("records")]
    with db.conn:
        for start in range(0, len(records), WRITE_CHUNK):
            db["cells"].upsert_all(records[start:start + WRITE_CHUNK], pk="id", alter=False)


def _plain(value):
    """numpy scalars to Python, NaN to NULL (undefined stays undefined in the store)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and np.isnan(value):
        return None
    return value
