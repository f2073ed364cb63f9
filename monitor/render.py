"""Turn a stored prompt into the exact request a deployment receives, and its cache key. Pure.

The cache key hashes (deployment, full request, sample index): a key already stored is
never requested again, so an interrupted cycle resumes and a re-run costs nothing.
"""

from __future__ import annotations

from dataclasses import asdict

import prompts as prompt_data
from monitor.config import Config, DeploymentConfig
from monitor.ids import make_id
from monitor.types import GenerationRequest

SUMMARY_CAP = 600  # characters of article summary put into a prompt; keeps requests bounded


def render(cfg: Config, dep: DeploymentConfig, title: str, summary: str, question: str, sample_index: int) -> GenerationRequest:
    frames = prompt_data.load_frames()
    fields = {"title": title.strip().rstrip("."), "summary": summary.strip()[:SUMMARY_CAP], "question": question}
    seed = sample_seed(dep, question, title, sample_index)
    common = dict(max_tokens=cfg.max_tokens(dep), temperature=dep.temperature, top_p=dep.top_p, seed=seed)
    if dep.prompt_style == "completion":
        if dep.system_prompt:
            text = frames.completion_with_system.format(system=dep.system_prompt, **fields)
        else:
            text = frames.completion.format(**fields)
        return GenerationRequest(style="completion", prompt=text, messages=(), stop=frames.stop, **common)
    messages = []
    if dep.system_prompt:
        messages.append(("system", dep.system_prompt))
    messages.append(("user", frames.chat_user.format(**fields)))
    return GenerationRequest(style="chat", prompt=None, messages=tuple(messages), **common)


def sample_seed(dep: DeploymentConfig, question: str, title: str, sample_index: int) -> int:
    """Per-request seed: replayable per prompt and sample, different across repeats."""
    return int(make_id("seed", dep.seed, title, question, sample_index, length=8), 16) % (2**31 - 1)


def cache_key(dep: DeploymentConfig, request: GenerationRequest, sample_index: int) -> str:
    return make_id("response", dep.name, dep.provider, dep.model, dep.base_url, asdict(request), sample_index, length=24)
