"""Candidate retrieval: ask a deployment, in Spanish, for stereotypes about groups in one
country and category, from six perspectives, repeating each prompt (a new seed per round)
until a round adds no new candidate.

A candidate is new unless its normalised text equals a known one of the same country and
category, or its embedding is at least ``[stereo] similarity_threshold`` (default 0.90)
cosine-similar to one. Every raw output is stored with its prompt, perspective, round and
deployment, refusals and errors included; each parsed line is stored as a mention linking
the output to the candidate it created or matched. Outputs are keyed deterministically,
so a re-run reuses stored answers and asks only for what is missing or failed.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from sqlite_utils import Database

from monitor import refusal
from monitor.config import Config, ConfigError, DeploymentConfig
from monitor.ids import iso, make_id, utcnow
from monitor.providers import get_provider
from monitor.resilience import RateGate, RetryPolicy, call_with_retries
from monitor.stereo import validate as v
from monitor.stereo.embedding import Embedder, MiniLMEmbedder, from_blob, to_blob
from monitor.stereo.settings import settings
from monitor.stereo.text import candidate_text, normalise, parse_candidates
from monitor.types import STATUS_ERROR, STATUS_OK, STATUS_REFUSAL, GenerationRequest
from store import stereo as store

DATASET = "generated"
# Refusals specific to this task, beyond monitor.refusal's general ones.
_TASK_REFUSAL = re.compile(
    r"\b(?:no\s+(?:puedo|voy\s+a|debo)\s+(?:generar|listar|enumerar|crear|escribir|proporcionar|promover|difundir|"
    r"reproducir|perpetuar)|no\s+es\s+(?:apropiado|adecuado)|prefiero\s+no|"
    r"i\s+(?:can'?t|cannot|won'?t)\s+(?:generate|list|create|write|provide|promote))",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class CellReport:
    country: str
    category: str
    perspective: str
    rounds: int
    requested: int
    """Outputs asked for in this call (the rest were reused from the store)."""
    refusals: int
    errors: int
    new_candidates: int


@dataclass(frozen=True, slots=True)
class GenerateReport:
    run_id: str
    deployment: str
    cells: tuple[CellReport, ...]
    elapsed_s: float

    def total(self, name: str) -> int:
        return sum(getattr(c, name) for c in self.cells)

    def summary(self) -> str:
        return (f"{self.deployment}: {len(self.cells)} (country, category, perspective) prompts, "
                f"{self.total('rounds')} rounds, {self.total('requested')} requests, {self.total('new_candidates')} new "
                f"candidates, {self.total('refusals')} refusals, {self.total('errors')} errors in {self.elapsed_s:.1f} s")


def build_request(cfg: Config, dep: DeploymentConfig, country: str, category: str, perspective: str,
                  round_: int) -> GenerationRequest:
    """The exact request for one (country, category, perspective, round). Pure."""
    from prompts.stereo import load_catalog, load_perspectives

    frames, catalog = load_perspectives(), load_catalog()
    fields = {"country": catalog.countries[country].name, "category": catalog.categories[category].label}
    intro = frames.intro.format(**fields)
    question = frames.perspectives[perspective].question.format(**fields)
    seed = int(make_id("stereo-seed", dep.seed, country, category, perspective, round_, length=8), 16) % (2**31 - 1)
    common = dict(max_tokens=settings(cfg).generate_max_tokens,
                  temperature=dep.temperature, top_p=dep.top_p, seed=seed)
    if dep.prompt_style == "completion":
        text = frames.completion.format(intro=intro, question=question, format=frames.format)
        if dep.system_prompt:
            text = f"{dep.system_prompt}\n\n{text}"
        return GenerationRequest(style="completion", prompt=text, messages=(), stop=("\n\n\n",), **common)
    messages = [("system", dep.system_prompt)] if dep.system_prompt else []
    messages.append(("user", frames.chat.format(intro=intro, question=question, format=frames.format)))
    return GenerationRequest(style="chat", prompt=None, messages=tuple(messages), **common)


def catalog_version() -> str:
    from prompts.stereo import load_catalog

    return load_catalog().version


def classify(text: str | None) -> str:
    status = refusal.classify(text)
    if status == STATUS_OK and _TASK_REFUSAL.search((text or "")[: refusal.LEAD_CHARS]):
        return STATUS_REFUSAL
    return status


def generate(db: Database, cfg: Config, deployment: str, *, countries: Sequence[str] | None = None,
             categories: Sequence[str] | None = None, perspectives: Sequence[str] | None = None,
             max_rounds: int | None = None, embedder: Embedder | None = None, provider=None,
             echo: Callable[[str], None] | None = None) -> GenerateReport:
    from prompts.stereo import load_catalog, load_perspectives

    catalog, frames = load_catalog(), load_perspectives()
    dep = cfg.deployment(deployment)
    countries = list(countries or catalog.countries)
    categories = list(categories or [k for k, c in catalog.categories.items() if c.generate])
    perspectives = list(perspectives or frames.perspectives)
    for name, chosen, known in (("country", countries, catalog.countries), ("category", categories, catalog.categories),
                                ("perspective", perspectives, frames.perspectives)):
        unknown = [c for c in chosen if c not in known]
        if unknown:
            raise ConfigError(f"unknown {name} {unknown}; known: {', '.join(known)} (see prompts/stereo/)")
    conf = settings(cfg)
    rounds = int(max_rounds or conf.max_rounds)
    threshold = conf.similarity_threshold
    embedder = embedder or MiniLMEmbedder()
    provider = provider or get_provider(dep)
    started = time.perf_counter()
    run_id = make_id("stereo-generate", dep.name, iso(utcnow()))
    cells = []
    for country in countries:
        for category in categories:
            known = _Known.load(db, country, category, embedder)
            for perspective in perspectives:
                cell = _retrieve(db, cfg, dep, provider, embedder, known, country, category, perspective, rounds,
                                 threshold, run_id, frames.version)
                cells.append(cell)
                if echo:
                    echo(f"{country} {category} {perspective}: {cell.rounds} rounds, {cell.new_candidates} new")
    return GenerateReport(run_id, dep.name, tuple(cells), time.perf_counter() - started)


class _Known:
    """Candidates already stored for one (country, category): normalised texts and embeddings."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.norms: dict[str, str] = {}
        self.ids: list[str] = []
        self.vectors: list[np.ndarray] = []

    @classmethod
    def load(cls, db: Database, country: str, category: str, embedder: Embedder) -> _Known:
        known = cls(embedder)
        rows = list(db.query(
            "select id, text, text_norm, embedding, embedder from stereo_candidates where country = :c and category = :k",
            {"c": country, "k": category}))
        missing = [r for r in rows if not r["embedding"] or r["embedder"] != embedder.name]
        if missing:  # imported candidates get their embedding once, stored for next time
            vectors = embedder([r["text"] for r in missing])
            with db.conn:
                for r, vec in zip(missing, vectors, strict=True):
                    db["stereo_candidates"].update(r["id"], {"embedding": to_blob(vec), "embedder": embedder.name})
                    r["embedding"] = to_blob(vec)
        for r in rows:
            known.add(r["id"], r["text_norm"] or normalise(r["text"]), from_blob(r["embedding"]))
        return known

    def add(self, cid: str, norm: str, vector: np.ndarray) -> None:
        self.norms.setdefault(norm, cid)
        self.ids.append(cid)
        self.vectors.append(np.asarray(vector, dtype=np.float32))

    def nearest(self, vector: np.ndarray) -> tuple[str | None, float]:
        if not self.vectors:
            return None, 0.0
        sims = np.vstack(self.vectors) @ np.asarray(vector, dtype=np.float32)
        i = int(np.argmax(sims))
        return self.ids[i], float(sims[i])


