"""Instantiation: test items (context, stereotype sentence, counter-stereotype sentence)
for each kept stereotype, drafted by an LLM here or written by an annotator on the
annotator page (store.stereo.record_annotator_item).

Every draft is stored with status 'draft' (or 'invalid' with the raw answer when it could
not be parsed) and is used by the probe only after an annotator of the same country
approves it (store.stereo.record_item_approval).
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from sqlite_utils import Database

from monitor.config import Config, DeploymentConfig
from monitor.ids import iso, make_id, utcnow
from monitor.providers import get_provider
from monitor.resilience import RateGate, RetryPolicy, call_with_retries
from monitor.stereo import report
from monitor.stereo import validate as v
from monitor.stereo.settings import settings
from monitor.stereo.text import clean
from monitor.types import GenerationRequest
from store import stereo as store

_LINE = re.compile(r"^\s*[*_\-•]*\s*(contexto|estereotipo|contraestereotipo|contra-estereotipo)\s*[*_]*\s*:\s*[*_]*\s*(.+)$",
                   re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class DraftReport:
    deployment: str
    candidates: int
    drafted: int
    invalid: int
    errors: int

    def summary(self) -> str:
        return (f"{self.deployment}: {self.candidates} kept stereotypes without items; {self.drafted} drafts stored "
                f"(waiting for in-country approval), {self.invalid} unparseable, {self.errors} errors")


def draft_request(cfg: Config, dep: DeploymentConfig, candidate: dict) -> GenerationRequest:
    from prompts.stereo import load_catalog, load_draft_frames

    frames, catalog = load_draft_frames(), load_catalog()
    country = catalog.countries.get(candidate["country"])
    chat = frames.chat.format(country=country.name if country else candidate["country"],
                              stereotype=candidate["text"], target_group=candidate["target_group"] or "—")
    seed = int(make_id("draft-seed", dep.seed, candidate["id"], length=8), 16) % (2**31 - 1)
    common = dict(max_tokens=settings(cfg).draft_max_tokens, temperature=dep.temperature,
                  top_p=dep.top_p, seed=seed)
    if dep.prompt_style == "completion":
        return GenerationRequest(style="completion", prompt=frames.completion.format(chat=chat), messages=(),
                                 stop=("\n\n",), **common)
    messages = ([("system", dep.system_prompt)] if dep.system_prompt else []) + [("user", chat)]
    return GenerationRequest(style="chat", prompt=None, messages=tuple(messages), **common)


def parse_draft(text: str, *, completion: bool = False) -> tuple[str, str, str] | None:
    """(context, stereotype sentence, counter sentence) from a three-line answer; None when incomplete."""
    if completion:  # the completion frame already wrote "Contexto:"
        text = "Contexto:" + (text or "")
    found: dict[str, str] = {}
    for line in (text or "").splitlines():
        m = _LINE.match(line)
        if m:
            key = m.group(1).lower().replace("-", "")
            found.setdefault(key, clean(m.group(2)))
    parts = (found.get("contexto"), found.get("estereotipo"), found.get("contraestereotipo"))
    if not all(parts) or parts[1] == parts[2]:
        return None
    return parts  # type: ignore[return-value]


def kept_without_items(db: Database, cfg: Config, countries: Sequence[str] = ()) -> list[dict]:
    target = settings(cfg).ratings_per_item
    pool = store.kept_candidates_without_items(db)
    if countries:
        pool = pool[pool["country"].isin(list(countries))]
    decisions = report.candidate_decisions(pool, store.ratings(db), target)
    kept = set(decisions.loc[decisions["status"] == v.KEPT, "id"])
    return [r for r in pool.to_dict("records") if r["id"] in kept]


def draft_items(db: Database, cfg: Config, deployment: str, *, countries: Sequence[str] = (),
                limit: int | None = None, provider=None) -> DraftReport:
    dep = cfg.deployment(deployment)
    provider = provider or get_provider(dep)
    todo = kept_without_items(db, cfg, countries)[: limit or None]
    drafted = invalid = errors = 0
    for cand in todo:
        request = draft_request(cfg, dep, cand)
        outcome = call_with_retries(lambda request=request: provider.complete(request), RetryPolicy.for_deployment(dep),
                                    RateGate(), threading.Event(), random.Random(cand["id"]))
        now = iso(utcnow())
        base = {"candidate_id": cand["id"], "country": cand["country"], "category": cand["category"],
                "target_group": cand["target_group"], "stereotype": cand["text"], "source": "llm",
                "dataset": cand["dataset"], "author": dep.name, "created_at": now}
        if outcome.error is not None or outcome.value is None:
            errors += 1  # stored as data; the candidate still has no usable item, so the next run asks again
            store.save_items(db, [{**base, "id": make_id("item-error", cand["id"], dep.name, now),
                                   "status": store.ITEM_INVALID, "error": str(outcome.error or "abandoned")}])
            continue
        raw = outcome.value.text
        parts = parse_draft(raw, completion=request.style == "completion")
        if parts is None:
            invalid += 1
            store.save_items(db, [{**base, "id": make_id("item-invalid", cand["id"], dep.name, raw),
                                   "status": store.ITEM_INVALID, "raw_output": raw,
                                   "error": "answer lacks Contexto/Estereotipo/Contraestereotipo lines"}])
            continue
        ctx, s1, s2 = parts
        drafted += store.save_items(db, [{**base, "id": make_id("item", cand["id"], ctx, s1, s2), "context": ctx,
                                          "stereotype_sentence": s1, "counter_sentence": s2,
                                          "status": store.ITEM_DRAFT, "raw_output": raw}])
    return DraftReport(dep.name, len(todo), drafted, invalid, errors)
