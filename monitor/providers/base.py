"""The provider seam: one small protocol every model backend implements.

The pipeline, not the provider, turns a Completion or a ProviderError into a stored
response, so a provider only knows how to send one request.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from monitor.types import Completion, GenerationRequest


class ProviderError(Exception):
    """One request failed. ``retriable`` says whether trying again may help (429, 5xx, timeouts).

    ``fatal`` marks errors that will hit every request of the deployment (rejected key, unknown
    model): the generate stage opens the deployment's circuit at once instead of burning the cycle.
    """

    def __init__(self, message: str, *, retriable: bool, retry_after: float | None = None, fatal: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable
        self.retry_after = retry_after
        self.fatal = fatal


@runtime_checkable
class Provider(Protocol):
    name: str
    """Deployment name this provider serves."""

    def complete(self, request: GenerationRequest) -> Completion:
        """Send one request; raise ProviderError on failure."""
        ...