def _retrieve(db, cfg, dep, provider, embedder, known: _Known, country, category, perspective, max_rounds, threshold,
              run_id, perspectives_version) -> CellReport:
    requested = refusals = errors = new_total = rounds_done = 0
    for round_ in range(1, max_rounds + 1):
        request = build_request(cfg, dep, country, category, perspective, round_)
        oid = make_id("stereo-output", dep.name, dep.provider, dep.model, asdict(request), round_, length=24)
        stored = store.output(db, oid)
        if stored is None or stored["status"] == STATUS_ERROR:
            stored = _ask(db, dep, provider, request, oid, run_id, country, category, perspective, round_,
                          perspectives_version)
            requested += 1
            new = _absorb(db, embedder, known, stored, country, category, perspective, round_, dep, threshold)
        else:
            new = stored["n_new"] or 0
        rounds_done = round_
        refusals += stored["status"] == STATUS_REFUSAL
        errors += stored["status"] == STATUS_ERROR
        new_total += new
        if stored["status"] == STATUS_ERROR or new == 0:
            break
    return CellReport(country, category, perspective, rounds_done, requested, refusals, errors, new_total)


def _ask(db, dep, provider, request, oid, run_id, country, category, perspective, round_, version) -> dict:
    outcome = call_with_retries(lambda: provider.complete(request), RetryPolicy.for_deployment(dep), RateGate(),
                                threading.Event(), random.Random(oid))
    text, model, err = None, None, None
    if outcome.error is not None or outcome.value is None:
        status, err = STATUS_ERROR, str(outcome.error or "abandoned")
    else:
        text, model = outcome.value.text, outcome.value.model_reported
        status = classify(text)
    row = {
        "id": oid, "run_id": run_id, "deployment": dep.name, "country": country, "category": category,
        "perspective": perspective, "round": round_, "seed": request.seed,
        "prompt": request.prompt if request.prompt is not None else request.messages[-1][1],
        "request_json": json.dumps(asdict(request), ensure_ascii=False), "perspectives_version": version,
        "status": status, "raw_text": text, "error": err, "model_reported": model, "n_parsed": 0, "n_new": 0,
        "parsed_json": "[]", "created_at": iso(utcnow()),
    }
    store.save_output(db, row)
    return row


