"""One monitoring cycle: ingest -> expand + generate -> score, each a function from stored rows to stored rows.

A cycle's id derives from its batch label, so running the same cycle again (after a crash,
or on purpose) resumes it: ingest returns the closed batch, generation skips cached keys,
scoring upserts. Per-item failures are stored by the stages; only a stage that cannot run at
all marks the cycle failed, with the reason, before the error propagates.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlite_utils import Database

from monitor import runs
from monitor.config import Config, FeedConfig
from monitor.ids import make_id, utcnow

ProgressFactory = Callable[[str], Callable[[int, int], None]]
"""Given a stage name, returns the progress(done, total) callback for that stage."""


@dataclass(frozen=True, slots=True)
class CycleReport:
    run_id: str
    batch_id: str
    status: str
    counts: dict
    ingest: object
    generate: object
    score: object


def cycle_id(label: str) -> str:
    return make_id("cycle", label)


def default_label() -> str:
    return utcnow().strftime("%Y-%m-%dT%H:%M:%SZ")


def run_cycle(
    db: Database, cfg: Config, *, label: str | None = None, feeds: Sequence[FeedConfig] | None = None,
    deployments: Sequence[str] | None = None, progress: ProgressFactory | None = None, stop: threading.Event | None = None,
    embedder=None,
) -> CycleReport:
    from monitor.generate import generate_batch
    from monitor.ingest import run_ingest
    from monitor.scoring.cells import SCORER_VERSION, score_batch

    label = label or default_label()
    run_id = cycle_id(label)
    runs.start_run(db, cfg, run_id, scorer_version=SCORER_VERSION)
    stage = "ingest"
    try:
        runs.set_stage(db, run_id, stage)
        ingest = run_ingest(db, cfg, feeds=feeds, label=label)
        batch_id = ingest.batch_id
        stage = "generate"
        runs.set_stage(db, run_id, stage, batch_id=batch_id)
        generate = generate_batch(db, cfg, batch_id, run_id, deployments=deployments,
                                  progress=_tracked(db, run_id, stage, progress), stop=stop)
        if stop is not None and stop.is_set():
            counts = runs.batch_counts(db, batch_id)
            runs.finish_run(db, run_id, runs.ABANDONED, counts=counts,
                            error="stopped before the cycle finished; the next run with this label resumes it")
            return CycleReport(run_id, batch_id, runs.ABANDONED, counts, ingest, generate, None)
        stage = "score"
        runs.set_stage(db, run_id, stage, batch_id=batch_id)
        score = score_batch(db, cfg, batch_id, embedder=embedder, progress=_tracked(db, run_id, stage, progress))
    except BaseException as exc:
        runs.finish_run(db, run_id, runs.FAILED, error=f"{stage}: {type(exc).__name__}: {exc}")
        raise
    counts = runs.batch_counts(db, batch_id)
    status = runs.PARTIAL if counts["errors"] or _stopped_early(generate) else runs.OK
    runs.finish_run(db, run_id, status, counts=counts, skipped=_skipped(generate))
    return CycleReport(run_id, batch_id, status, counts, ingest, generate, score)


def _stopped_early(generate: object) -> bool:
    return bool(getattr(generate, "budget_stopped", False) or getattr(generate, "breaker_tripped", False))


def _skipped(generate: object) -> dict:
    skipped = getattr(generate, "skipped", None)
    return dict(skipped) if isinstance(skipped, dict) else {}


def _tracked(db: Database, run_id: str, stage: str, progress: ProgressFactory | None) -> Callable[[int, int], None]:
    """Progress callback that also records progress in the run row (at most every 2 s) for the dashboard."""
    outer = progress(stage) if progress else None
    last = [0.0]

    def report(done: int, total: int) -> None:
        if outer:
            outer(done, total)
        now = time.monotonic()
        if now - last[0] >= 2.0 or done >= total:
            last[0] = now
            runs.set_stage(db, run_id, stage, done=done, total=total)

    return report
