"""The team's demo seed: a few Spanish items per country and category, labelled "demo seed".

It exists so the demo shows a per-country breakdown before anyone imports the real
EspanStereo release. Its candidates are stored with the ``curated`` keep rule and its
items as approved by the team, and every row carries dataset = "demo seed".
"""

from __future__ import annotations

from sqlite_utils import Database

from monitor.ids import iso, make_id, utcnow
from monitor.stereo import validate as v
from monitor.stereo.text import normalise
from store import stereo as store

SOURCE = "demo_seed"
AUTHOR = "framewatch team (demo seed)"


def seed_rows() -> tuple[list[dict], list[dict]]:
    """Candidate and item rows of the demo seed. Pure apart from reading the packaged file."""
    from prompts.stereo import load_catalog, load_demo_seed

    seed, catalog = load_demo_seed(), load_catalog()
    now = iso(utcnow())
    candidates, items = {}, []
    for row in seed.items:
        cid = make_id("candidate", seed.dataset, row["country"], row["category"], normalise(row["stereotype"]))
        candidates[cid] = {
            "id": cid, "country": row["country"], "category": row["category"], "target_group": row["target_group"],
            "text": row["stereotype"], "text_norm": normalise(row["stereotype"]), "source": SOURCE,
            "dataset": seed.dataset, "source_file": f"prompts/stereo/demo_seed.toml@{seed.version}",
            "keep_rule": v.RULE_CURATED, "catalog_version": catalog.version, "created_at": now,
        }
        items.append({
            "id": make_id("item", cid, row["context"], row["stereotype_sentence"], row["counter_sentence"]),
            "candidate_id": cid, "country": row["country"], "category": row["category"],
            "target_group": row["target_group"], "stereotype": row["stereotype"], "context": row["context"],
            "stereotype_sentence": row["stereotype_sentence"], "counter_sentence": row["counter_sentence"],
            "source": SOURCE, "dataset": seed.dataset, "author": AUTHOR, "status": store.ITEM_APPROVED,
            "created_at": now, "decided_at": now,
        })
    return list(candidates.values()), items


def load_demo_seed(db: Database) -> int:
    """Store the demo seed (idempotent); returns the number of demo items in the store."""
    candidates, items = seed_rows()
    store.save_candidates(db, candidates)
    store.save_items(db, items)
    return len(items)