def _absorb(db, embedder, known: _Known, output: dict, country, category, perspective, round_, dep, threshold) -> int:
    """Deduplicate the output's candidates against ``known``; store new ones and every mention. Returns the new count."""
    if output["status"] != STATUS_OK:
        return 0
    parsed = parse_candidates(output["raw_text"] or "")
    texts = [candidate_text(g, t) for g, t in parsed]
    vectors = embedder(texts) if texts else np.zeros((0, 1), dtype=np.float32)
    new_rows, mentions = [], []
    for i, ((group, _), text, vec) in enumerate(zip(parsed, texts, vectors, strict=True)):
        norm = normalise(text)
        match, sim, cid = "exact", 1.0, known.norms.get(norm)
        if cid is None:
            near, sim = known.nearest(vec)
            if near is not None and sim >= threshold:
                match, cid = "similar", near
        if cid is None:
            match, cid = "new", make_id("candidate", DATASET, country, category, norm)
            known.add(cid, norm, vec)
            new_rows.append({
                "id": cid, "country": country, "category": category, "target_group": group, "text": text,
                "text_norm": norm, "source": "generated", "dataset": DATASET, "keep_rule": v.RULE_MEDIAN,
                "deployment": dep.name, "perspective": perspective, "round": round_, "output_id": output["id"],
                "embedding": to_blob(vec), "embedder": embedder.name, "catalog_version": catalog_version(),
                "created_at": iso(utcnow()),
            })
        mentions.append({"id": make_id("mention", output["id"], i), "output_id": output["id"], "candidate_id": cid,
                         "text": text, "match": match, "similarity": round(sim, 4)})
    stored_new = store.save_candidates(db, new_rows)
    store.save_mentions(db, mentions)
    with db.conn:
        db["stereo_outputs"].update(output["id"], {"n_parsed": len(parsed), "n_new": stored_new,
                                                   "parsed_json": json.dumps(texts, ensure_ascii=False)})
    output["n_new"] = stored_new
    return stored_new

