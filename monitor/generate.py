"""The generate stage: every sampled article of a batch -> prompts -> one stored response per key.

A response is keyed by hash(deployment, full request, sample index) (monitor.render.cache_key).
A key already stored is never requested again, so an interrupted cycle resumes where it
stopped and a re-run costs nothing. Each result (answer or failure) is written in its own
short transaction by the one thread that owns the database connection; worker threads only
talk to providers. Per deployment, up to ``concurrency`` requests are in flight, each with
retries (monitor.resilience), and a circuit breaker stops a deployment that keeps failing.
The per-cycle budget (monitor.ledger.Budget) and the ``stop`` event stop the issuing of new
requests; requests in flight always finish and are stored.
"""

from __future__ import annotations

import json
import logging
import queue
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import prompts as prompt_data
from monitor import ledger, refusal
from monitor.config import Config, DeploymentConfig
from monitor.expand import expand_article
from monitor.generate_report import DeploymentReport, GenerateReport
from monitor.ids import content_hash, iso, utcnow
from monitor.ledger import Estimate
from monitor.providers import ProviderError, get_provider
from monitor.redact import redact, secrets_in_env
from monitor.render import cache_key, render
from monitor.resilience import Attempted, CircuitBreaker, RateGate, RetryPolicy, call_with_retries
from monitor.types import STATUS_EMPTY, STATUS_ERROR, STATUS_OK, STATUS_REFUSAL, Completion, GenerationRequest, Prompt

log = logging.getLogger("framewatch.generate")
REFUSAL_FINISH_REASONS = ("refusal", "content_filter")
_POLL_S = 0.2  # how often the issuing loop looks at `stop` while requests are in flight


@dataclass(slots=True)
class _Work:
    key: str
    prompt: Prompt
    sample_index: int
    request: GenerationRequest


@dataclass(slots=True)
class _Lane:
    """One deployment's queue, in-flight count, breaker and running totals."""

    dep: DeploymentConfig
    provider: object
    executor: ThreadPoolExecutor
    policy: RetryPolicy
    breaker: CircuitBreaker
    gate: RateGate = field(default_factory=RateGate)
    queue: deque = field(default_factory=deque)
    planned: int = 0
    cached: int = 0
    in_flight: int = 0
    counts: dict = field(default_factory=lambda: dict.fromkeys(
        ("requested", "ok", "refusals", "empty", "errors", "attempts", "tokens_in", "tokens_out"), 0))
    cost: float = 0.0
    budget_stopped: bool = False


def generate_batch(db, cfg: Config, batch_id: str, run_id: str, *, deployments: Sequence[str] | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   stop: threading.Event | None = None) -> GenerateReport:
    """Request every missing (deployment, prompt, sample) of the batch's sampled articles and store each result."""
    started = time.perf_counter()
    stop = stop or threading.Event()
    deps = [cfg.deployment(n) for n in deployments] if deployments is not None else list(cfg.deployments)
    versions = prompt_data.versions()
    secrets = secrets_in_env(cfg)
    plan = _plan(db, cfg, batch_id, deps, versions)
    lanes = [_lane(dep) for dep in deps]
    stored = _stored(db, [w.key for work in plan.values() for w in work])
    for lane in lanes:
        work = plan[lane.dep.name]
        lane.planned = len(work)
        lane.queue.extend(w for w in work if w.key not in stored)
        lane.cached = lane.planned - len(lane.queue)
    total = sum(lane.planned for lane in lanes)
    done = sum(lane.cached for lane in lanes)
    if progress:
        progress(done, total)
    spent, sent = ledger.cycle_spent(db, run_id)
    budget = ledger.Budget(cfg.budget.max_cost_per_cycle, cfg.budget.max_prompts_per_cycle, spent=spent, sent=sent)
    halt = threading.Event()  # workers watch this; set when `stop` is seen or the loop fails
    in_flight: dict[Future, tuple[_Lane, _Work, float]] = {}
    finished_queue: queue.SimpleQueue[Future] = queue.SimpleQueue()  # workers hand back futures in completion order
    try:
        while True:
            if stop.is_set():
                halt.set()
            if not halt.is_set() and budget.reason is None:
                _issue(lanes, budget, in_flight, halt, finished_queue)
            if not in_flight:
                break
            for fut in _finished(finished_queue):
                lane, item, reserved = in_flight.pop(fut)
                lane.in_flight -= 1
                if _record(db, cfg, lane, item, fut.result(), run_id, batch_id, versions, secrets, budget, reserved):
                    done += 1
                    if progress:
                        progress(done, total)
    except BaseException:
        halt.set()
        raise
    finally:
        for lane in lanes:
            lane.executor.shutdown(wait=True, cancel_futures=True)
    if budget.reason:
        for lane in lanes:
            lane.budget_stopped = bool(lane.queue) and not lane.breaker.open
        log.warning("generate %s: stopped issuing requests: %s", batch_id, budget.reason)
    report = GenerateReport(batch_id, run_id, tuple(_lane_report(lane) for lane in lanes), stopped=stop.is_set() and any(
        lane.queue for lane in lanes), budget_reason=budget.reason, elapsed_s=time.perf_counter() - started)
    for line in report.lines():
        log.info("%s", line)
    return report


