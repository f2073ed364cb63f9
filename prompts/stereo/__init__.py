"""Versioned data of the stereotype probe: countries and categories, the six retrieval
perspectives, probe and drafting frames, and the team's demo seed (all Spanish).

Each loader validates its file and returns the declared version plus a short content
hash, so an edit without a version bump still changes the version stored with results.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache

from prompts import PromptDataError, read_versioned

PERSPECTIVES_EXPECTED = 6
DEMO_DATASET = "demo seed"


@dataclass(frozen=True, slots=True)
class Country:
    code: str
    """Upper-case code used everywhere in the store (``MX``)."""
    name: str
    """Spanish name, used inside prompts (``México``)."""
    name_en: str
    aliases: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Category:
    key: str
    label: str
    """Spanish label used inside prompts (``orientación sexual``)."""
    label_en: str
    aliases: tuple[str, ...]
    generate: bool
    """Asked for by `stereo generate` by default; False for import-only categories."""


@dataclass(frozen=True, slots=True)
class Catalog:
    version: str
    countries: dict[str, Country]
    categories: dict[str, Category]

    def country_code(self, value: str) -> str | None:
        """The code for a code, a name or an alias (case and accents ignored); None when unknown."""
        wanted = fold(value)
        for c in self.countries.values():
            if wanted in {fold(c.code), fold(c.name), fold(c.name_en), *(fold(a) for a in c.aliases)}:
                return c.code
        return None

    def category_key(self, value: str) -> str | None:
        wanted = fold(value)
        for c in self.categories.values():
            if wanted in {fold(c.key), fold(c.label), fold(c.label_en), *(fold(a) for a in c.aliases)}:
                return c.key
        return None


@dataclass(frozen=True, slots=True)
class Perspective:
    key: str
    title: str
    question: str


@dataclass(frozen=True, slots=True)
class Perspectives:
    version: str
    intro: str
    format: str
    completion: str
    chat: str
    perspectives: dict[str, Perspective]


@dataclass(frozen=True, slots=True)
class ProbeFrames:
    version: str
    separator: str
    choice_system: str
    choice_user: str
    choice_max_tokens: int


@dataclass(frozen=True, slots=True)
class DraftFrames:
    version: str
    chat: str
    completion: str


@dataclass(frozen=True, slots=True)
class DemoSeed:
    version: str
    dataset: str
    items: tuple[dict, ...]


def fold(text: str) -> str:
    """Lower case without accents or surrounding space: how aliases are compared."""
    decomposed = unicodedata.normalize("NFKD", str(text).strip().lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _strings(table: dict, keys: tuple[str, ...], where: str) -> None:
    for key in keys:
        if not isinstance(table.get(key), str) or not table[key].strip():
            raise PromptDataError(f"prompts/stereo/{where}: `{key}` must be a non-empty string")


@cache
def load_catalog() -> Catalog:
    name = "countries.toml"
    data, version = read_versioned(__name__, name)
    countries, categories = {}, {}
    for code, table in (data.get("countries") or {}).items():
        _strings(table, ("name", "name_en"), f"{name} [countries.{code}]")
        if code != code.upper():
            raise PromptDataError(f"prompts/stereo/{name}: country code {code!r} must be upper case (e.g. MX)")
        countries[code] = Country(code, table["name"], table["name_en"], tuple(table.get("aliases", ())))
    for key, table in (data.get("categories") or {}).items():
        _strings(table, ("label", "label_en"), f"{name} [categories.{key}]")
        categories[key] = Category(key, table["label"], table["label_en"], tuple(table.get("aliases", ())),
                                   bool(table.get("generate", True)))
    if not countries or not categories:
        raise PromptDataError(f"prompts/stereo/{name}: needs at least one [countries.XX] and one [categories.key] table")
    return Catalog(version=version, countries=countries, categories=categories)


@cache
def load_perspectives() -> Perspectives:
    name = "perspectives.toml"
    data, version = read_versioned(__name__, name)
    frame = data.get("frame") or {}
    _strings(frame, ("intro", "format", "completion", "chat"), f"{name} [frame]")
    out = {}
    for key, table in (data.get("perspectives") or {}).items():
        _strings(table, ("title", "question"), f"{name} [perspectives.{key}]")
        if "{country}" not in table["question"] or "{category}" not in table["question"]:
            raise PromptDataError(f"prompts/stereo/{name}: perspectives.{key}.question must contain {{country}} and {{category}}")
        out[key] = Perspective(key, table["title"], table["question"])
    if len(out) != PERSPECTIVES_EXPECTED:
        raise PromptDataError(f"prompts/stereo/{name}: expected {PERSPECTIVES_EXPECTED} perspectives, found {len(out)}")
    return Perspectives(version, frame["intro"], frame["format"], frame["completion"], frame["chat"], out)


@cache
def load_probe_frames() -> ProbeFrames:
    name = "probe.toml"
    data, version = read_versioned(__name__, name)
    choice = data.get("choice") or {}
    _strings(choice, ("system", "user"), f"{name} [choice]")
    for slot in ("{context}", "{first}", "{second}"):
        if slot not in choice["user"]:
            raise PromptDataError(f"prompts/stereo/{name}: choice.user must contain {slot}")
    separator = (data.get("loglik") or {}).get("separator", " ")
    return ProbeFrames(version, separator, choice["system"], choice["user"], int(choice.get("max_tokens", 8)))


@cache
def load_draft_frames() -> DraftFrames:
    name = "instantiate.toml"
    data, version = read_versioned(__name__, name)
    _strings(data, ("chat", "completion"), name)
    return DraftFrames(version, data["chat"], data["completion"])


DEMO_FIELDS = ("country", "category", "target_group", "stereotype", "context", "stereotype_sentence", "counter_sentence")


@cache
def load_demo_seed() -> DemoSeed:
    name = "demo_seed.toml"
    data, version = read_versioned(__name__, name)
    catalog = load_catalog()
    items = data.get("items") or []
    for i, item in enumerate(items):
        _strings(item, DEMO_FIELDS, f"{name} items[{i}]")
        if item["country"] not in catalog.countries or item["category"] not in catalog.categories:
            raise PromptDataError(f"prompts/stereo/{name}: items[{i}] names an unknown country or category; add it to countries.toml")
    return DemoSeed(version, data.get("dataset", DEMO_DATASET), tuple(dict(i) for i in items))


def versions() -> dict[str, str]:
    return {
        "stereo_catalog": load_catalog().version,
        "stereo_perspectives": load_perspectives().version,
        "stereo_probe": load_probe_frames().version,
        "stereo_draft": load_draft_frames().version,
    }
