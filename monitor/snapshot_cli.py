"""`framewatch snapshot export|verify|reproduce` and `framewatch alerts`, registered by monitor/cli.py."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from monitor.cli import with_config, writer_lock
from monitor.config import Config, ConfigError


@click.group("snapshot")
def snapshot() -> None:
    """Versioned snapshots of results: export, verify against the manifest, reproduce every score table."""


@snapshot.command("export")
@click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder to write (a .zip of it is written beside it).")
@click.option("--batch", "batches", multiple=True, help="Batch id or label; repeat for several (default: every batch).")
@click.option("--deployment", "deployments", multiple=True, help="Deployment name; repeat for several (default: all).")
@click.option("--with-text", is_flag=True, help="Include the response text (needed by `snapshot reproduce`).")
@click.option("--zip/--no-zip", "make_zip", default=True, show_default=True, help="Also write OUT.zip.")
@click.option("--overwrite", is_flag=True, help="Replace OUT if it exists.")
@with_config
def export_command(cfg: Config, out: Path, batches: tuple[str, ...], deployments: tuple[str, ...], with_text: bool,
                   make_zip: bool, overwrite: bool) -> None:
    """Export chosen batches and deployments: tables (CSV + Parquet), snapshot.db, README, manifest."""
    from monitor.snapshot import SnapshotError, export_snapshot
    from store import StoreError, open_readonly

    try:
        db = open_readonly(cfg.db_path)
        result = export_snapshot(db, cfg, out, batches=batches, deployments=deployments, with_text=with_text,
                                 make_zip=make_zip, overwrite=overwrite)
    except (SnapshotError, StoreError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"snapshot written to {result.folder} ({result.files} files"
               + (f"; archive {result.zip_path}" if result.zip_path else "") + ")")
    click.echo(f"  batches: {', '.join(result.batches)}")
    click.echo(f"  deployments: {', '.join(result.deployments)}")
    click.echo("  rows: " + ", ".join(f"{t} {n}" for t, n in result.rows.items()))
    if not with_text:
        click.echo("  response text not included: `snapshot reproduce` needs a snapshot exported with --with-text")


@snapshot.command("verify")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
def verify_command(path: Path) -> None:
    """Check every file of a snapshot folder (or .zip) against its manifest; exit 1 naming any changed file."""
    from monitor.snapshot import SnapshotError, verify_snapshot

    try:
        result = verify_snapshot(path)
    except SnapshotError as exc:
        raise click.ClickException(str(exc)) from exc
    for line in result.lines():
        click.echo(line, err=not result.ok)
    sys.exit(0 if result.ok else 1)


@snapshot.command("reproduce")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--tolerance", type=float, default=None,
              help="Absolute tolerance for floats (default: the one recorded in the snapshot, 1e-6).")
def reproduce_command(path: Path, tolerance: float | None) -> None:
    """Re-score the snapshot's responses with the pinned scorer and compare every score table; exit 1 on differences."""
    from monitor.snapshot import SnapshotError
    from monitor.snapshot_reproduce import reproduce_snapshot

    try:
        report = reproduce_snapshot(path, tolerance=tolerance)
    except SnapshotError as exc:
        raise click.ClickException(str(exc)) from exc
    for line in report.lines():
        click.echo(line)
    sys.exit(0 if report.ok else 1)


@click.command("alerts")
@with_config
def alerts_command(cfg: Config) -> None:
    """Evaluate the [alerts] rules once against the database, notify new conditions, and print what happened."""
    from monitor.alerts import evaluate_alerts
    from store import open_writer

    # The monitor is the only writer: while it runs this exits 3 naming it (its own alerts job does the same work).
    with writer_lock(cfg):
        try:
            db = open_writer(cfg.db_path)
            report = evaluate_alerts(db, cfg)
        except ConfigError as exc:
            raise click.ClickException(f"configuration error: {exc}") from exc
    for line in report.lines():
        click.echo(line)
    sys.exit(1 if report.errors else 0)


def serve_snapshot(path: Path, port: int, *, open_browser: bool = False) -> int:
    """`framewatch dashboard --snapshot PATH`: verify, then serve the snapshot's SQLite copy read-only."""
    from monitor.snapshot import SnapshotError, check_database, opened, verify_snapshot
    from ui import serve

    try:
        with opened(path) as folder:
            result = verify_snapshot(folder)
            if not result.ok:
                raise click.ClickException("refusing to serve a snapshot that fails verification:\n"
                                           + "\n".join(result.lines()[1:]))
            click.echo(result.lines()[0])
            return serve.serve_dashboard(check_database(folder), port, open_browser=open_browser)
    except SnapshotError as exc:
        raise click.ClickException(str(exc)) from exc
