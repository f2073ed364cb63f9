"""Core writes: configuration records and run records. Every write is an idempotent upsert."""

from __future__ import annotations

import json
from dataclasses import asdict

from sqlite_utils import Database

from monitor.config import Config
from monitor.ids import iso, make_id, utcnow


def feed_id(name: str) -> str:
    return make_id("feed", name)


def record_config(db: Database, cfg: Config) -> None:
    """Upsert the configured feeds and deployments so the dashboard can name them."""
    now = iso(utcnow())
    with db.conn:
        for f in cfg.feeds:
            db["feeds"].upsert({"id": feed_id(f.name), "name": f.name, "url": f.url}, pk="id")
        for d in cfg.deployments:
            params = {k: v for k, v in asdict(d).items() if k not in ("name", "provider", "model", "prompt_style", "system_prompt")}
            db["deployments"].upsert(
                {"name": d.name, "provider": d.provider, "model": d.model, "prompt_style": d.prompt_style,
                 "system_prompt": d.system_prompt, "params_json": json.dumps(params, sort_keys=True),
                 "config_hash": make_id(asdict(d)), "updated_at": now},
                pk="name",
            )
