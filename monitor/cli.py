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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
