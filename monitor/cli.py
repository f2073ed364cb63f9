"""The `framewatch` command line. Every command takes --config PATH and --db PATH."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from monitor import config as config_mod
from monitor.config import Config, ConfigError


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

    db = open_writer(cfg.db_path)
    record_config(db, cfg)
    echo_cycle(run_cycle(db, cfg, label=label, progress=progress_bars()))


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

        sys.exit(serve_dashboard(db_path, port, open_browser=True))


@main.command("dashboard")
@click.option("--port", default=8501, show_default=True, help="Port on 127.0.0.1.")
@click.option("--open-browser", is_flag=True, help="Open the dashboard in a browser once it answers.")
@with_config
def dashboard_command(cfg: Config, port: int, open_browser: bool) -> None:
    """Serve the dashboard on http://127.0.0.1:PORT over the configured database (read-only)."""
    from ui.serve import serve_dashboard

    if not Path(cfg.db_path).exists():
        click.echo(f"note: {cfg.db_path} does not exist yet; the dashboard will say how to create it.", err=True)
    sys.exit(serve_dashboard(cfg.db_path, port, open_browser=open_browser))


from monitor.stereo.cli import stereo  # noqa: E402  (imports with_config from this module)

main.add_command(stereo)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
