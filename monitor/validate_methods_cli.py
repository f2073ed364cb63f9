"""`framewatch validate-methods`: the command line of monitor.validate_methods (prints JSON)."""

from __future__ import annotations

import json
import sys

import click

from monitor.cli import with_config
from monitor.config import Config
from monitor.validate_methods import DEFAULT_EFFECT, DEFAULT_NOISE, power_curve, run_validation


@click.command("validate-methods")
@with_config
@click.option("--runs", type=click.IntRange(1), default=20, show_default=True, help="Seeded runs per scenario.")
@click.option("--dimension", default="religion", show_default=True, help="Dimension that gets the planted effect.")
@click.option("--effect", type=click.FloatRange(0, 1), default=DEFAULT_EFFECT, show_default=True,
              help="Share of each answer that depends on the identity (scripted provider).")
@click.option("--noise", type=click.FloatRange(0, 1), default=DEFAULT_NOISE, show_default=True,
              help="Per-sentence probability that a sample is replaced by an unrelated sentence.")
@click.option("--embedder", "embedder_name", type=click.Choice(["fake", "minilm"]), default="fake", show_default=True,
              help="fake: deterministic bag-of-words (fast); minilm: the real all-MiniLM-L6-v2.")
@click.option("--articles", type=click.IntRange(1, 6), default=3, show_default=True)
@click.option("--families", default="impact,bias_check,emotion", show_default=True, help="Comma-separated families.")
@click.option("--paraphrases", type=click.IntRange(1, 3), default=2, show_default=True)
@click.option("--repeats", type=click.IntRange(2), default=3, show_default=True, help="K identity-free samples.")
@click.option("--curve", default=None, help="Comma-separated effect sizes: print a power curve instead.")
def validate_methods(cfg: Config, runs: int, dimension: str, effect: float, noise: float, embedder_name: str,
                     articles: int, families: str, paraphrases: int, repeats: int, curve: str | None) -> None:
    """Plant an identity effect with the scripted provider, and none; print power and false-positive rate as JSON.

    Runs generate + score for real on temporary databases (--db is not touched); FDR level,
    permutations and seed come from [stats]. Exits 1 when power < 0.8 or the false-positive
    rate exceeds the FDR level.
    """
    from monitor.scoring.embed import FakeEmbedder, MiniLMEmbedder

    embedder = MiniLMEmbedder() if embedder_name == "minilm" else FakeEmbedder()
    common = dict(runs=runs, dimension=dimension, noise=noise, fdr=cfg.stats.fdr, permutations=cfg.stats.permutations,
                  stats_seed=cfg.stats.seed, embedder=embedder, families=tuple(f for f in families.split(",") if f),
                  paraphrases=paraphrases, repeats=repeats, n_articles=articles)
    bar = click.progressbar(length=runs, label="validating", file=sys.stderr)

    def progress(done: int, total: int) -> None:
        bar.update(done - bar.pos)

    if curve:
        sizes = tuple(float(x) for x in curve.split(",") if x.strip())
        click.echo(json.dumps({"embedder": embedder.name, "noise": noise, "runs": runs,
                               "curve": power_curve(sizes, **common)}, indent=2))
        return
    with bar:
        result = run_validation(effect=effect, progress=progress, **common)
    click.echo(json.dumps(result, indent=2))
    if not result["passed"]:
        sys.exit(1)
