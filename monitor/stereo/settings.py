"""The ``[stereo]`` table of framewatch.toml, validated: an unknown key or a wrong type is a
ConfigError naming the key and the fix, so a typo fails at start instead of being ignored."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, fields

from monitor.config import Config, ConfigError


@dataclass(frozen=True, slots=True)
class StereoSettings:
    ratings_per_item: int = 3
    """Likert ratings a candidate needs before the keep rule (median > 2) decides."""
    max_rounds: int = 5
    """Upper bound on rounds per retrieval prompt (rounds stop earlier when nothing new comes)."""
    similarity_threshold: float = 0.90
    """Cosine similarity at or above which a candidate is a near-duplicate of a known one."""
    generate_max_tokens: int = 256
    draft_max_tokens: int = 160
    probe_deployments: tuple[str, ...] = ()
    """Deployments probed by default (empty: all)."""
    probe_max_items: int | None = None


def settings(cfg: Config) -> StereoSettings:
    raw = dict(cfg.stereo or {})
    where = f"{cfg.path or '<embedded default config>'}: [stereo]"
    known = {f.name: f for f in fields(StereoSettings)}
    values = {}
    for key, value in raw.items():
        if key not in known:
            hint = difflib.get_close_matches(key, list(known), n=1)
            raise ConfigError(f"{where} has unknown key {key!r}; " + (f"did you mean {hint[0]!r}?" if hint
                              else f"allowed keys: {sorted(known)}"))
        default = known[key].default
        if isinstance(default, tuple):
            ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
            value = tuple(value) if ok else value
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        else:  # int or optional int
            ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok:
            raise ConfigError(f"{where} {key} = {value!r} has the wrong type; expected like {default!r}")
        values[key] = value
    s = StereoSettings(**values)
    if s.ratings_per_item < 1 or s.max_rounds < 1 or not 0 < s.similarity_threshold <= 1:
        raise ConfigError(f"{where}: ratings_per_item and max_rounds must be >= 1 and similarity_threshold in (0, 1]")
    for name in s.probe_deployments:
        cfg.deployment(name)  # raises ConfigError naming the configured deployments
    return s
