"""Culture-specific stereotype probe for Spanish-speaking countries (EspanStereo workflow).

generate (LLM candidates) -> validate (in-country Likert ratings) -> instantiate (test
items, approved in-country) -> probe (models, per country). importers bring in the
official EspanStereo release, SeeGULL Multilingual and generic CSVs; seed loads the
team's demo seed. Heavy imports (torch, sentence-transformers, llama.cpp, openai) stay
inside the functions that need them.

Public entry points (for `framewatch demo` and the monitor's scheduled job):

    load_demo_seed(db) -> int
    probe(db, cfg, deployments=None, *, seed=0, countries=(), limit=None, run_id=None) -> ProbeReport
"""

from __future__ import annotations

# Imported here, after the package is set up, so that `monitor.stereo.probe` names the
# function (a submodule import would otherwise rebind the attribute to the module).
from monitor.stereo.probe import ProbeReport, probe  # noqa: E402
from monitor.stereo.seed import load_demo_seed  # noqa: E402

__all__ = ["ProbeReport", "load_demo_seed", "probe"]
