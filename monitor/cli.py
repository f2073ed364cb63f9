"""The `framewatch` command line. Every command takes --config PATH and --db PATH."""

from __future__ import annotations

import contextlib
import functools
import sys
from pathlib import Path

import click

from monitor import config as config_mod
from monitor.config import Config, ConfigError

if __name__ == "__main__":  # pragma: no cover
    # `python -m monitor.cli`: run the importable module instead. Command modules imported at the
    # end of this file import `monitor.cli` by name; from __main__ that import would be circular.
    from monitor.cli import main as _main

    sys.exit(_main())


def with_config(fn):
    """Add --config/--db and pass the loaded Config as the first argument; config errors exit 2 with their fix."""

    @click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="framewatch.toml (default: ./framewatch.toml if present, else the embedded demo config).")
    @click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
                  help="SQLite database (overrides [store].path).")
    @functools.wraps(fn)
    def wrapper(config_path: Path | None, db_path: Path | None, **kwargs):
        cfg = load_config(config_path, db_path)
        return fn(cfg, **kwargs)

    return wrapper


def load_config(config_path: Path | None, db_path: Path | None) -> Config:
    if config_path is None and Path("framewatch.toml").exists():
        config_path = Path("framewatch.toml")
    try:
        return config_mod.load(config_path, db_path=db_path)
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc


@click.group()
@click.version_option(package_name="framewatch")
def main() -> None:
    """framewatch: audit how language models frame the news for different audiences."""


@main.command()
@with_config
def init(cfg: Config) -> None:
    """Create (or migrate) the database and record the configured feeds and deployments."""
    from store import open_writer
    from store.writes import record_config

    db = open_writer(cfg.db_path)
    record_config(db, cfg)
    click.echo(f"database ready at {cfg.db_path} ({len(cfg.feeds)} feeds, {len(cfg.deployments)} deployments)")


def progress_bars():
    """Progress factory for the pipeline: one tqdm bar per stage with counts and ETA."""
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def factory(stage: str):
        def update(done: int, total: int) -> None:
            bar = bars.get(stage)
            if bar is None:
                bar = bars[stage] = tqdm(total=total, desc=f"{stage:>9}", unit="item", dynamic_ncols=True)
            bar.total = total
            bar.n = done
            bar.refresh()
            if done >= total:
                bar.close()

        return update

    return factory


def echo_cycle(report) -> None:
    c = report.counts
    click.echo(
        f"cycle {report.run_id} batch {report.batch_id}: {report.status}; articles {c['articles_sampled']}/{c['articles']} sampled, "
        f"{c['responses']} responses ({c['ok']} ok, {c['refusals']} refusals, {c['empty']} empty, {c['errors']} errors), "
        f"{c['cells']} cells, {c['significant_cells']} significant, cost {c['cost']:.4f}"
    )


@main.command("run-once")
@click.option("--label", default=None, help="Batch label; re-using a label resumes that cycle instead of starting a new one.")
@with_config
def run_once(cfg: Config, label: str | None) -> None:
    """One full cycle: ingest, expand, generate, score."""
    from monitor.pipeline import run_cycle
    from store import open_writer
    from store.writes import record_config

    with writer_lock(cfg):
        db = open_writer(cfg.db_path)
        record_config(db, cfg)
        echo_cycle(run_cycle(db, cfg, label=label, progress=progress_bars()))


@main.command("ingest")
@click.option("--label", default=None, help="Batch label; re-using the label of a closed batch changes nothing.")
@with_config
def ingest_command(cfg: Config, label: str | None) -> None:
    """One ingest cycle alone: fetch every enabled feed, store new articles, close a batch."""
    from monitor.ingest import format_feed_line, run_ingest
    from store import open_writer
    from store.writes import record_config

    with writer_lock(cfg):
        db = open_writer(cfg.db_path)
        record_config(db, cfg)
        shown: set[str] = set()

        def show(feed) -> None:
            shown.add(feed.name)
            click.echo(format_feed_line(feed))

        try:
            report = run_ingest(db, cfg, label=label, on_feed=show)
        except ConfigError as exc:
            raise click.ClickException(f"configuration error: {exc}") from exc
    for feed in report.feeds:  # polled before a crash, or in an already closed batch
        if feed.name not in shown:
            show(feed)
    click.echo(f"batch {report.batch_id} ({report.label}): {report.new_articles} new articles, "
               f"{report.sampled_articles} sampled for the next cycle"
               + (" [already closed: nothing changed]" if report.resumed else ""))


@main.command()
@click.option("--serve/--no-serve", default=True, help="Serve the dashboard afterwards (default) or stop after building the database.")
@click.option("--fresh", is_flag=True, help="Delete the demo database first and rebuild it from scratch.")
@click.option("--port", default=8501, show_default=True)
@click.option("--db", "db_path", type=click.Path(dir_okay=False, path_type=Path), default=Path("data/demo.db"), show_default=True)
def demo(serve: bool, fresh: bool, port: int, db_path: Path) -> None:
    """Three cycles over the bundled sample news with two local deployments, then the dashboard.

    Uses the embedded default config (Gemma 3 270M in-process, plain vs 'answer neutrally').
    Re-running it reuses what is already built: every stage is idempotent.
    """
    from monitor.demo import build_demo

    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    cfg = config_mod.load(None, db_path=db_path)
    for report in build_demo(cfg, progress=progress_bars(), echo=click.echo):
        echo_cycle(report)
    click.echo(f"demo database ready: {db_path}")
    if serve:
        from ui.serve import serve_dashboard

        sys.exit(serve_dashboard(db_path, port, open_browser=True, settings=dashboard_settings(cfg)))