def estimate(db, cfg: Config, batch_id: str | None = None, articles: int | None = None) -> Estimate:
    """Requests, estimated tokens and cost per deployment for one cycle (or the given batch); see monitor.ledger."""
    return ledger.estimate(db, cfg, batch_id=batch_id, articles=articles)


def _plan(db, cfg: Config, batch_id: str, deps: list[DeploymentConfig], versions: dict) -> dict[str, list[_Work]]:
    """Expand the batch's sampled articles, store their prompts, and render every request per deployment."""
    articles = list(db.query("select id, title, summary from articles where batch_id = ? and sampled = 1 order by id",
                             [batch_id]))
    plan: dict[str, list[_Work]] = {dep.name: [] for dep in deps}
    prompt_rows = []
    for art in articles:
        title, summary = art["title"] or "", art["summary"] or ""
        for planned in expand_article(art["id"], cfg.grid):
            p = planned.prompt
            prompt_rows.append({**asdict(p), "question_hash": content_hash(p.question),
                                "taxonomy_version": versions["taxonomy"], "families_version": versions["families"]})
            for dep in deps:
                for sample in range(planned.samples):
                    req = render(cfg, dep, title, summary, p.question, sample)
                    plan[dep.name].append(_Work(cache_key(dep, req, sample), p, sample, req))
    with db.conn:
        db["prompts"].upsert_all(prompt_rows, pk="id")
    return plan


def _lane(dep: DeploymentConfig) -> _Lane:
    return _Lane(dep=dep, provider=get_provider(dep), policy=RetryPolicy.for_deployment(dep),
                 breaker=CircuitBreaker.for_deployment(dep),
                 executor=ThreadPoolExecutor(max_workers=dep.concurrency, thread_name_prefix=f"gen-{dep.name}"))


def _stored(db, keys: list[str]) -> set[str]:
    found: set[str] = set()
    for i in range(0, len(keys), 500):
        chunk = keys[i:i + 500]
        marks = ",".join("?" * len(chunk))
        found.update(r["id"] for r in db.query(f"select id from responses where id in ({marks})", chunk))
    return found


def _issue(lanes: list[_Lane], budget: ledger.Budget, in_flight: dict, halt: threading.Event,
           finished: queue.SimpleQueue) -> None:
    """Fill every deployment up to its concurrency, round-robin, while the budget admits."""
    progressed = True
    while progressed:
        progressed = False
        for lane in lanes:
            if not lane.queue or lane.breaker.open or lane.in_flight >= lane.dep.concurrency:
                continue
            item = lane.queue[0]
            worst = ledger.worst_case_cost(lane.dep, item.request)
            if not budget.admit(worst):
                return
            lane.queue.popleft()
            lane.in_flight += 1
            fut = lane.executor.submit(_send, lane, item.request, halt)
            in_flight[fut] = (lane, item, worst)
            fut.add_done_callback(finished.put)
            progressed = True


def _finished(finished: queue.SimpleQueue) -> list[Future]:
    """Futures done so far: waits up to _POLL_S for the first (so `stop` is seen promptly), then drains."""
    try:
        out = [finished.get(timeout=_POLL_S)]
    except queue.Empty:
        return []
    while True:
        try:
            out.append(finished.get_nowait())
        except queue.Empty:
            return out


def _send(lane: _Lane, request: GenerationRequest, halt: threading.Event) -> Attempted:
    """Runs in a worker thread: the provider call with retries. Never raises."""
    def once() -> Completion:
        try:
            return lane.provider.complete(request)
        except ProviderError:
            raise
        except Exception as exc:  # a provider bug must become a stored error, not a lost key
            raise ProviderError(f"{type(exc).__name__}: {exc}", retriable=False) from exc

    return call_with_retries(once, lane.policy, lane.gate, halt, random.Random())


