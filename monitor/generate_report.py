"""What the generate stage reports: per deployment and in total, what was planned, cached,
requested, answered, refused, empty or failed, what it cost, and why anything was left pending."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DeploymentReport:
    deployment: str
    planned: int
    """Keys of this batch for this deployment."""
    cached: int
    """Keys already stored before this call: not requested."""
    requested: int
    """Keys sent and stored in this call (answers and recorded errors)."""
    ok: int
    refusals: int
    empty: int
    errors: int
    attempts: int
    """Sends including retries."""
    tokens_in: int
    tokens_out: int
    cost: float
    pending: int
    """Keys left unrequested (stop, budget or open circuit); the next run picks them up."""
    breaker_reason: str | None = None
    budget_stopped: bool = False


@dataclass(frozen=True, slots=True)
class GenerateReport:
    batch_id: str
    run_id: str
    deployments: tuple[DeploymentReport, ...]
    stopped: bool
    """The ``stop`` event was set before every key was requested."""
    budget_reason: str | None
    elapsed_s: float

    def _sum(self, name: str):
        return sum(getattr(d, name) for d in self.deployments)

    planned = property(lambda self: self._sum("planned"))
    cached = property(lambda self: self._sum("cached"))
    requested = property(lambda self: self._sum("requested"))
    ok = property(lambda self: self._sum("ok"))
    refusals = property(lambda self: self._sum("refusals"))
    empty = property(lambda self: self._sum("empty"))
    errors = property(lambda self: self._sum("errors"))
    attempts = property(lambda self: self._sum("attempts"))
    tokens_in = property(lambda self: self._sum("tokens_in"))
    tokens_out = property(lambda self: self._sum("tokens_out"))
    cost = property(lambda self: self._sum("cost"))
    pending = property(lambda self: self._sum("pending"))

    @property
    def budget_stopped(self) -> bool:
        return self.budget_reason is not None

    @property
    def breaker_tripped(self) -> bool:
        return any(d.breaker_reason for d in self.deployments)

    @property
    def skipped(self) -> dict:
        """Per deployment with unrequested keys: how many and why (stored in the run record)."""
        out = {}
        for d in self.deployments:
            if d.pending:
                why = d.breaker_reason or (self.budget_reason if d.budget_stopped else None) or (
                    "stopped before these were requested" if self.stopped else "not requested")
                out[d.deployment] = {"pending": d.pending, "reason": why}
        return out

    def lines(self) -> list[str]:
        out = [f"generate {self.batch_id}: {self.requested} requested, {self.cached} cached, {self.ok} ok, "
               f"{self.refusals} refusals, {self.empty} empty, {self.errors} errors, {self.pending} pending; "
               f"tokens {self.tokens_in} in / {self.tokens_out} out; cost {self.cost:.4f} ({self.elapsed_s:.1f} s)"]
        for d in self.deployments:
            out.append(f"  {d.deployment}: {d.requested} requested ({d.attempts} sends), {d.cached} cached, {d.ok} ok, "
                       f"{d.refusals} refusals, {d.empty} empty, {d.errors} errors, {d.pending} pending, cost {d.cost:.4f}")
            if d.breaker_reason:
                out.append(f"    stopped: {d.breaker_reason}")
        if self.budget_reason:
            out.append(f"  budget stop: {self.budget_reason}")
        if self.stopped:
            out.append("  stopped on request; the next run resumes the pending keys")
        return out