@main.command()
@click.option("--batch", "batch_id", default=None, help="Estimate this stored batch (what is still to request), not a typical cycle.")
@click.option("--articles", type=int, default=None, help="Articles per cycle (default: grid.articles_per_batch, capped by budget).")
@with_config
def estimate(cfg: Config, batch_id: str | None, articles: int | None) -> None:
    """Requests, estimated tokens and cost per deployment for one cycle, before spending anything."""
    from monitor.generate import estimate as estimate_cycle
    from store.db import open_readonly

    db = open_readonly(cfg.db_path) if cfg.db_path.exists() else None
    if batch_id is not None and (db is None or not db["batches"].count_where("id = ?", [batch_id])):
        raise click.ClickException(f"no batch {batch_id!r} in {cfg.db_path}; omit --batch to estimate a typical cycle.")
    try:
        result = estimate_cycle(db, cfg, batch_id=batch_id, articles=articles)
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc
    for line in result.lines():
        click.echo(line)


@contextlib.contextmanager
def writer_lock(cfg: Config):
    """Hold the database's single-writer lock (monitor.lock), or exit 3 naming the process that holds it."""
    from monitor.lock import InstanceLock, LockHeld

    lock = InstanceLock(cfg.db_path)
    try:
        lock.acquire()
    except LockHeld as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(3)
    try:
        yield lock
    finally:
        lock.release()


@main.command("monitor")
@click.option("--once", is_flag=True,
              help="One pass and exit: resume interrupted cycles, run one new cycle, handle pending requests, alerts.")
@click.option("--progress/--no-progress", "bars", default=None,
              help="Progress bars (default: when stderr is a terminal; otherwise one log line per 10%).")
@with_config
def monitor_command(cfg: Config, once: bool, bars: bool | None) -> None:
    """The long-running monitor, the only writer of the database (see docs/OPERATIONS.md).

    Runs a cycle at start and then on [schedule] (cycle_minutes or cron, UTC), picks up
    dashboard requests, runs the stereo probe and alerts. A second monitor on the same
    database exits 3 naming the one that holds it. SIGTERM/SIGINT stop it gracefully within
    schedule.stop_grace_s; an interrupted cycle resumes at the next start.
    """
    import logging

    from monitor.service import EXIT_LOCKED, LockHeld, serve
    from monitor.worker import log_progress

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for noisy in ("apscheduler", "httpx", "httpx2"):  # one INFO line per job run / HTTP request
        logging.getLogger(noisy).setLevel(logging.WARNING)
    use_bars = sys.stderr.isatty() if bars is None else bars
    try:
        rc = serve(cfg, once=once, progress=progress_bars if use_bars else log_progress)
    except LockHeld as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_LOCKED)
    except ConfigError as exc:
        raise click.ClickException(f"configuration error: {exc}") from exc
    sys.exit(rc)


from monitor.stereo.cli import stereo  # noqa: E402  (imports with_config from this module)

main.add_command(stereo)

from monitor.snapshot_cli import alerts_command, snapshot  # noqa: E402  (imports with_config from this module)

main.add_command(snapshot)
main.add_command(alerts_command)

from monitor.validate_methods_cli import validate_methods  # noqa: E402  (imports with_config from this module)

main.add_command(validate_methods)


@main.command("dashboard")
@click.option("--port", default=8501, show_default=True, help="Port on 127.0.0.1.")
@click.option("--open-browser", is_flag=True, help="Open the dashboard in a browser once it answers.")
@click.option("--snapshot", "snapshot_path", type=click.Path(exists=True, path_type=Path), default=None,
              help="Serve a snapshot folder or .zip instead of the database (verified first; no monitor needed).")
@with_config
def dashboard_command(cfg: Config, port: int, open_browser: bool, snapshot_path: Path | None) -> None:
    """Serve the dashboard on http://127.0.0.1:PORT over the configured database (read-only)."""
    from ui.serve import serve_dashboard

    if snapshot_path is not None:
        from monitor.snapshot_cli import serve_snapshot

        sys.exit(serve_snapshot(snapshot_path, port, open_browser=open_browser))
    if not Path(cfg.db_path).exists():
        click.echo(f"note: {cfg.db_path} does not exist yet; the dashboard will say how to create it.", err=True)
    sys.exit(serve_dashboard(cfg.db_path, port, open_browser=open_browser, settings=dashboard_settings(cfg)))


def dashboard_settings(cfg: Config) -> dict[str, str]:
    """Configuration the dashboard process needs, passed as environment (it never reads framewatch.toml)."""
    from monitor.stereo.settings import settings

    return {"FRAMEWATCH_RATINGS_PER_ITEM": str(settings(cfg).ratings_per_item)}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
