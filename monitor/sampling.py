"""Choose the articles of a batch that a cycle expands into prompts. Pure.

Rules, in order:
- at most ``per_batch`` articles in all and ``per_feed`` from any one feed;
- one article per story (near-duplicates from several outlets count once);
- articles flagged injection_like last; then stories not sampled in an earlier batch; then,
  within a stratum, feeds take turns (each feed's newest, then each feed's second newest ...);
- with ``balance`` the strata take turns (identity-relevant, identity-neutral, ...), so
  neither dominates; when one stratum runs out the other fills the remaining places. The
  stratum sampled least in earlier batches takes the first turn (ties: identity-relevant).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from monitor.strata import IDENTITY_NEUTRAL, STRATA

SAMPLER_VERSION = "sampler-1"


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    feed_id: str
    story_id: str
    stratum: str
    published_at: str
    """ISO UTC; sorts chronologically as text."""
    story_seen: bool = False
    """Another article of this story was sampled in an earlier batch."""
    injection_like: bool = False
    """Instruction-like text: taken only when nothing else is left (it would move every model alike)."""


def choose(candidates: Sequence[Candidate], *, per_batch: int, per_feed: int, balance: bool,
           first: str | None = None) -> dict[str, str]:
    """article id -> reason, for the chosen articles, in the order they were chosen.
    ``first``: the stratum that takes the first turn (the one sampled least so far, so that
    an odd per_batch does not favour one stratum batch after batch)."""
    if per_batch <= 0 or per_feed <= 0:
        return {}
    queues = _queues(candidates, balance)
    order = [s for s in ((first,) if first else ()) + STRATA + tuple(sorted(queues)) if s in queues]
    order = list(dict.fromkeys(order))
    chosen: dict[str, str] = {}
    stories: set[str] = set()
    per_feed_count: dict[str, int] = defaultdict(int)
    position = {s: 0 for s in order}
    while len(chosen) < per_batch:
        progressed = False
        for stratum in order:
            if len(chosen) >= per_batch:
                break
            queue = queues[stratum]
            while position[stratum] < len(queue):
                cand = queue[position[stratum]]
                position[stratum] += 1
                if cand.story_id in stories or per_feed_count[cand.feed_id] >= per_feed:
                    continue
                stories.add(cand.story_id)
                per_feed_count[cand.feed_id] += 1
                chosen[cand.id] = _reason(cand, stratum, balance, len(chosen) + 1, per_batch, per_feed)
                progressed = True
                break
        if not progressed:
            break
    return chosen


def _queues(candidates: Sequence[Candidate], balance: bool) -> dict[str, list[Candidate]]:
    grouped: dict[str, list[Candidate]] = defaultdict(list)
    for c in candidates:
        key = (c.stratum or IDENTITY_NEUTRAL) if balance else "all"
        grouped[key].append(c)
    return {k: _interleave_feeds(v) for k, v in grouped.items()}


def _interleave_feeds(cands: list[Candidate]) -> list[Candidate]:
    by_feed: dict[str, list[Candidate]] = defaultdict(list)
    for c in sorted(cands, key=lambda c: (c.published_at or "", c.id), reverse=True):
        by_feed[c.feed_id].append(c)
    ranked = []
    for feed_list in by_feed.values():
        for rank, c in enumerate(feed_list):
            ranked.append((c.injection_like, c.story_seen, rank, _neg(c.published_at), c.id, c))
    return [r[-1] for r in sorted(ranked, key=lambda r: r[:5])]


def _neg(text: str | None) -> tuple:
    return tuple(-ord(ch) for ch in (text or ""))


def _reason(c: Candidate, stratum: str, balance: bool, k: int, per_batch: int, per_feed: int) -> str:
    how = f"strata balanced, {c.stratum} turn" if balance else "newest first"
    seen = "; story seen in an earlier batch" if c.story_seen else ""
    seen += "; flagged injection_like" if c.injection_like else ""
    return f"{SAMPLER_VERSION}: pick {k}/{per_batch} ({how}; max {per_feed} per feed; one per story{seen})"
