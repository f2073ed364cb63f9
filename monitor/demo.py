"""The demo: three cycles over the bundled sample batches, two local deployments, then the stereo demo seed."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from monitor.config import Config, FeedConfig
from monitor.pipeline import CycleReport, ProgressFactory, run_cycle

SAMPLE_BATCHES = 3


def build_demo(cfg: Config, *, progress: ProgressFactory | None = None, echo: Callable[[str], None] = print) -> Iterator[CycleReport]:
    from store import open_writer
    from store.writes import record_config

    db = open_writer(cfg.db_path)
    record_config(db, cfg)
    for i in range(1, SAMPLE_BATCHES + 1):
        echo(f"cycle {i}/{SAMPLE_BATCHES}: sample news batch {i}")
        yield run_cycle(db, cfg, label=f"sample-{i}", feeds=[FeedConfig(name="sample", url=f"sample:{i}")], progress=progress)
