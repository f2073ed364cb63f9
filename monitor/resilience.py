"""Retries with backoff, a per-deployment pause after 429, and a circuit breaker.

These wrap a provider's ``complete`` in the generate stage; providers themselves send each
request exactly once (the openai client runs with ``max_retries=0``), so every attempt is
counted and paced here.

Per-deployment tuning lives in ``[[deployments]] extra`` (documented in docs/PROVIDERS.md):
``backoff_base_s`` (0.5), ``backoff_max_s`` (30), ``retry_after_max_s`` (120) and
``breaker_failures`` (5 consecutive failed requests open the circuit).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from monitor.config import DeploymentConfig
from monitor.providers.base import ProviderError

DEFAULT_BACKOFF_BASE_S = 0.5
DEFAULT_BACKOFF_MAX_S = 30.0
DEFAULT_RETRY_AFTER_MAX_S = 120.0
DEFAULT_BREAKER_FAILURES = 5


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int
    """Attempts after the first; a request is sent at most ``max_retries + 1`` times."""
    base_s: float
    max_s: float
    retry_after_max_s: float

    @classmethod
    def for_deployment(cls, dep: DeploymentConfig) -> RetryPolicy:
        extra = dep.extra or {}
        return cls(
            max_retries=max(0, dep.max_retries),
            base_s=float(extra.get("backoff_base_s", DEFAULT_BACKOFF_BASE_S)),
            max_s=float(extra.get("backoff_max_s", DEFAULT_BACKOFF_MAX_S)),
            retry_after_max_s=float(extra.get("retry_after_max_s", DEFAULT_RETRY_AFTER_MAX_S)),
        )

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based).

        Retry-After wins when the server sends it (capped, so a hostile header cannot park a
        cycle); otherwise exponential backoff with "equal jitter": half fixed, half random, so
        concurrent workers that failed together do not retry together.
        """
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_max_s) + rng.uniform(0, 0.1 * max(self.base_s, 0.01))
        ceiling = min(self.max_s, self.base_s * (2 ** (attempt - 1)))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)


class RateGate:
    """Shared 'not before' time for one deployment: a 429 pauses every worker, not just the one that got it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._not_before = 0.0

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)

    def wait(self, stop: threading.Event) -> bool:
        """Sleep until the pause is over; False when ``stop`` was set meanwhile."""
        while True:
            with self._lock:
                remaining = self._not_before - time.monotonic()
            if remaining <= 0:
                return True
            if stop.wait(remaining):
                return False


class CircuitBreaker:
    """Opens after ``threshold`` consecutive failed requests, or at once on a fatal error (bad key, unknown model)."""

    def __init__(self, threshold: int) -> None:
        self.threshold = max(1, threshold)
        self.consecutive = 0
        self.reason: str | None = None

    @classmethod
    def for_deployment(cls, dep: DeploymentConfig) -> CircuitBreaker:
        return cls(int((dep.extra or {}).get("breaker_failures", DEFAULT_BREAKER_FAILURES)))

    @property
    def open(self) -> bool:
        return self.reason is not None

    def record(self, ok: bool, error: str | None = None, *, fatal: bool = False) -> None:
        if ok:
            self.consecutive = 0
            return
        self.consecutive += 1
        if self.reason is None and (fatal or self.consecutive >= self.threshold):
            why = "a non-retriable error" if fatal else f"{self.consecutive} consecutive failed requests"
            self.reason = f"circuit opened after {why}; last error: {error}"


@dataclass(frozen=True, slots=True)
class Attempted:
    """Outcome of one logical request after retries: a value or the last error, and how many sends it took."""

    value: object | None
    error: ProviderError | None
    attempts: int
    abandoned: bool = False
    """True when ``stop`` was set while waiting to retry: nothing to store, the key stays pending."""


def call_with_retries(send: Callable[[], object], policy: RetryPolicy, gate: RateGate, stop: threading.Event,
                      rng: random.Random | None = None) -> Attempted:
    rng = rng or random.Random()
    attempt = 0
    while True:
        if not gate.wait(stop):
            return Attempted(None, None, attempt, abandoned=True)
        attempt += 1
        try:
            return Attempted(send(), None, attempt)
        except ProviderError as exc:
            if not exc.retriable or attempt > policy.max_retries:
                return Attempted(None, exc, attempt)
            wait = policy.delay(attempt, exc.retry_after, rng)
            if exc.retry_after is not None:
                gate.pause(wait)
            elif stop.wait(wait):
                return Attempted(None, None, attempt, abandoned=True)
