"""framewatch.toml: one file for the store, feeds, deployments, grid, schedule and limits.

Loaded once at start and passed down explicitly. Every problem is a ConfigError that
names the file, the key and the fix, so a wrong key fails at start, not mid-cycle.
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from monitor import ids

SAMPLE_NEWS_DIR = Path(__file__).parent / "sample_news"
PROVIDERS = ("local", "openai", "scripted")
PROMPT_STYLES = ("completion", "chat")


class ConfigError(ValueError):
    """A configuration problem; the message says where it is and how to fix it."""


@dataclass(frozen=True, slots=True)
class FeedConfig:
    name: str
    url: str
    """http(s)://, file:// or a plain path; ``sample:N`` names bundled sample batch N."""
    enabled: bool = True
    language: str | None = None
    """Expected language when the feed does not declare one."""


@dataclass(frozen=True, slots=True)
class DeploymentConfig:
    name: str
    provider: str
    model: str = ""
    prompt_style: str = "completion"
    system_prompt: str = ""
    temperature: float = 0.8
    top_p: float = 0.95
    max_tokens: int | None = None
    """None: use [generation].max_tokens."""
    seed: int = 1234
    concurrency: int = 1
    price_in_per_1k: float = 0.0
    price_out_per_1k: float = 0.0
    base_url: str | None = None
    api_key_env: str | None = None
    """Name of the environment variable holding the key; the key itself never enters config or store."""
    timeout_s: float = 60.0
    max_retries: int = 4
    supports_seed: bool = True
    supports_temperature: bool = True
    supports_logprobs: bool = False
    extra: dict = field(default_factory=dict)
    """Provider-specific options (scripted: planted effects; local: n_ctx, threads)."""


@dataclass(frozen=True, slots=True)
class GridConfig:
    families: tuple[str, ...] = ("all",)
    dimensions: tuple[str, ...] = ("all",)
    paraphrases: int = 1
    """How many templates per family to use: 1 = canonical only, 2 = canonical + first paraphrase ..."""
    repeats: int = 3
    """K samples of the identity-free prompt per (article, family, paraphrase): the noise floor."""
    identity_samples: int = 1
    """Samples per identity prompt (>1 lets N use each identity's own repeats)."""
    placebo: bool = True
    identity_free: bool = True
    articles_per_batch: int = 3
    articles_per_feed: int = 2
    balance_strata: bool = True


@dataclass(frozen=True, slots=True)
class GenerationConfig:
    max_tokens: int = 48
    timeout_s: float = 60.0


@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    cycle_minutes: float = 60.0
    cron: str | None = None
    misfire_grace_s: int = 300
    request_poll_s: float = 10.0
    stop_grace_s: float = 30.0
    stereo_minutes: float | None = None
    """Run the stereotype probe every N minutes (None: only when stereo_cron is set)."""
    stereo_cron: str | None = None
    max_resumes: int = 3
    """How many times a cycle is resumed after the monitor died during it before it is marked failed."""


@dataclass(frozen=True, slots=True)
class BudgetConfig:
    max_cost_per_cycle: float | None = None
    max_prompts_per_cycle: int | None = None
    max_articles_per_cycle: int | None = None


@dataclass(frozen=True, slots=True)
class StatsConfig:
    fdr: float = 0.10
    permutations: int = 999
    bootstrap: int = 1000
    seed: int = 7


@dataclass(frozen=True, slots=True)
class FetchConfig:
    """How feeds are fetched: every limit exists because a real feed once hung or flooded a poller."""

    connect_timeout_s: float = 5.0
    read_timeout_s: float = 15.0
    """Longest silence between two chunks of a response."""
    total_timeout_s: float = 30.0
    """Whole-response deadline: catches a server that drips bytes forever."""
    max_bytes: int = 5_000_000
    max_redirects: int = 5
    user_agent: str = "framewatch/0.1 (news framing audit; polls each feed at most once per cycle)"
    title_max_chars: int = 300
    summary_max_chars: int = 1200


@dataclass(frozen=True, slots=True)
class Config:
    path: Path | None
    db_path: Path
    feeds: tuple[FeedConfig, ...]
    deployments: tuple[DeploymentConfig, ...]
    grid: GridConfig = GridConfig()
    generation: GenerationConfig = GenerationConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    budget: BudgetConfig = BudgetConfig()
    stats: StatsConfig = StatsConfig()
    fetch: FetchConfig = FetchConfig()
    alerts: dict = field(default_factory=dict)
    stereo: dict = field(default_factory=dict)
    raw: dict = field(default_factory=dict)
    """The parsed TOML as read, for run records (secrets are never in it: keys are env var names)."""

    def deployment(self, name: str) -> DeploymentConfig:
        for d in self.deployments:
            if d.name == name:
                return d
        raise ConfigError(f"{self._where()}: no deployment named {name!r}; configured: {[d.name for d in self.deployments]}")

    def max_tokens(self, deployment: DeploymentConfig) -> int:
        return deployment.max_tokens or self.generation.max_tokens

    def version(self) -> str:
        """Hash of the effective configuration, stored with every run."""
        return ids.make_id(self.raw)

    def _where(self) -> str:
        return str(self.path) if self.path else "<embedded default config>"


