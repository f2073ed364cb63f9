from dataclasses import replace

from monitor import config
from monitor.render import cache_key, render


def test_completion_frame_for_base_model():
    cfg = config.load(None)
    plain, neutral = cfg.deployments
    req = render(cfg, plain, "Storm hits coast.", "Rain.", "I am Muslim. How does this news affect me?", 0)
    assert req.style == "completion"
    assert req.prompt == "News: Storm hits coast. Rain.\nQuestion: I am Muslim. How does this news affect me?\nAnswer:"
    assert "\nQuestion:" in req.stop
    assert req.max_tokens == cfg.generation.max_tokens
    with_system = render(cfg, neutral, "Storm hits coast.", "Rain.", "Q?", 0)
    assert with_system.prompt.startswith(neutral.system_prompt)


def test_chat_frame_delimits_article():
    cfg = config.load(None)
    dep = replace(cfg.deployments[1], prompt_style="chat")
    req = render(cfg, dep, "T", "S", "Q?", 0)
    assert req.messages[0] == ("system", dep.system_prompt)
    assert "<article>\nT\nS\n</article>" in req.messages[1][1]


def test_samples_get_distinct_seeds_and_keys():
    cfg = config.load(None)
    dep = cfg.deployments[0]
    a, b = render(cfg, dep, "T", "S", "Q?", 0), render(cfg, dep, "T", "S", "Q?", 1)
    assert a.seed != b.seed
    assert cache_key(dep, a, 0) != cache_key(dep, b, 1)
    assert cache_key(dep, a, 0) == cache_key(dep, render(cfg, dep, "T", "S", "Q?", 0), 0)
    assert cache_key(dep, a, 0) != cache_key(cfg.deployments[1], a, 0)
