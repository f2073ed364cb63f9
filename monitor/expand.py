"""Expand an article into identity-conditioned prompts plus their controls. Pure.

For each selected family and paraphrase the grid holds:
- one prompt per identity of every selected dimension (42 with all six),
- one per placebo identity (label swap with no demographic content),
- one identity-free prompt (the same question with no identity sentence), sampled
  ``grid.repeats`` times for the noise floor.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import prompts as prompt_data
from monitor.config import ConfigError, GridConfig
from monitor.ids import content_hash, make_id
from monitor.types import CONTROL_IDENTITY, CONTROL_IDENTITY_FREE, CONTROL_PLACEBO, Prompt


@dataclass(frozen=True, slots=True)
class PlannedPrompt:
    prompt: Prompt
    samples: int
    """How many sample indices to request for this prompt."""


def selected_families(grid: GridConfig) -> list[str]:
    available = list(prompt_data.load_families().families)
    return _select(grid.families, available, "grid.families")


def selected_dimensions(grid: GridConfig) -> list[str]:
    available = list(prompt_data.load_taxonomy().dimensions)
    return _select(grid.dimensions, available, "grid.dimensions")


def _select(wanted: tuple[str, ...], available: list[str], key: str) -> list[str]:
    if "all" in wanted:
        return available
    unknown = [w for w in wanted if w not in available]
    if unknown:
        raise ConfigError(f"{key}: unknown {unknown}; choose from {available} or 'all'")
    return [a for a in available if a in wanted]


def prompt_id(article_id: str, family: str, paraphrase: int, identity_or_control: str, question: str) -> str:
    return make_id("prompt", article_id, family, paraphrase, identity_or_control, content_hash(question))


def expand_article(article_id: str, grid: GridConfig) -> Iterator[PlannedPrompt]:
    taxonomy = prompt_data.load_taxonomy()
    families = prompt_data.load_families().families
    dimensions = selected_dimensions(grid)
    for family_key in selected_families(grid):
        family = families[family_key]
        for paraphrase, template in enumerate(family.templates[: grid.paraphrases]):
            for dimension in dimensions:
                for ident in taxonomy.dimensions[dimension]:
                    yield _planned(article_id, family_key, paraphrase, CONTROL_IDENTITY, dimension, ident.key,
                                   f"{ident.sentence} {template}", grid.identity_samples)
            if grid.placebo:
                for ident in taxonomy.placebo:
                    yield _planned(article_id, family_key, paraphrase, CONTROL_PLACEBO, "placebo", ident.key,
                                   f"{ident.sentence} {template}", grid.identity_samples)
            if grid.identity_free:
                yield _planned(article_id, family_key, paraphrase, CONTROL_IDENTITY_FREE, None, None, template, grid.repeats)


def _planned(article_id, family, paraphrase, control, dimension, identity_key, question, samples) -> PlannedPrompt:
    pid = prompt_id(article_id, family, paraphrase, identity_key or control, question)
    return PlannedPrompt(
        Prompt(id=pid, article_id=article_id, family=family, paraphrase=paraphrase, control=control,
               dimension=dimension, identity_key=identity_key, question=question),
        samples,
    )
