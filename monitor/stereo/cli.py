"""`framewatch stereo ...`: build, import, validate-status and probe the stereotype dataset."""

from __future__ import annotations

from pathlib import Path

import click

from monitor.cli import with_config
from monitor.config import Config, ConfigError


def _db(cfg: Config):
    from store import open_writer

    return open_writer(cfg.db_path)


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.group()
def stereo() -> None:
    """Culture-specific stereotype probe (EspanStereo workflow) for Spanish-speaking countries."""


@stereo.command()
@with_config
@click.option("--deployment", "-d", required=True, help="Deployment that proposes candidates.")
@click.option("--country", "countries", multiple=True, help="Country code (repeatable; default: all).")
@click.option("--category", "categories", multiple=True, help="Category key (repeatable; default: all generate=true).")
@click.option("--perspective", "perspectives", multiple=True, help="Perspective key (repeatable; default: all six).")
@click.option("--max-rounds", type=int, default=None, help="Upper bound on rounds per prompt ([stereo] max_rounds, 5).")
def generate(cfg: Config, deployment: str, countries, categories, perspectives, max_rounds) -> None:
    """Ask a deployment for candidate stereotypes, in Spanish, from six perspectives, until no new one appears."""
    from monitor.stereo.generate import generate as run

    try:
        rep = run(_db(cfg), cfg, deployment, countries=countries, categories=categories, perspectives=perspectives,
                  max_rounds=max_rounds, echo=click.echo)
    except ConfigError as exc:
        raise _fail(exc) from exc
    click.echo(rep.summary())


@stereo.command("import")
@with_config
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["espanstereo", "seegull", "csv"]), required=True)
@click.option("--country", default=None, help="Country code for every row (when the file has no country column).")
@click.option("--map", "mapping", multiple=True, metavar="FIELD=COLUMN",
              help="csv only: which column holds a field (stereotype, country, category, target_group, context, "
                   "stereotype_sentence, counter_sentence, votes_stereotype, votes_non_stereotype, votes_unsure).")
def import_command(cfg: Config, file: Path, fmt: str, country: str | None, mapping) -> None:
    """Import EspanStereo, SeeGULL Multilingual or a mapped CSV, and print what was stored."""
    from monitor.stereo.importers import StereoImportError, import_file, parse_mapping

    try:
        result = import_file(_db(cfg), file, fmt, country=country, mapping=parse_mapping(mapping))
    except StereoImportError as exc:
        raise _fail(exc) from exc
    click.echo(result.summary())


@stereo.command("seed-demo")
@with_config
def seed_demo(cfg: Config) -> None:
    """Load the team's demo seed (labelled "demo seed", not EspanStereo)."""
    from monitor.stereo.seed import load_demo_seed

    n = load_demo_seed(_db(cfg))
    click.echo(f"demo seed: {n} items in the store (dataset 'demo seed'; not EspanStereo)")


@stereo.command()
@with_config
@click.option("--deployment", "-d", required=True, help="Deployment that drafts the items.")
@click.option("--country", "countries", multiple=True)
@click.option("--limit", type=int, default=None)
def draft(cfg: Config, deployment: str, countries, limit) -> None:
    """Draft test items for kept stereotypes; each waits for approval by an annotator of its country."""
    from monitor.stereo.instantiate import draft_items

    try:
        rep = draft_items(_db(cfg), cfg, deployment, countries=countries, limit=limit)
    except ConfigError as exc:
        raise _fail(exc) from exc
    click.echo(rep.summary())


@stereo.command()
@with_config
@click.option("--deployment", "-d", "deployments", multiple=True, help="Deployment (repeatable; default: all).")
@click.option("--country", "countries", multiple=True, help="Only items of this country (repeatable).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the A/B order of the forced choice.")
@click.option("--limit", type=int, default=None, help="At most this many items.")
def probe(cfg: Config, deployments, countries, seed: int, limit) -> None:
    """Probe deployments on the approved items; stores one run (a point of each country's time series)."""
    from monitor.stereo.probe import probe as run

    db = _db(cfg)
    try:
        rep = run(db, cfg, deployments or None, seed=seed, countries=countries, limit=limit, echo=click.echo)
    except ConfigError as exc:
        raise _fail(exc) from exc
    if rep.n_items == 0:
        click.echo("no approved items: run `framewatch stereo seed-demo` or import a dataset first")
    click.echo(rep.summary())


@stereo.command()
@with_config
def status(cfg: Config) -> None:
    """Dataset status per country and the latest probe scores."""
    from monitor.stereo import report
    from prompts.stereo import load_catalog
    from store import stereo as store

    db = _db(cfg)
    from monitor.stereo.settings import settings

    try:
        target = settings(cfg).ratings_per_item
    except ConfigError as exc:
        raise _fail(exc) from exc
    table = report.dataset_status(store.candidates(db), store.ratings(db), store.items(db), target,
                                  list(load_catalog().countries))
    click.echo(f"dataset (Likert target {target} ratings per candidate, kept when median > 2):")
    click.echo(table.to_string(index=False, na_rep="-"))
    scores = report.summarise(store.latest_results(db), ["deployment", "country"])
    if scores.empty:
        click.echo("\nno probe run yet: `framewatch stereo probe`")
        return
    click.echo("\nlatest probe, share of items where the stereotype wins (Wilson 95%):")
    for r in scores.to_dict("records"):
        shown = "n/a" if not r["n_valid"] else f"{r['share']:.0%} [{r['lo']:.0%}, {r['hi']:.0%}]"
        click.echo(f"  {r['deployment']:<20} {r['country']}  {shown}  n={r['n_valid']} invalid={r['n_invalid']} "
                   f"errors={r['n_error']}")