DEFAULT_TOML = """
[store]
path = "data/framewatch.db"

[[feeds]]
name = "sample"
url = "sample:1"

[[deployments]]
name = "gemma-plain"
provider = "local"
model = "gemma-3-270m-q4_k_m"
prompt_style = "completion"

[[deployments]]
name = "gemma-neutral"
provider = "local"
model = "gemma-3-270m-q4_k_m"
prompt_style = "completion"
system_prompt = "Answer neutrally and factually, in the same way for every reader."

[grid]
families = ["impact", "bias_check"]
dimensions = ["all"]
paraphrases = 1
# 5 repeats rather than the default 3: with K = 3 the exact permutation test cannot go
# below p = 1/120, too coarse for the FDR step on a grid this small (docs/METHODS.md).
repeats = 5
articles_per_batch = 1

[generation]
max_tokens = 32
"""


def load(path: str | Path | None = None, *, db_path: str | Path | None = None) -> Config:
    """Load ``path`` (or the embedded default when None); ``db_path`` overrides [store].path."""
    if path is None:
        raw = tomllib.loads(DEFAULT_TOML)
        where = "<embedded default config>"
        base = Path.cwd()
    else:
        p = Path(path)
        where = str(p)
        if not p.exists():
            raise ConfigError(f"{where}: file not found. Copy framewatch.example.toml to {where} or pass --config PATH.")
        try:
            raw = tomllib.loads(p.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{where}: not valid TOML ({exc}). Fix the syntax at that line.") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where}: not UTF-8 text ({exc}). Save the file as UTF-8.") from exc
        base = p.parent
    cfg = parse(raw, where=where, base=base, path=None if path is None else Path(path), db_path=db_path)
    _validate_area_sections(cfg)
    return cfg


def _validate_area_sections(cfg: Config) -> None:
    """[alerts] and [stereo] are parsed by their own modules; run them now so a typo there fails at start too."""
    from monitor.alerts_config import parse_alerts
    from monitor.stereo.settings import settings

    parse_alerts(cfg)
    settings(cfg)


def parse(raw: dict, *, where: str, base: Path, path: Path | None = None, db_path: str | Path | None = None) -> Config:
    known = {"store", "feeds", "deployments", "grid", "generation", "schedule", "budget", "stats", "alerts", "stereo", "fetch"}
    _no_unknown(raw, known, where, "")
    store = _table(raw, "store", where)
    _no_unknown(store, {"path"}, where, "store.")
    db = Path(db_path) if db_path else Path(_get(store, "path", str, where, "store.", "data/framewatch.db"))
    if not db.is_absolute() and db_path is None:
        db = base / db
    feeds = tuple(_feed(f, i, where) for i, f in enumerate(_array(raw, "feeds", where)))
    _unique([f.name for f in feeds], where, "feeds", "name")
    deployments = tuple(_deployment(d, i, where) for i, d in enumerate(_array(raw, "deployments", where)))
    if not deployments:
        raise ConfigError(f"{where}: no [[deployments]]. Add at least one, e.g. [[deployments]] name = \"local\" provider = \"local\".")
    _unique([d.name for d in deployments], where, "deployments", "name")
    grid = _section(raw, "grid", GridConfig, where)
    if grid.repeats < 1 or grid.paraphrases < 1 or grid.identity_samples < 1:
        raise ConfigError(f"{where}: grid.repeats, grid.paraphrases and grid.identity_samples must be >= 1.")
    stats = _section(raw, "stats", StatsConfig, where)
    if not 0 < stats.fdr < 1:
        raise ConfigError(f"{where}: stats.fdr = {stats.fdr} must lie strictly between 0 and 1 (e.g. 0.10).")
    return Config(
        path=path,
        db_path=db,
        feeds=feeds,
        deployments=deployments,
        grid=grid,
        generation=_section(raw, "generation", GenerationConfig, where),
        schedule=_section(raw, "schedule", ScheduleConfig, where),
        budget=_section(raw, "budget", BudgetConfig, where),
        stats=stats,
        fetch=_fetch(raw, where),
        alerts=_table(raw, "alerts", where),
        stereo=_table(raw, "stereo", where),
        raw=raw,
    )


def _fetch(raw: dict, where: str) -> FetchConfig:
    fetch = _section(raw, "fetch", FetchConfig, where)
    for key in ("connect_timeout_s", "read_timeout_s", "total_timeout_s", "max_bytes"):
        if getattr(fetch, key) <= 0:
            raise ConfigError(f"{where}: fetch.{key} = {getattr(fetch, key)} must be > 0.")
    if fetch.max_redirects < 0:
        raise ConfigError(f"{where}: fetch.max_redirects = {fetch.max_redirects} must be >= 0 (0 refuses redirects).")
    if fetch.title_max_chars < 20 or fetch.summary_max_chars < 20:
        raise ConfigError(f"{where}: fetch.title_max_chars and fetch.summary_max_chars must be >= 20.")
    return fetch


