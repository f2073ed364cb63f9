"""Tokens and cost: per request (stored on each response), per deployment and per cycle
(the ``ledger`` view), a pre-run estimate, and the per-cycle budget the generate stage obeys.

Cost of one request = tokens_in / 1000 * price_in_per_1k + tokens_out / 1000 * price_out_per_1k,
with the token counts the backend reported. Before a run, token counts are estimated: input
as ceil(characters / 4) of the rendered request (a common rule of thumb for English BPE
vocabularies; it is an estimate, not the tokenizer), output as max_tokens (the ceiling the
budget must assume) and, where the deployment already has stored answers, their mean.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from monitor.config import Config, DeploymentConfig
from monitor.types import GenerationRequest

CHARS_PER_TOKEN = 4
DEFAULT_TITLE_CHARS = 70
DEFAULT_SUMMARY_CHARS = 320


def cost(dep: DeploymentConfig, tokens_in: int, tokens_out: int) -> float:
    return tokens_in / 1000 * dep.price_in_per_1k + tokens_out / 1000 * dep.price_out_per_1k


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN) if text else 0


def request_tokens(request: GenerationRequest) -> int:
    """Estimated input tokens of a rendered request (prompt, or messages plus ~4 tokens of framing each)."""
    if request.prompt is not None:
        return estimate_tokens(request.prompt)
    return sum(estimate_tokens(text) + 4 for _, text in request.messages)


def worst_case_cost(dep: DeploymentConfig, request: GenerationRequest) -> float:
    """What a request can cost at most (input estimated, output at max_tokens): the budget reserves this."""
    return cost(dep, request_tokens(request), request.max_tokens)


class Budget:
    """Per-cycle caps from ``[budget]``. Used from the single thread that issues requests.

    A request is issued only if the cost already spent in this cycle, plus the worst case of
    the requests in flight, plus its own worst case stays within ``max_cost_per_cycle``; so
    the cap holds up to the error of the input-token estimate, even at high concurrency.
    ``max_prompts_per_cycle`` caps the number of requests sent (prompt x deployment x sample).
    """

    def __init__(self, max_cost: float | None, max_requests: int | None, *, spent: float = 0.0, sent: int = 0) -> None:
        self.max_cost = max_cost
        self.max_requests = max_requests
        self.spent = spent
        self.sent = sent
        self.reserved = 0.0
        self.in_flight = 0
        self.reason: str | None = None

    def admit(self, worst_case: float) -> bool:
        """Count the request in and reserve its worst case, or refuse it.

        A refusal while other requests are in flight is provisional (their actual cost may be
        lower than reserved); with nothing in flight it is final and ``reason`` says why.
        """
        if self.max_requests is not None and self.sent >= self.max_requests:
            self.reason = f"budget.max_prompts_per_cycle = {self.max_requests} requests reached"
            return False
        if self.max_cost is not None and self.spent + self.reserved + worst_case > self.max_cost + 1e-12:
            if self.in_flight == 0:
                self.reason = (f"budget.max_cost_per_cycle = {self.max_cost:g} reached (spent {self.spent:.4f}; "
                               f"the next request may cost up to {worst_case:.4f})")
            return False
        self.sent += 1
        self.in_flight += 1
        self.reserved += worst_case
        return True

    def settle(self, reserved: float, actual: float) -> None:
        self.in_flight -= 1
        self.reserved = max(0.0, self.reserved - reserved) if self.in_flight else 0.0
        self.spent += actual

    def cancel(self, reserved: float) -> None:
        """A request that was admitted but never sent (stopped while waiting to retry)."""
        self.settle(reserved, 0.0)
        self.sent -= 1


def cycle_spent(db, run_id: str) -> tuple[float, int]:
    """Cost and number of requests already stored for this cycle (a resumed cycle keeps its run id)."""
    if db is None or "responses" not in db.table_names():
        return 0.0, 0
    row = next(db.query("select coalesce(sum(cost), 0.0) as c, count(*) as n from responses where run_id = ?", [run_id]))
    return float(row["c"]), int(row["n"])


def cycle_ledger(db, run_id: str) -> list[dict]:
    """Per deployment: requests, statuses, tokens and cost stored in one cycle."""
    return list(db.query("select * from ledger where run_id = ? order by deployment", [run_id]))


@dataclass(frozen=True, slots=True)
class DeploymentEstimate:
    deployment: str
    requests: int
    """Requests one cycle sends (prompt x sample), after subtracting keys already stored."""
    cached: int
    """Keys of the given batch already stored (0 without a batch)."""
    tokens_in: int
    tokens_out_max: int
    tokens_out_expected: int
    """Mean stored tokens_out of this deployment x requests; equals tokens_out_max without history."""
    cost_max: float
    cost_expected: float


@dataclass(frozen=True, slots=True)
class Estimate:
    articles: int
    batch_id: str | None
    deployments: tuple[DeploymentEstimate, ...]
    budget_note: str | None
    """Which [budget] cap this cycle would hit, if any."""

    @property
    def requests(self) -> int:
        return sum(d.requests for d in self.deployments)

    @property
    def cost_max(self) -> float:
        return sum(d.cost_max for d in self.deployments)

    @property
    def cost_expected(self) -> float:
        return sum(d.cost_expected for d in self.deployments)

    def lines(self) -> list[str]:
        where = f"batch {self.batch_id}" if self.batch_id else "one cycle"
        out = [f"estimate for {where}: {self.articles} article(s)",
               f"{'deployment':<24}{'requests':>10}{'cached':>8}{'tokens in':>12}{'out (max)':>12}{'out (exp)':>12}"
               f"{'cost max':>12}{'cost exp':>12}"]
        for d in self.deployments:
            out.append(f"{d.deployment:<24}{d.requests:>10}{d.cached:>8}{d.tokens_in:>12}{d.tokens_out_max:>12}"
                       f"{d.tokens_out_expected:>12}{d.cost_max:>12.4f}{d.cost_expected:>12.4f}")
        out.append(f"{'total':<24}{self.requests:>10}{sum(d.cached for d in self.deployments):>8}"
                   f"{sum(d.tokens_in for d in self.deployments):>12}{sum(d.tokens_out_max for d in self.deployments):>12}"
                   f"{sum(d.tokens_out_expected for d in self.deployments):>12}{self.cost_max:>12.4f}{self.cost_expected:>12.4f}")
        out.append("input tokens are estimated as characters / 4; costs use each deployment's price_in/out_per_1k")
        if self.budget_note:
            out.append(self.budget_note)
        return out


def estimate(db, cfg: Config, batch_id: str | None = None, articles: int | None = None) -> Estimate:
    """Requests, tokens and cost per deployment for one cycle of the grid, or for the given batch."""
    from monitor.expand import expand_article
    from monitor.render import cache_key, render

    if batch_id is not None:
        rows = list(db.query("select id, title, summary from articles where batch_id = ? and sampled = 1 order by id", [batch_id]))
        texts = [(r["id"], r["title"] or "", r["summary"] or "") for r in rows]
    else:
        n = articles if articles is not None else _articles_per_cycle(cfg)
        title, summary = _typical_article(db)
        texts = [(f"estimate-{i}", title, summary) for i in range(n)]
    stored = _stored_keys(db, batch_id)
    history = _mean_tokens_out(db)
    per_dep = []
    for dep in cfg.deployments:
        requests = cached = t_in = t_out = 0
        for article_id, title, summary in texts:
            for planned in expand_article(article_id, cfg.grid):
                for sample in range(planned.samples):
                    req = render(cfg, dep, title, summary, planned.prompt.question, sample)
                    if cache_key(dep, req, sample) in stored:
                        cached += 1
                        continue
                    requests += 1
                    t_in += request_tokens(req)
                    t_out += req.max_tokens
        mean_out = history.get(dep.name)
        t_exp = round(mean_out * requests) if mean_out is not None else t_out
        per_dep.append(DeploymentEstimate(dep.name, requests, cached, t_in, t_out, t_exp,
                                          cost(dep, t_in, t_out), cost(dep, t_in, t_exp)))
    return Estimate(len(texts), batch_id, tuple(per_dep), _budget_note(cfg, per_dep))


def _articles_per_cycle(cfg: Config) -> int:
    n = cfg.grid.articles_per_batch
    cap = cfg.budget.max_articles_per_cycle
    return min(n, cap) if cap is not None else n


def _typical_article(db) -> tuple[str, str]:
    """Mean title/summary length of stored articles, or a typical news item without a database."""
    title_len, summary_len = DEFAULT_TITLE_CHARS, DEFAULT_SUMMARY_CHARS
    if db is not None and "articles" in db.table_names() and db["articles"].count:
        row = next(db.query("select avg(length(title)) as t, avg(length(summary)) as s from articles"))
        title_len, summary_len = int(row["t"] or title_len), int(row["s"] or summary_len)
    return _filler(title_len), _filler(summary_len)


def _filler(chars: int) -> str:
    return ("word " * (chars // 5 + 1))[:chars]


def _stored_keys(db, batch_id: str | None) -> set[str]:
    if db is None or batch_id is None:
        return set()
    return {r["id"] for r in db.query("select id from responses where batch_id = ?", [batch_id])}


def _mean_tokens_out(db) -> dict[str, float]:
    if db is None or "responses" not in db.table_names():
        return {}
    rows = db.query("select deployment, avg(tokens_out) as m from responses where status != 'error' and tokens_out > 0 "
                    "group by deployment")
    return {r["deployment"]: float(r["m"]) for r in rows}


def _budget_note(cfg: Config, per_dep: Iterable[DeploymentEstimate]) -> str | None:
    per_dep = list(per_dep)
    total_requests = sum(d.requests for d in per_dep)
    total_cost = sum(d.cost_max for d in per_dep)
    notes = []
    if cfg.budget.max_prompts_per_cycle is not None and total_requests > cfg.budget.max_prompts_per_cycle:
        notes.append(f"budget.max_prompts_per_cycle = {cfg.budget.max_prompts_per_cycle} would stop this cycle "
                     f"after {cfg.budget.max_prompts_per_cycle} of {total_requests} requests")
    if cfg.budget.max_cost_per_cycle is not None and total_cost > cfg.budget.max_cost_per_cycle:
        notes.append(f"budget.max_cost_per_cycle = {cfg.budget.max_cost_per_cycle:g} is below the worst case "
                     f"{total_cost:.4f}: the cycle may stop early")
    return "; ".join(notes) or None
