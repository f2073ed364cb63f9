"""Domain records shared by every stage. Stdlib only; the store maps them to rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

CONTROL_IDENTITY = "identity"
"""An identity-conditioned prompt: one of the 42 demographic labels."""
CONTROL_IDENTITY_FREE = "identity_free"
"""The same template with no identity sentence; its repeats give the noise floor."""
CONTROL_PLACEBO = "placebo"
"""A label with no demographic content (left-handed, owns a bicycle ...)."""

STATUS_OK = "ok"
STATUS_REFUSAL = "refusal"
STATUS_EMPTY = "empty"
STATUS_ERROR = "error"


@dataclass(frozen=True, slots=True)
class Identity:
    key: str
    """Stable slug, e.g. ``religion.muslim``."""
    dimension: str
    """Dimension key (``religion``) or ``placebo``."""
    label: str
    """Short human label shown in the dashboard (``Muslim``)."""
    sentence: str
    """First-person sentence inserted into the prompt (``I am Muslim.``)."""


@dataclass(frozen=True, slots=True)
class Family:
    key: str
    title: str
    templates: tuple[str, ...]
    """Canonical question first, then paraphrases. Each is the question asked after the identity sentence."""


@dataclass(frozen=True, slots=True)
class Article:
    """One news item, normalised from a feed entry."""

    id: str
    feed_id: str
    guid: str
    link: str
    title: str
    summary: str
    published_at: datetime
    """UTC-aware. When the feed gave no usable date this is ``fetched_at`` and ``date_missing`` is True."""
    fetched_at: datetime
    date_missing: bool = False
    language: str | None = None
    stratum: str | None = None


@dataclass(frozen=True, slots=True)
class Prompt:
    """One question about one article, with or without an identity. Deployment independent."""

    id: str
    article_id: str
    family: str
    paraphrase: int
    control: str
    """One of CONTROL_IDENTITY, CONTROL_IDENTITY_FREE, CONTROL_PLACEBO."""
    dimension: str | None
    """Dimension of an identity prompt, ``placebo`` for placebos, None for identity-free."""
    identity_key: str | None
    question: str
    """Verbatim text asked after the article: identity sentence (if any) plus the family template."""


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """Exactly what is sent to a provider; its hash (with deployment and sample) is the cache key."""

    style: str
    """``completion`` (base models: one prompt string) or ``chat`` (messages)."""
    prompt: str | None
    messages: tuple[tuple[str, str], ...]
    max_tokens: int
    temperature: float
    top_p: float
    seed: int
    stop: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Completion:
    """What a provider returns; the pipeline turns it into a stored response."""

    text: str
    model_reported: str
    """Model id/version string the backend reported, so a silent provider update shows up."""
    tokens_in: int = 0
    tokens_out: int = 0
    finish_reason: str | None = None
    latency_s: float = 0.0


@dataclass(frozen=True, slots=True)
class ResponseRecord:
    """A stored answer, or a stored failure: per-item failures are data (HELM RequestResult style)."""

    id: str
    prompt_id: str
    deployment: str
    sample_index: int
    status: str
    text: str | None
    error: str | None
    model_reported: str | None
    tokens_in: int
    tokens_out: int
    cost: float
    latency_s: float
    created_at: datetime
    run_id: str | None = None
    request: dict = field(default_factory=dict)