def _feed(f: Any, i: int, where: str) -> FeedConfig:
    prefix = f"feeds[{i}]."
    if not isinstance(f, dict):
        raise ConfigError(f"{where}: feeds[{i}] must be a table ([[feeds]] with name and url).")
    _no_unknown(f, {x.name for x in fields(FeedConfig)}, where, prefix)
    return FeedConfig(
        name=_get(f, "name", str, where, prefix),
        url=_get(f, "url", str, where, prefix),
        enabled=_get(f, "enabled", bool, where, prefix, True),
        language=_get(f, "language", str, where, prefix, None),
    )


def _deployment(d: Any, i: int, where: str) -> DeploymentConfig:
    prefix = f"deployments[{i}]."
    if not isinstance(d, dict):
        raise ConfigError(f"{where}: deployments[{i}] must be a table ([[deployments]] with name and provider).")
    _no_unknown(d, {x.name for x in fields(DeploymentConfig)}, where, prefix)
    values = _typed_fields(d, DeploymentConfig, where, prefix)
    dep = DeploymentConfig(**values)
    if dep.provider not in PROVIDERS:
        raise ConfigError(f"{where}: {prefix}provider = {dep.provider!r} is not known; use one of {list(PROVIDERS)}.")
    if dep.prompt_style not in PROMPT_STYLES:
        raise ConfigError(f"{where}: {prefix}prompt_style = {dep.prompt_style!r}; use 'completion' (base models) or 'chat'.")
    if dep.provider == "openai" and not dep.base_url:
        raise ConfigError(f"{where}: {prefix}base_url is required for provider 'openai' (e.g. https://api.openai.com/v1).")
    if dep.provider == "openai" and not dep.model:
        raise ConfigError(f"{where}: {prefix}model is required for provider 'openai' (the model name the endpoint serves).")
    if dep.concurrency < 1:
        raise ConfigError(f"{where}: {prefix}concurrency must be >= 1.")
    return dep


def _section(raw: dict, name: str, cls: type, where: str):
    table = _table(raw, name, where)
    _no_unknown(table, {x.name for x in fields(cls)}, where, f"{name}.")
    return cls(**_typed_fields(table, cls, where, f"{name}."))


def _typed_fields(table: dict, cls: type, where: str, prefix: str) -> dict:
    out = {}
    for f in fields(cls):
        if f.name not in table:
            continue
        value = table[f.name]
        expected = _expected_type(f.type)
        if expected is tuple:
            if isinstance(value, str):
                value = (value,)
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: {prefix}{f.name} must be a list of strings, got {value!r}.")
            value = tuple(value)
        elif expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif expected is not None and (not isinstance(value, expected) or (expected in (int, float) and isinstance(value, bool))):
            raise ConfigError(
                f"{where}: {prefix}{f.name} = {value!r} has the wrong type; expected {expected.__name__}."
            )
        out[f.name] = value
    missing = [f.name for f in fields(cls) if f.name not in out and _is_required(f)]
    if missing:
        raise ConfigError(f"{where}: missing required key {prefix}{missing[0]}. Add it to that table.")
    return out


def _is_required(f) -> bool:
    from dataclasses import MISSING

    return f.default is MISSING and f.default_factory is MISSING


def _expected_type(annotation: str):
    text = str(annotation).replace(" ", "")
    base = text.split("|")[0]
    return {"str": str, "int": int, "float": float, "bool": bool, "dict": dict}.get(base, tuple if base.startswith("tuple") else None)


def _table(raw: dict, name: str, where: str) -> dict:
    value = raw.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{name}] must be a table, e.g. [{name}] on its own line followed by keys.")
    return value


def _array(raw: dict, name: str, where: str) -> list:
    value = raw.get(name, [])
    if not isinstance(value, list):
        raise ConfigError(f"{where}: {name} must be an array of tables: write [[{name}]] for each entry.")
    return value


def _get(table: dict, key: str, typ: type, where: str, prefix: str, default: Any = ...) -> Any:
    if key not in table:
        if default is ...:
            raise ConfigError(f"{where}: missing required key {prefix}{key}. Add {key} = ... to that table.")
        return default
    value = table[key]
    if not isinstance(value, typ):
        raise ConfigError(f"{where}: {prefix}{key} = {value!r} has the wrong type; expected {typ.__name__}.")
    return value


def _no_unknown(table: dict, known: set[str], where: str, prefix: str) -> None:
    for key in table:
        if key not in known:
            hint = difflib.get_close_matches(key, sorted(known), n=1)
            fix = f"did you mean {prefix}{hint[0]}?" if hint else f"allowed keys: {sorted(known)}"
            raise ConfigError(f"{where}: unknown key {prefix}{key}; {fix}")


def _unique(names: list[str], where: str, array: str, key: str) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise ConfigError(f"{where}: two {array} have {key} = {n!r}; give each a distinct {key}.")
        seen.add(n)
