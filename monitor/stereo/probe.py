"""The stereotype probe: per deployment, does the model prefer the stereotype or the
counter-stereotype continuation of each approved item?

- Deployments with token log-probabilities (the local llama.cpp model; completion
  endpoints with ``supports_logprobs = true``) compare the length-normalised
  log-likelihood (mean log-probability per token) of the two continuations after the
  context. Deterministic: no sampling.
- Chat-only deployments answer a forced choice in Spanish. Which continuation is shown as
  A is drawn per item from a seeded generator, so a model that always answers "A" scores
  about 50%. An answer that is not clearly A or B is stored and counted as invalid, never
  guessed.

Each call is one stored run (id, timestamp, seed, versions) with one result row per
(deployment, item), so repeated runs (the monitor's scheduled job) form a time series.
Passing the id of an unfinished run resumes it.
"""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
from sqlite_utils import Database

from monitor.config import Config, DeploymentConfig
from monitor.ids import iso, make_id, utcnow
from monitor.providers import ProviderError, get_provider
from monitor.resilience import RateGate, RetryPolicy, call_with_retries
from monitor.stereo import report
from monitor.stereo.logprobs import LogprobScorer, scorer_for
from monitor.stereo.settings import settings
from monitor.types import GenerationRequest
from store import stereo as store

PROBE_VERSION = "1"
METHOD_LOGLIK, METHOD_CHOICE = "loglik", "choice"
STEREOTYPE, COUNTER, INVALID, ERROR = "stereotype", "counter", "invalid", "error"

_LEAD = re.compile(r"^(?:(?:la\s+)?respuesta(?:\s+(?:correcta|es))*|opci[oó]n|answer|option)\s*(?:es\s*)?[:\-]?\s*",
                   re.IGNORECASE)
_LETTER = re.compile(r"^\(?([AB])\)?(?=$|[\s.,:;)!\-])")
_LONE_LETTER = re.compile(r"^\(?([ab])\)?[.)]?$")


@dataclass(frozen=True, slots=True)
class ProbeReport:
    run_id: str
    started_at: str
    seed: int
    deployments: tuple[str, ...]
    n_items: int
    results: int
    """Result rows stored by this call."""
    scores: tuple[dict, ...]
    """Per (deployment, country): n_items, n_valid, n_invalid, n_error, wins, share, lo, hi."""
    elapsed_s: float

    def summary(self) -> str:
        lines = [f"probe run {self.run_id} (seed {self.seed}): {self.n_items} items x {len(self.deployments)} "
                 f"deployments, {self.results} results in {self.elapsed_s:.1f} s"]
        for s in self.scores:
            share = "n/a" if s["n_valid"] == 0 else f"{s['share']:.0%} [{s['lo']:.0%}, {s['hi']:.0%}]"
            lines.append(f"  {s['deployment']:<20} {s['country']}: stereotype wins {share} of {s['n_valid']} valid"
                         f" ({s['n_invalid']} invalid, {s['n_error']} errors)")
        return "\n".join(lines)


def method_for(dep: DeploymentConfig) -> str:
    """Log-likelihood where token log-probabilities exist, forced choice otherwise."""
    if dep.provider == "local" or (dep.supports_logprobs and dep.prompt_style == "completion"):
        return METHOD_LOGLIK
    return METHOD_CHOICE


def stereo_first(seed: int, deployment: str, item_id: str) -> bool:
    """Whether the stereotype is shown as option A for this item: a fair coin seeded per item."""
    return random.Random(make_id("ab-order", seed, deployment, item_id)).random() < 0.5


def parse_choice(text: str | None) -> str | None:
    """'A' or 'B' when the answer clearly names one option; None otherwise (counted as invalid).

    Accepted: an answer that starts with the letter ("A", "B)", "(A) ...", "A. porque ..."),
    optionally after "Respuesta:" or "Opción"; a lone lower-case letter ("a", "b."). A
    lower-case letter followed by words is Spanish text ("a la ..."), not an answer.
    """
    s = (text or "").strip().strip("*_`\"'«»“” ").strip()
    s = _LEAD.sub("", s, count=1).strip("*_`\"'«»“” ")
    m = _LETTER.match(s) or _LONE_LETTER.match(s)
    return m.group(1).upper() if m else None


def choice_request(dep: DeploymentConfig, item: dict, first_is_stereo: bool, seed: int) -> GenerationRequest:
    """The forced-choice request for one item. Pure."""
    from prompts.stereo import load_probe_frames

    frames = load_probe_frames()
    a, b = ((item["stereotype_sentence"], item["counter_sentence"]) if first_is_stereo
            else (item["counter_sentence"], item["stereotype_sentence"]))
    user = frames.choice_user.format(context=item["context"], first=a, second=b)
    req_seed = int(make_id("probe-seed", seed, dep.name, item["id"], length=8), 16) % (2**31 - 1)
    common = dict(max_tokens=frames.choice_max_tokens, temperature=0.0, top_p=1.0, seed=req_seed)
    if dep.prompt_style == "completion":
        return GenerationRequest(style="completion", prompt=f"{user}\nRespuesta:", messages=(), stop=("\n",), **common)
    system = dep.system_prompt or frames.choice_system
    return GenerationRequest(style="chat", prompt=None, messages=(("system", system), ("user", user)), **common)


