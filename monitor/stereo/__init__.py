"""Culture-specific stereotype probe for Spanish-speaking countries (EspanStereo workflow).

generate (LLM candidates) -> validate (in-country Likert ratings) -> instantiate (test
items, approved in-country) -> probe (models, per country). importers bring in the
official EspanStereo release, SeeGULL Multilingual and generic CSVs; seed loads the
team's demo seed. Heavy imports (torch, sentence-transformers, llama.cpp, openai) stay
inside the functions that need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from monitor.stereo.probe import ProbeReport


def load_demo_seed(db) -> int:
    """Load the team's demo seed (labelled "demo seed") into ``db``; returns the number of items stored."""
    from monitor.stereo.seed import load_demo_seed as _load

    return _load(db)


def probe(db, cfg, deployments=None, *, seed: int = 0) -> ProbeReport:
    """Probe ``deployments`` (default: all configured) on every approved item; one stored run per call."""
    from monitor.stereo.probe import probe as _probe

    return _probe(db, cfg, deployments, seed=seed)


__all__ = ["load_demo_seed", "probe"]
