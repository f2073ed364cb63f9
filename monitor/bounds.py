"""Per-cycle load bounds, applied before a cycle so it is trimmed by whole articles.

[budget] has three caps. The generate stage enforces ``max_prompts_per_cycle`` and
``max_cost_per_cycle`` request by request, which is a hard backstop but stops mid-grid and
leaves half-filled bundles. So before a cycle the monitor asks how many articles fit:

    fit = min(max_articles_per_cycle, grid.articles_per_batch,
              floor(max_prompts_per_cycle / requests per article),
              floor(max_cost_per_cycle / worst-case cost per article))

Requests per article come from expanding the grid for every deployment (exact); the
worst-case cost assumes mean stored title/summary lengths and max_tokens of output
(monitor.ledger.estimate). The ingest sampler (monitor.sampling, documented there) then
picks that many articles; the articles it leaves out and any requests the backstop still
refused are recorded in the run's skipped_json.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from monitor.config import Config


@dataclass(frozen=True, slots=True)
class CyclePlan:
    cfg: Config
    """The config to run the cycle with: budget.max_articles_per_cycle set to ``articles``."""
    articles: int
    """Articles the cycle may sample."""
    requests_per_article: int
    cost_per_article: float
    """Worst-case estimate."""
    limited_by: str | None
    """Which cap set ``articles`` below grid.articles_per_batch, in words; None when none did."""


def plan_cycle(db, cfg: Config) -> CyclePlan:
    """How many articles this cycle may sample under [budget], and the config that enforces it."""
    from monitor.ledger import estimate

    wanted = cfg.grid.articles_per_batch
    one = estimate(db, cfg, articles=1)
    per_req, per_cost = one.requests, one.cost_max
    limits: list[tuple[int, str]] = [(wanted, "")]
    b = cfg.budget
    if b.max_articles_per_cycle is not None:
        limits.append((b.max_articles_per_cycle, f"budget.max_articles_per_cycle = {b.max_articles_per_cycle}"))
    if b.max_prompts_per_cycle is not None and per_req > 0:
        fit = b.max_prompts_per_cycle // per_req
        limits.append((fit, f"budget.max_prompts_per_cycle = {b.max_prompts_per_cycle} fits {fit} article(s) "
                            f"of {per_req} requests each"))
    if b.max_cost_per_cycle is not None and per_cost > 0:
        fit = math.floor(b.max_cost_per_cycle / per_cost + 1e-9)
        limits.append((fit, f"budget.max_cost_per_cycle = {b.max_cost_per_cycle:g} fits {fit} article(s) "
                            f"at up to {per_cost:.4f} each"))
    articles, why = min(limits, key=lambda x: x[0])
    articles = max(articles, 0)
    trimmed = replace(cfg, budget=replace(cfg.budget, max_articles_per_cycle=articles))
    return CyclePlan(trimmed, articles, per_req, per_cost, why if articles < wanted else None)


def articles_skipped(db, batch_id: str, plan: CyclePlan, cfg: Config) -> dict | None:
    """What the article cap left out of this batch, for the run's skipped_json; None when it left nothing out.

    Re-runs the (pure) sampler without the cap on the stored candidates, so the count is what
    the grid alone would have sampled, not merely every unsampled article.
    """
    if plan.limited_by is None:
        return None
    from monitor.sampling import Candidate, choose
    from store.feeds import sample_candidates, sampled_count

    cands = [Candidate(r["id"], r["feed_id"], r["story_id"] or r["id"], r["stratum"], r["published_at"],
                       bool(r["story_seen"])) for r in sample_candidates(db, batch_id)]
    uncapped = choose(cands, per_batch=cfg.grid.articles_per_batch, per_feed=cfg.grid.articles_per_feed,
                      balance=cfg.grid.balance_strata)
    sampled = sampled_count(db, batch_id)
    if len(uncapped) <= sampled:
        return None
    return {"articles": len(uncapped) - sampled, "sampled": sampled, "available": len(cands),
            "reason": f"trimmed to {plan.articles} article(s): {plan.limited_by}"}