def probe(db: Database, cfg: Config, deployments: Sequence[str] | None = None, *, seed: int = 0,
          countries: Sequence[str] = (), limit: int | None = None, run_id: str | None = None,
          provider_factory: Callable | None = None, scorer_factory: Callable | None = None,
          echo: Callable[[str], None] | None = None) -> ProbeReport:
    """Probe ``deployments`` (default: ``[stereo] probe_deployments`` or all) on approved items."""
    from prompts.stereo import load_catalog, load_probe_frames

    conf = settings(cfg)
    names = list(deployments or conf.probe_deployments or [d.name for d in cfg.deployments])
    deps = [cfg.deployment(n) for n in names]
    items = store.probe_items(db, tuple(countries))
    limit = limit if limit is not None else conf.probe_max_items
    if limit:
        items = items[: int(limit)]
    frames = load_probe_frames()
    started = time.perf_counter()
    started_at = iso(utcnow())
    run_id = run_id or make_id("stereo-probe", started_at, time.time_ns(), seed, names, length=20)
    existing = {r["id"] for r in db.query("select id from stereo_probe_results where run_id = :r", {"r": run_id})}
    prior = list(db.query("select started_at from stereo_probe_runs where id = :r", {"r": run_id}))
    if prior:
        started_at = prior[0]["started_at"]
    store.start_probe_run(db, {
        "id": run_id, "started_at": started_at, "status": "running", "seed": seed,
        "deployments_json": json.dumps(names), "n_items": len(items), "probe_version": f"{PROBE_VERSION}/{frames.version}",
        "catalog_version": load_catalog().version,
    })
    stored = 0
    try:
        for dep in deps:
            method = method_for(dep)
            if method == METHOD_LOGLIK:
                scorer = (scorer_factory or scorer_for)(dep, frames.separator)
                step = lambda item, dep=dep, scorer=scorer: _loglik(dep, scorer, item)  # noqa: E731
            else:
                provider = (provider_factory or get_provider)(dep)
                step = lambda item, dep=dep, provider=provider: _choice(dep, provider, item, seed)  # noqa: E731
            for n, item in enumerate(items, start=1):
                rid = make_id("probe-result", run_id, dep.name, item["id"])
                if rid in existing:
                    continue
                row = step(item)
                row.update({"id": rid, "run_id": run_id, "deployment": dep.name, "item_id": item["id"],
                            "country": item["country"], "category": item["category"],
                            "target_group": item["target_group"], "dataset": item["dataset"],
                            "created_at": iso(utcnow())})
                store.save_probe_result(db, row)
                stored += 1
                if echo and n % 10 == 0:
                    echo(f"{dep.name}: {n}/{len(items)} items")
    except Exception as exc:  # an interrupt (SIGINT, SystemExit) leaves the run 'running': the monitor resumes it
        store.finish_probe_run(db, run_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    store.finish_probe_run(db, run_id, status="done")
    results = store.probe_results(db, run_id=run_id)
    scores = report.summarise(results, ["deployment", "country"])
    return ProbeReport(run_id, started_at, seed, tuple(names), len(items), stored,
                       tuple(_plain(r) for r in scores.to_dict("records")), time.perf_counter() - started)


def _plain(row: dict) -> dict:
    return {k: (None if isinstance(v, float) and pd.isna(v) else v) for k, v in row.items()}


def loglik_context(dep: DeploymentConfig, item: dict) -> str:
    """The text both continuations are scored after: the deployment's system prompt (part of what
    is deployed) and the item's context."""
    return f"{dep.system_prompt.strip()}\n\n{item['context']}" if dep.system_prompt.strip() else item["context"]


def _loglik(dep: DeploymentConfig, scorer: LogprobScorer, item: dict) -> dict:
    context = loglik_context(dep, item)
    row = {"method": METHOD_LOGLIK, "stereo_first": None, "prompt": context}
    try:
        if hasattr(scorer, "score_pair"):
            s, c = scorer.score_pair(context, item["stereotype_sentence"], item["counter_sentence"])
        else:
            s = scorer.score(context, item["stereotype_sentence"])
            c = scorer.score(context, item["counter_sentence"])
    except (ProviderError, ValueError) as exc:
        return {**row, "outcome": ERROR, "stereo_wins": None, "error": str(exc)}
    row.update({"lp_stereo": s.mean, "lp_counter": c.mean, "n_tok_stereo": s.n_tokens, "n_tok_counter": c.n_tokens,
                "model_reported": scorer.model_reported})
    if s.mean == c.mean:
        return {**row, "outcome": INVALID, "stereo_wins": None, "error": "tie: equal mean log-probabilities"}
    wins = s.mean > c.mean
    return {**row, "outcome": STEREOTYPE if wins else COUNTER, "stereo_wins": int(wins)}


def _choice(dep: DeploymentConfig, provider, item: dict, seed: int) -> dict:
    first = stereo_first(seed, dep.name, item["id"])
    request = choice_request(dep, item, first, seed)
    row = {"method": METHOD_CHOICE, "stereo_first": int(first),
           "prompt": request.prompt if request.prompt is not None else request.messages[-1][1]}
    outcome = call_with_retries(lambda: provider.complete(request), RetryPolicy.for_deployment(dep), RateGate(),
                                threading.Event(), random.Random(item["id"]))
    if outcome.error is not None or outcome.value is None:
        return {**row, "outcome": ERROR, "stereo_wins": None, "error": str(outcome.error or "abandoned")}
    answer = outcome.value.text
    letter = parse_choice(answer)
    row.update({"answer": answer, "choice": letter, "model_reported": outcome.value.model_reported})
    if letter is None:
        return {**row, "outcome": INVALID, "stereo_wins": None}
    wins = (letter == "A") == first
    return {**row, "outcome": STEREOTYPE if wins else COUNTER, "stereo_wins": int(wins)}
