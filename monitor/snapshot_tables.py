"""Snapshot tables: scrubbing stored rows, typed DataFrames, prompt data tables, and derived score tables.

The derived tables (aggregates, hotspots, stability, rank agreement) are computed from the
cells by monitor.scoring.aggregate, the statistics of record, both at export and again at
reproduction, so the two sides can only differ if the cells do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pandas as pd

import prompts as prompt_data
from monitor.snapshot_scrub import scrub_config, scrub_prose, scrub_text

PROSE_COLUMNS = {
    ("articles", "title"), ("articles", "summary"), ("prompts", "question"), ("responses", "text"),
    ("deployments", "system_prompt"), ("feeds", "feed_title"),
}
"""Free text scrubbed only of secret values and unmistakable key shapes (see snapshot_scrub.scrub_prose)."""
DROP_FROM_FILES = {("scores", "embedding")}
"""Binary columns kept in snapshot.db only (CSV cannot hold them; reproduce recomputes them)."""
DTYPES = {int: "Int64", float: "float64", str: "object", bytes: "object"}


def scrub_rows(table: str, rows: Iterable[dict], secrets: list[str], *, with_text: bool) -> list[dict]:
    out = []
    for row in rows:
        clean = {}
        for col, value in row.items():
            if table == "responses" and col == "text" and not with_text:
                value = None
            elif isinstance(value, str):
                value = _scrub_value(table, col, value, secrets)
            clean[col] = value
        out.append(clean)
    return out


def _scrub_value(table: str, col: str, value: str, secrets: list[str]) -> str:
    if (table, col) in PROSE_COLUMNS:
        return scrub_prose(value, secrets)
    if col.endswith("_json") and value[:1] in "{[":
        try:
            parsed = json.loads(value)
        except ValueError:
            return scrub_text(value, secrets)
        return json.dumps(scrub_config(parsed, secrets), sort_keys=True, ensure_ascii=False)
    return scrub_text(value, secrets)


def frame(rows: list[dict], types: dict[str, type], table: str) -> pd.DataFrame:
    """Rows as a DataFrame typed by the store's declared column types (nullable integers stay integers)."""
    cols = [c for c in types if (table, c) not in DROP_FROM_FILES]
    df = pd.DataFrame.from_records(rows, columns=list(types))[cols] if rows else pd.DataFrame(columns=cols)
    return df.astype({c: DTYPES.get(types[c], "object") for c in cols})


def prompt_tables() -> dict[str, pd.DataFrame]:
    """The prompt templates, frames and taxonomy as tables (the TOML files are copied beside them)."""
    fams = prompt_data.load_families()
    templates = pd.DataFrame(
        [(f.key, f.title, i, t, fams.version) for f in fams.families.values() for i, t in enumerate(f.templates)],
        columns=["family", "title", "paraphrase", "template", "families_version"],
    ).astype({"paraphrase": "Int64"})
    fr = prompt_data.load_frames()
    frames = pd.DataFrame(
        [("completion", fr.completion, fr.version), ("completion_with_system", fr.completion_with_system, fr.version),
         ("chat_user", fr.chat_user, fr.version), ("stop", json.dumps(list(fr.stop)), fr.version)],
        columns=["name", "text", "frames_version"],
    )
    tax = prompt_data.load_taxonomy()
    groups = [*tax.dimensions.values(), tax.placebo]
    identities = pd.DataFrame(
        [(i.dimension, i.key, i.label, i.sentence, tax.version) for group in groups for i in group],
        columns=["dimension", "key", "label", "sentence", "taxonomy_version"],
    )
    return {"templates": templates, "frames": frames, "identities": identities}


PROMPT_FILES = ("identities.toml", "families.toml", "controls.toml")


def prompt_file_texts() -> dict[str, str]:
    from importlib import resources

    return {name: resources.files("prompts").joinpath(name).read_text(encoding="utf-8") for name in PROMPT_FILES}


DERIVED_KEYS = {
    "aggregates": ["metric", "batch_id", "deployment", "dimension", "family"],
    "deployment_batches": ["metric", "deployment", "batch_id"],
    "hotspots": ["batch_id", "deployment", "dimension", "family"],
    "stability": ["metric", "deployment"],
    "rank_agreement": ["metric", "batch_from", "batch_to"],
}
"""Each derived table and the columns that identify its rows (reproduce compares rows on these)."""


def derived_tables(cells: pd.DataFrame, cfg, batch_order: list[str]) -> dict[str, pd.DataFrame]:
    """The aggregate score tables, from the cells, by monitor.scoring.aggregate with the config's bootstrap settings."""
    from monitor.scoring import aggregate

    boot = {"n_boot": cfg.stats.bootstrap, "seed": cfg.stats.seed}
    # Ties in the "most frequent identities" lists follow input order: fix the order so both sides agree.
    cells = cells.sort_values("id", kind="stable").reset_index(drop=True) if len(cells) else cells
    groups, series, stab, pairs = [], [], [], []
    for metric in aggregate.METRICS:
        groups.append(aggregate.summarize(cells, list(aggregate.GROUP_KEYS), metric, **boot).assign(metric=metric))
        series.append(aggregate.summarize(cells, ["deployment", "batch_id"], metric, **boot).assign(metric=metric))
        per_dep, per_pair = aggregate.stability(cells, metric, batch_order=batch_order)
        stab.append(per_dep.assign(metric=metric))
        pairs.append(per_pair.assign(metric=metric))
    hot = aggregate.hotspot_groups(cells, fdr=cfg.stats.fdr, top=None, only_significant=False, **boot)
    tables = {"aggregates": groups, "deployment_batches": series, "stability": stab, "rank_agreement": pairs}
    out = {name: _first(pd.concat(parts, ignore_index=True), DERIVED_KEYS[name]) for name, parts in tables.items()}
    out["hotspots"] = hot.reset_index(drop=True)
    return {name: out[name] for name in DERIVED_KEYS}


def _first(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Key columns first, rows in key order: a stable layout for readers and for comparison."""
    cols = keys + [c for c in df.columns if c not in keys]
    return df[cols].sort_values(keys, kind="stable").reset_index(drop=True)