def _record(db, cfg: Config, lane: _Lane, item: _Work, outcome: Attempted, run_id: str, batch_id: str, versions: dict,
            secrets: list[str], budget: ledger.Budget, reserved: float) -> bool:
    """Store one outcome in its own transaction; False when it was abandoned (nothing stored, key stays pending)."""
    dep = lane.dep
    if outcome.abandoned:
        lane.queue.appendleft(item)
        budget.cancel(reserved)
        return False
    row = {
        "id": item.key, "prompt_id": item.prompt.id, "deployment": dep.name, "sample_index": item.sample_index,
        "seed": item.request.seed, "run_id": run_id, "batch_id": batch_id, "created_at": iso(utcnow()),
        "request_json": json.dumps(_describe(lane, item), sort_keys=True, ensure_ascii=False),
        "frames_version": versions["frames"], "attempts": outcome.attempts, "refusal_version": refusal.REFUSAL_VERSION,
    }
    if outcome.error is not None:
        error = redact(str(outcome.error), secrets)
        row.update(status=STATUS_ERROR, text=None, error=error, model_reported=None, tokens_in=0, tokens_out=0, cost=0.0,
                   latency_s=None, finish_reason=None)
        was_open = lane.breaker.open
        lane.breaker.record(False, error, fatal=outcome.error.fatal)
        log.warning("%s %s: %s (after %d sends)", dep.name, item.key, error, outcome.attempts)
        if lane.breaker.open and not was_open:
            log.error("%s: %s", dep.name, lane.breaker.reason)
    else:
        completion: Completion = outcome.value
        # A provider-side refusal or content filter is a refusal even when it came with no text.
        status = STATUS_REFUSAL if completion.finish_reason in REFUSAL_FINISH_REASONS else refusal.classify(completion.text)
        tokens_in = completion.tokens_in or ledger.request_tokens(item.request)
        tokens_out = completion.tokens_out or ledger.estimate_tokens(completion.text)
        row.update(status=status, text=completion.text, error=None, model_reported=completion.model_reported,
                   tokens_in=tokens_in, tokens_out=tokens_out, cost=ledger.cost(dep, tokens_in, tokens_out),
                   latency_s=round(completion.latency_s, 4), finish_reason=completion.finish_reason)
        lane.breaker.record(True)
    _insert_response(db, row)
    budget.settle(reserved, row["cost"])
    c = lane.counts
    c["requested"] += 1
    c["attempts"] += outcome.attempts
    c[{STATUS_OK: "ok", STATUS_REFUSAL: "refusals", STATUS_EMPTY: "empty", STATUS_ERROR: "errors"}[row["status"]]] += 1
    c["tokens_in"] += row["tokens_in"]
    c["tokens_out"] += row["tokens_out"]
    lane.cost += row["cost"]
    return True


def _insert_response(db, row: dict) -> None:
    """One short transaction per result. Plain SQL: sqlite-utils' insert re-reads the schema on every call,
    which costs about 6x the insert itself at the rates hosted deployments reach."""
    columns = tuple(row)
    sql = _INSERT_SQL.get(columns)
    if sql is None:
        sql = _INSERT_SQL[columns] = (f"insert or ignore into responses ({', '.join(columns)}) "
                                      f"values ({', '.join('?' * len(columns))})")
    with db.conn:
        db.conn.execute(sql, [row[c] for c in columns])


_INSERT_SQL: dict[tuple[str, ...], str] = {}


def _describe(lane: _Lane, item: _Work) -> dict:
    """Exactly what was sent (never the key): the provider's own description when it has one."""
    describe = getattr(lane.provider, "describe", None)
    sent = describe(item.request) if describe else {"request": asdict(item.request)}
    return {"deployment": lane.dep.name, "provider": lane.dep.provider, "sample_index": item.sample_index, **sent}


def _lane_report(lane: _Lane) -> DeploymentReport:
    c = lane.counts
    return DeploymentReport(
        deployment=lane.dep.name, planned=lane.planned, cached=lane.cached, requested=c["requested"], ok=c["ok"],
        refusals=c["refusals"], empty=c["empty"], errors=c["errors"], attempts=c["attempts"], tokens_in=c["tokens_in"],
        tokens_out=c["tokens_out"], cost=round(lane.cost, 10), pending=len(lane.queue),
        breaker_reason=lane.breaker.reason, budget_stopped=lane.budget_stopped,
    )
