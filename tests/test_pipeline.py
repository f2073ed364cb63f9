"""One cycle end to end on the scripted provider, and the idempotency of re-running it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from monitor import config
from monitor.cli import main
from monitor.pipeline import run_cycle
from scripted_config import scripted_toml
from store import open_writer

CONFIG = scripted_toml()

TABLES = ("batches", "articles", "prompts", "responses", "scores", "cells", "runs", "feed_polls")


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "framewatch.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return config.load(path)


def counts(db) -> dict:
    return {t: db[t].count for t in TABLES}


def fake_embedder():
    from monitor.scoring.embed import FakeEmbedder

    return FakeEmbedder()


def test_cycle_stores_every_stage_and_rerun_adds_nothing(cfg):
    db = open_writer(cfg.db_path)
    report = run_cycle(db, cfg, label="week-1", embedder=fake_embedder())
    assert report.status == "ok"
    first = counts(db)
    # 2 articles x 1 family x (2 dims x 7 + 7 placebo + 3 repeats) x 2 deployments
    assert first["responses"] == 2 * (14 + 7 + 3) * 2
    assert first["cells"] == 2 * 2 * 2  # articles x dimensions x deployments
    run = db["runs"].get(report.run_id)
    recorded = json.loads(run["counts_json"])
    assert recorded["responses"] == first["responses"]
    assert recorded["cells"] == first["cells"]
    assert run["taxonomy_version"] and run["scorer_version"] and run["config_version"] == cfg.version()

    again = run_cycle(db, cfg, label="week-1", embedder=fake_embedder())
    assert again.run_id == report.run_id
    assert counts(db) == first


@pytest.mark.slow
def test_run_once_cli_twice_on_the_same_batch_creates_no_duplicates(cfg):
    """Through the real CLI and the real MiniLM embedder."""
    runner = CliRunner()
    args = ["run-once", "--config", str(cfg.path), "--label", "same-batch"]
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    db = open_writer(cfg.db_path)
    before = counts(db)
    second = runner.invoke(main, args)
    assert second.exit_code == 0, second.output
    assert counts(db) == before
    assert before["responses"] > 0
