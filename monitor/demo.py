"""The demo: three cycles over the bundled sample batches with two local deployments, then the
EspanStereo demo seed probed on the same deployments, so every dashboard page has data."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from monitor.config import Config, FeedConfig
from monitor.ids import make_id
from monitor.pipeline import CycleReport, ProgressFactory, run_cycle

SAMPLE_BATCHES = 3
DEMO_PROBE_RUN = make_id("demo-stereo-probe")
"""Fixed id, so re-running the demo resumes its probe run instead of adding another."""


def build_demo(cfg: Config, *, progress: ProgressFactory | None = None, echo: Callable[[str], None] = print) -> Iterator[CycleReport]:
    from monitor.stereo.probe import probe
    from monitor.stereo.seed import load_demo_seed
    from store import open_writer
    from store.writes import record_config

    db = open_writer(cfg.db_path)
    record_config(db, cfg)
    for i in range(1, SAMPLE_BATCHES + 1):
        echo(f"cycle {i}/{SAMPLE_BATCHES}: sample news batch {i}")
        yield run_cycle(db, cfg, label=f"sample-{i}", feeds=[FeedConfig(name="sample", url=f"sample:{i}")], progress=progress)
    items = load_demo_seed(db)
    echo(f"stereotype probe: {items} demo-seed items (written by the team, not EspanStereo data)")
    echo(probe(db, cfg, seed=0, run_id=DEMO_PROBE_RUN).summary())
