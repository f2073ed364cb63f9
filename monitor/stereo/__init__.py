"""Culture-specific stereotype probe for Spanish-speaking countries (EspanStereo workflow).

generate (LLM candidates) -> validate (in-country Likert ratings) -> instantiate (test
items, approved in-country) -> probe (models, per country). importers bring in the
official EspanStereo release, SeeGULL Multilingual and generic CSVs; seed loads the
team's demo seed. Heavy imports (torch, sentence-transformers, llama.cpp, openai) stay
inside the functions that need them.

Entry points for `framewatch demo` and the monitor's scheduled job:
``monitor.stereo.seed.load_demo_seed(db) -> int`` and ``monitor.stereo.probe.probe(db, cfg, ...)``.
"""
