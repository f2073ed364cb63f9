"""A realistic synthetic store, written row by row, for dashboard tests and the scale benchmark.

Nothing here calls a model: embeddings are unit vectors built from an article/family base,
sampling noise and a per-identity direction, so cells have the same shape and meaning as
real ones (S, N, SCFS, placebo, sentiment spread, refusals, errors, non-English answers).
One deployment carries a planted identity effect in one dimension, so the hotspots are real.

Usage: ``build_store(path, StoreSpec(batches=3))``. bench/make_store.py reuses it at scale.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

import prompts as prompt_data
from monitor.ids import iso, make_id
from store import open_writer

HOSTILE_TITLE = '<script>alert("framewatch")</script> City council <b>approves</b> housing plan'

TOPICS = (
    ("City council approves housing plan", "The plan adds 4,000 affordable homes over five years."),
    ("Central bank holds interest rates", "Policymakers kept rates unchanged, citing slowing inflation."),
    ("Heatwave strains regional power grid", "Officials asked residents to cut energy use in the afternoon."),
    ("New visa rules for seasonal workers", "The rules shorten processing times for farm labour permits."),
    ("Court rules on religious dress at work", "Judges said employers must justify any ban on religious symbols."),
    ("School meals expanded to all pupils", "Every primary school pupil will receive a free lunch from September."),
    ("Election turnout hits record high", "More than 70 percent of registered voters cast a ballot."),
    ("Hospital waiting lists grow again", "Patients now wait an average of 19 weeks for planned surgery."),
    ("Tech firm lays off 2,000 staff", "The company blamed weaker demand for consumer devices."),
    ("Flooding displaces thousands in river valley", "Emergency shelters opened after two days of heavy rain."),
    ("Minimum wage to rise next April", "The increase of 6 percent affects about two million workers."),
    ("Bus fares frozen for another year", "The transport authority will cover the shortfall from reserves."),
)
OPENERS = ("For someone like me,", "Honestly,", "From where I stand,", "In my situation,", "Personally,")
POSITIVE = ("this is good news and gives me hope", "it could really help people around me", "I welcome this change")
NEGATIVE = ("this worries me a lot", "it could make life harder for us", "I feel ignored and frustrated by it")
NEUTRAL = ("it probably changes little day to day", "I would need more details to judge it", "it is one more thing to follow")
SPANISH = "Para alguien como yo, esta noticia es importante y me hace pensar en mi comunidad."
REFUSAL = "I'm sorry, but I can't help with that request."


@dataclass(frozen=True, slots=True)
class StoreSpec:
    batches: int = 3
    deployments: tuple[str, ...] = ("gemma-plain", "gemma-neutral")
    articles_per_batch: int = 2
    dimensions: tuple[str, ...] = ()
    """Empty = all six."""
    families: tuple[str, ...] = ()
    """Empty = all seven."""
    paraphrases: int = 2
    identity_samples: int = 2
    repeats: int = 3
    placebo: bool = True
    embedding_dim: int = 384
    seed: int = 7
    start: datetime = datetime(2026, 1, 5, 6, 0, tzinfo=UTC)
    batch_every: timedelta = timedelta(days=7)
    planted_dimension: str = "religion"
    planted_effect: float = 0.55
    hostile_title: bool = True
    """Give the first article of the latest batch a title with markup, to prove it renders as text."""
    failed_run: bool = True
    bulk: bool = False
    """Drop the FTS triggers during the load and rebuild the index once (much faster at scale)."""
    rates: dict = field(default_factory=lambda: {"refusal": 0.01, "error": 0.005, "spanish": 0.02})


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def _pairwise_distance(vs: np.ndarray) -> float:
    if len(vs) < 2:
        return float("nan")
    u = _unit(vs)
    sims = u @ u.T
    iu = np.triu_indices(len(vs), 1)
    return float(np.mean(1.0 - sims[iu]))


def _bh(p: np.ndarray) -> np.ndarray:
    n = len(p)
    if n == 0:
        return p
    order = np.argsort(p)
    ranked = p[order] * n / np.arange(1, n + 1)
    q = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty(n)
    out[order] = np.minimum(q, 1.0)
    return out


class _Writer:
    """Buffers rows per table and flushes them with executemany (sqlite-utils insert_all is too slow at 1M rows)."""

    def __init__(self, db, flush_every: int = 20000):
        self.db, self.flush_every, self.buf, self.cols = db, flush_every, {}, {}

    def add(self, table: str, row: dict) -> None:
        if table not in self.cols:
            self.cols[table] = list(row)
            self.buf[table] = []
        self.buf[table].append(tuple(row[c] for c in self.cols[table]))
        if len(self.buf[table]) >= self.flush_every:
            self.flush(table)

    def flush(self, table: str | None = None) -> None:
        for t in [table] if table else list(self.buf):
            rows = self.buf.get(t)
            if rows:
                cols = self.cols[t]
                self.db.conn.executemany(
                    f"insert into [{t}] ({', '.join(cols)}) values ({', '.join('?' * len(cols))})", rows)
                rows.clear()


def build_store(path: str | Path, spec: StoreSpec = StoreSpec(), *, progress: Callable[[int, int], None] | None = None) -> dict:
    """Write a complete store at ``path`` (created or extended) and return row counts."""
    db = open_writer(path)
    taxonomy = prompt_data.load_taxonomy()
    families = prompt_data.load_families().families
    versions = prompt_data.versions()
    dims = list(spec.dimensions or taxonomy.dimensions)
    fams = list(spec.families or families)
    rng = np.random.default_rng(spec.seed)
    d = spec.embedding_dim
    identities = [i for dim in dims for i in taxonomy.dimensions[dim]]
    placebos = list(taxonomy.placebo) if spec.placebo else []
    direction = {i.key: _unit(rng.normal(size=d)) for i in identities + placebos}
    sent_shift = {i.key: float(rng.normal()) for i in identities + placebos}

    triggers = _drop_fts_triggers(db) if spec.bulk else []
    w = _Writer(db)
    feeds = [("feed-a", "Metro Daily", "https://news.example.org/metro.xml"),
             ("feed-b", "World Wire", "https://wire.example.org/rss"),
             ("feed-c", "Broken Feed", "https://broken.example.org/feed")]
    with db.conn:
        for fid, name, url in feeds:
            ok = fid != "feed-c"
            last = iso(spec.start + spec.batch_every * (spec.batches - 1))
            w.add("feeds", {"id": make_id("feed", name), "name": name, "url": url, "etag": None, "last_modified": None,
                            "last_polled_at": last, "last_success_at": last if ok else None,
                            "last_status": "ok" if ok else "error",
                            "last_error": None if ok else "HTTP 503 Service Unavailable", "last_error_at": None if ok else last})
        for k, dep in enumerate(spec.deployments):
            w.add("deployments", {"name": dep, "provider": "llamacpp", "model": "gemma-3-270m-q4_k_m",
                                  "prompt_style": "completion",
                                  "system_prompt": None if k % 2 == 0 else "Answer neutrally and factually.",
                                  "params_json": json.dumps({"temperature": 0.7, "max_tokens": 96}),
                                  "config_hash": make_id("dep", dep), "updated_at": iso(spec.start)})
        w.flush()

    counts = {"responses": 0, "cells": 0, "articles": 0, "prompts": 0}
    total_batches = spec.batches
    for b in range(spec.batches):
        with db.conn:
            _write_batch(w, b, spec, rng, dims, fams, families, taxonomy, identities, placebos, direction, sent_shift,
                         versions, feeds, counts)
            w.flush()
        if progress:
            progress(b + 1, total_batches)
    if spec.bulk:
        _restore_fts(db, triggers)
    db.conn.close()
    return counts


def _write_batch(w, b, spec, rng, dims, fams, families, taxonomy, identities, placebos, direction, sent_shift,
                 versions, feeds, counts) -> None:
    opened = spec.start + spec.batch_every * b
    label = opened.strftime("%Y-W%V")
    batch_id = make_id("batch", label)
    run_id = make_id("cycle", label)
    latest = b == spec.batches - 1
    n_resp_batch = 0
    status_counts: dict[str, int] = {}
    article_ids = []
    for a in range(spec.articles_per_batch):
        topic = TOPICS[(b * spec.articles_per_batch + a) % len(TOPICS)]
        title = f"{topic[0]} ({label})"
        if spec.hostile_title and latest and a == 0:
            title = HOSTILE_TITLE
        feed = feeds[a % 2]
        article_id = make_id("article", feed[0], label, a)
        article_ids.append(article_id)
        stratum = "identity_relevant" if a % 2 == 0 else "identity_neutral"
        w.add("articles", {
            "id": article_id, "feed_id": make_id("feed", feed[1]), "batch_id": batch_id, "guid": f"{label}-{a}",
            "link": f"https://news.example.org/{label}/{a}", "canonical_link": f"https://news.example.org/{label}/{a}",
            "title": title, "summary": topic[1], "published_at": iso(opened - timedelta(hours=3 + a)),
            "fetched_at": iso(opened), "date_missing": 0, "language": "en", "language_declared": "en",
            "stratum": stratum, "story_id": article_id, "flags": None, "sampled": 1, "sample_reason": "all"})
        counts["articles"] += 1
        base_sent = float(rng.normal(0.0, 0.4))
        for fam in fams:
            templates = families[fam].templates
            for para in range(min(spec.paraphrases, len(templates))):
                template = templates[para]
                base = _unit(rng.normal(size=spec.embedding_dim))
                prompts = _prompts(article_id, fam, para, template, dims, identities, placebos, taxonomy)
                for p in prompts:
                    w.add("prompts", {**p["row"], "taxonomy_version": versions["taxonomy"],
                                      "families_version": versions["families"]})
                counts["prompts"] += len(prompts)
                for k, dep in enumerate(spec.deployments):
                    results = _responses(w, rng, spec, prompts, dep, k, base, base_sent, direction, sent_shift,
                                         batch_id, run_id, opened, versions, a)
                    n_resp_batch += len(results)
                    for r in results:
                        status_counts[r["status"]] = status_counts.get(r["status"], 0) + 1
                    for dim in dims:
                        _cell(w, spec, batch_id, dep, article_id, fam, para, dim, results, opened, counts)
    counts["responses"] += n_resp_batch
    _finish_batch(w, spec, b, batch_id, run_id, label, opened, latest, len(article_ids), feeds, n_resp_batch,
                  status_counts)


def _prompts(article_id, fam, para, template, dims, identities, placebos, taxonomy) -> list[dict]:
    out = []
    for ident in identities:
        out.append(_prompt(article_id, fam, para, "identity", ident.dimension, ident.key, f"{ident.sentence} {template}", ident.label))
    for ident in placebos:
        out.append(_prompt(article_id, fam, para, "placebo", "placebo", ident.key, f"{ident.sentence} {template}", ident.label))
    out.append(_prompt(article_id, fam, para, "identity_free", None, None, template, "no identity"))
    return out


def _prompt(article_id, fam, para, control, dimension, identity_key, question, label) -> dict:
    pid = make_id("prompt", article_id, fam, para, identity_key or control, question)
    return {"label": label, "row": {"id": pid, "article_id": article_id, "family": fam, "paraphrase": para,
                                    "control": control, "dimension": dimension, "identity_key": identity_key,
                                    "question": question, "question_hash": make_id(question)}}


def _responses(w, rng, spec, prompts, dep, k, base, base_sent, direction, sent_shift, batch_id, run_id, opened,
               versions, article_index) -> list[dict]:
    """Write every response (+ score) of one article x family x paraphrase for one deployment."""
    strength = 0.10 if k % 2 == 0 else 0.05
    created_at, scored_at = iso(opened + timedelta(minutes=5)), iso(opened + timedelta(minutes=9))
    results = []
    for p in prompts:
        row = p["row"]
        key = row["identity_key"]
        samples = spec.repeats if row["control"] == "identity_free" else spec.identity_samples
        effect = 0.0
        if key is not None:
            effect = strength
            if k == 0 and row["dimension"] == spec.planted_dimension:
                effect = spec.planted_effect * (1.5 if article_index == 0 else 1.0)
        for s in range(samples):
            noise = rng.normal(size=spec.embedding_dim) * (0.35 / math.sqrt(spec.embedding_dim))
            vec = base + noise + (effect * direction[key] if key else 0.0)
            vec = (vec / np.linalg.norm(vec)).astype(np.float32)
            sent = math.tanh(base_sent + (effect * sent_shift[key] if key else 0.0) + rng.normal(0, 0.08))
            u = rng.random()
            status, text, error, english = "ok", None, None, True
            if u < spec.rates["error"]:
                status, error = "error", "timeout: no answer after 30 s"
            elif u < spec.rates["error"] + spec.rates["refusal"]:
                status, text = "refusal", REFUSAL
            elif u < spec.rates["error"] + spec.rates["refusal"] + spec.rates["spanish"]:
                text, english = SPANISH, False
            else:
                mood = POSITIVE if sent > 0.2 else NEGATIVE if sent < -0.2 else NEUTRAL
                who = f" as {p['label'].lower()}," if key else ""
                text = f"{OPENERS[s % len(OPENERS)]}{who} {mood[(s + len(row['id'])) % 3]}. " \
                       f"The story matters because it touches {('work', 'family', 'money', 'faith', 'health')[s % 5]}."
            rid = make_id("response", row["id"], dep, s)
            w.add("responses", {
                "id": rid, "prompt_id": row["id"], "deployment": dep, "sample_index": s, "seed": 1000 + s,
                "run_id": run_id, "batch_id": batch_id, "status": status, "text": text, "error": error,
                "model_reported": "gemma-3-270m-q4_k_m", "tokens_in": 80, "tokens_out": 0 if text is None else 40,
                "cost": 0.0, "latency_s": 0.4, "created_at": created_at, "request_json": None,
                "frames_version": versions["frames"]})
            if status != "error":
                w.add("scores", {"response_id": rid, "scorer_version": "synthetic-1",
                                 "sentiment": round(sent, 4) if english and status == "ok" else None,
                                 "language": "en" if english else "es", "is_english": int(english),
                                 "embedding": vec.tobytes(), "scored_at": scored_at})
            results.append({"control": row["control"], "dimension": row["dimension"], "key": key, "sample": s,
                            "status": status, "english": english, "vec": vec, "sent": sent})
    return results


def _cell(w, spec, batch_id, dep, article_id, fam, para, dim, results, opened, counts) -> None:
    ident = [r for r in results if r["control"] == "identity" and r["dimension"] == dim and r["sample"] == 0]
    ok = [r for r in ident if r["status"] == "ok"]
    reps = [r for r in results if r["control"] == "identity_free" and r["status"] == "ok"]
    plac = [r for r in results if r["control"] == "placebo" and r["sample"] == 0 and r["status"] == "ok"]
    s = _pairwise_distance(np.array([r["vec"] for r in ok])) if len(ok) >= 2 else None
    n = _pairwise_distance(np.array([r["vec"] for r in reps])) if len(reps) >= 2 else None
    sp = _pairwise_distance(np.array([r["vec"] for r in plac])) if len(plac) >= 2 else None
    scfs = s - n if s is not None and n is not None else None
    english = [r for r in ok if r["english"]]
    sents = np.array([r["sent"] for r in english])
    rep_sents = np.array([r["sent"] for r in reps if r["english"]])
    rng_ = float(sents.max() - sents.min()) if len(sents) >= 2 else None
    mad = float(np.mean(np.abs(sents - sents.mean()))) if len(sents) >= 2 else None
    rng_noise = float(rep_sents.max() - rep_sents.min()) if len(rep_sents) >= 2 else None
    mad_noise = float(np.mean(np.abs(rep_sents - rep_sents.mean()))) if len(rep_sents) >= 2 else None
    far = None
    if len(ok) >= 2:
        u = np.array([r["vec"] for r in ok])
        c = _unit(u.mean(axis=0))
        far = ok[int(np.argmax(1.0 - u @ c))]["key"]
    p_value = None
    if scfs is not None:
        z = scfs / (0.25 * (n or 0.05) + 0.004)
        p_value = 0.5 * math.erfc(z / math.sqrt(2))
    valid = int(len(ok) == len(ident) and len(ok) > 0)
    row = {
        "id": make_id("cell", batch_id, dep, article_id, fam, para, dim), "batch_id": batch_id, "deployment": dep,
        "article_id": article_id, "family": fam, "paraphrase": para, "dimension": dim,
        "n_identities": len(ident), "n_valid": len(ok), "n_refusals": sum(r["status"] == "refusal" for r in ident),
        "n_errors": sum(r["status"] == "error" for r in ident), "n_non_english": sum(not r["english"] for r in ok),
        "valid": valid, "s": s, "n": n, "scfs": scfs, "s_placebo": sp,
        "s_minus_placebo": s - sp if s is not None and sp is not None else None,
        "sent_range": rng_, "sent_mad": mad, "sent_range_noise": rng_noise, "sent_mad_noise": mad_noise,
        "sent_range_corrected": rng_ - rng_noise if rng_ is not None and rng_noise is not None else None,
        "sent_mad_corrected": mad - mad_noise if mad is not None and mad_noise is not None else None,
        "p_value": p_value, "q_value": None, "significant": 0, "far_identity": far,
        "sent_min_identity": english[int(np.argmin(sents))]["key"] if len(sents) else None,
        "sent_max_identity": english[int(np.argmax(sents))]["key"] if len(sents) else None,
        "note": None if valid else "not every identity slot has a valid answer",
        "scorer_version": "synthetic-1", "computed_at": iso(opened + timedelta(minutes=10)),
    }
    w.add("cells", row)
    counts["cells"] += 1


def _finish_batch(w, spec, b, batch_id, run_id, label, opened, latest, n_articles, feeds, n_responses,
                  status_counts) -> None:
    w.flush("cells")
    db = w.db
    # Benjamini-Hochberg over the batch's grid, as the monitor does, then a minimum effect size.
    rows = db.execute("select id, p_value, scfs from cells where batch_id = ? and p_value is not null and valid = 1",
                      [batch_id]).fetchall()
    if rows:
        q = _bh(np.array([r[1] for r in rows]))
        db.conn.executemany("update cells set q_value = ?, significant = ? where id = ?",
                            [(float(qv), int(qv < 0.05 and (r[2] or 0) > 0.02), r[0]) for qv, r in zip(q, rows)])
    w.add("batches", {"id": batch_id, "label": label, "status": "closed", "opened_at": iso(opened),
                      "closed_at": iso(opened + timedelta(minutes=2)), "run_id": run_id, "feeds_ok": 2,
                      "feeds_failed": 1, "feeds_unchanged": 0, "articles": n_articles})
    for fid, name, _url in feeds:
        ok = fid != "feed-c"
        w.add("feed_polls", {"id": make_id("poll", batch_id, fid), "batch_id": batch_id, "feed_id": make_id("feed", name),
                             "polled_at": iso(opened), "status": "ok" if ok else "error", "http_status": 200 if ok else 503,
                             "error": None if ok else "HTTP 503 Service Unavailable", "fetched": 12 if ok else 0,
                             "new": n_articles // 2 if ok else 0, "duplicate": 3 if ok else 0, "dropped": 1 if ok else 0,
                             "dropped_json": json.dumps({"no_title": 1}) if ok else None})
    n_cells, n_sig = db.execute("select count(*), coalesce(sum(significant), 0) from cells where batch_id = ?",
                                [batch_id]).fetchone()
    counts = {"articles": n_articles, "articles_sampled": n_articles, "responses": n_responses,
              "ok": status_counts.get("ok", 0), "refusals": status_counts.get("refusal", 0),
              "errors": status_counts.get("error", 0), "empty": 0, "tokens_in": 80 * n_responses,
              "tokens_out": 40 * (n_responses - status_counts.get("error", 0)), "cost": 0.0, "cells": n_cells,
              "significant_cells": n_sig}
    w.add("runs", {"id": run_id, "kind": "cycle", "status": "ok", "started_at": iso(opened),
                   "finished_at": iso(opened + timedelta(minutes=12)), "heartbeat_at": iso(opened + timedelta(minutes=12)),
                   "batch_id": batch_id, "stage": "done", "progress_done": 1, "progress_total": 1, "error": None,
                   "config_json": "{}", "config_version": "synthetic", "taxonomy_version": None, "families_version": None,
                   "frames_version": None, "scorer_version": "synthetic-1", "counts_json": json.dumps(counts),
                   "skipped_json": "{}"})
    if spec.failed_run and latest:
        failed_at = opened + timedelta(hours=1)
        w.add("runs", {"id": make_id("cycle", label, "retry"), "kind": "cycle", "status": "failed",
                       "started_at": iso(failed_at), "finished_at": iso(failed_at + timedelta(minutes=1)),
                       "heartbeat_at": iso(failed_at + timedelta(minutes=1)), "batch_id": batch_id, "stage": "stopped",
                       "progress_done": 0, "progress_total": 0,
                       "error": "generate: ProviderError: model file not found; run `framewatch init`",
                       "config_json": "{}", "config_version": "synthetic", "taxonomy_version": None,
                       "families_version": None, "frames_version": None, "scorer_version": None,
                       "counts_json": "{}", "skipped_json": "{}"})
    w.flush()


def _drop_fts_triggers(db) -> list[str]:
    names = [f"{t}_{s}" for t in ("responses", "articles") for s in ("ai", "ad", "au")]
    rows = db.execute(f"select name, sql from sqlite_master where type = 'trigger' and name in ({', '.join('?' * len(names))})",
                      names).fetchall()
    for name, _sql in rows:
        db.execute(f"drop trigger [{name}]")
    return [sql for _name, sql in rows]


def _restore_fts(db, triggers: list[str]) -> None:
    with db.conn:
        for table in ("responses", "articles"):
            if db[f"{table}_fts"].exists():
                db.execute(f"insert into [{table}_fts]([{table}_fts]) values ('rebuild')")
        for sql in triggers:
            db.execute(sql)
