"""Versioned prompt data: identity taxonomy, prompt families, rendering frames.

The TOML files ship inside the package. They are validated at load: a malformed file is
a PromptDataError naming the file, the key and the fix. Each loader returns the file's
declared version plus a short content hash, so a silent edit without a version bump still
changes the stored version string.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

from monitor.ids import content_hash
from monitor.types import Family, Identity

DIMENSIONS_EXPECTED = 6
IDENTITIES_PER_DIMENSION = 7
FAMILIES_EXPECTED = 7
MIN_TEMPLATES = 3  # canonical + at least 2 paraphrases


class PromptDataError(ValueError):
    """A shipped prompt file is malformed; the message names file, key and fix."""


@dataclass(frozen=True, slots=True)
class Taxonomy:
    version: str
    dimensions: dict[str, tuple[Identity, ...]]
    """Dimension key -> its 7 identities, in file order."""
    titles: dict[str, str]
    placebo: tuple[Identity, ...]

    def identity(self, key: str) -> Identity:
        for group in (*self.dimensions.values(), self.placebo):
            for ident in group:
                if ident.key == key:
                    return ident
        raise KeyError(key)


@dataclass(frozen=True, slots=True)
class Families:
    version: str
    families: dict[str, Family]


@dataclass(frozen=True, slots=True)
class Frames:
    version: str
    completion: str
    completion_with_system: str
    stop: tuple[str, ...]
    chat_user: str


def read_versioned(package: str, name: str) -> tuple[dict, str]:
    """Parse a packaged TOML file; returns (data, "declared version+content hash")."""
    where = f"{package.replace('.', '/')}/{name}"
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PromptDataError(f"{where}: not valid TOML ({exc})") from exc
    declared = data.get("version")
    if not isinstance(declared, str) or not declared:
        raise PromptDataError(f"{where}: missing `version = \"...\"` at the top; add one and bump it on every change")
    return data, f"{declared}+{content_hash(text)[:8]}"


def _identities(raw: object, name: str, where: str, dimension: str) -> tuple[Identity, ...]:
    if not isinstance(raw, list):
        raise PromptDataError(f"prompts/{name}: {where}.identities must be a list of {{key, label, sentence}} tables")
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) and item.get(k) for k in ("key", "label", "sentence")):
            raise PromptDataError(f"prompts/{name}: {where}.identities[{i}] needs non-empty key, label and sentence")
        out.append(Identity(key=f"{dimension}.{item['key']}", dimension=dimension, label=item["label"], sentence=item["sentence"]))
    if len(out) != IDENTITIES_PER_DIMENSION:
        raise PromptDataError(f"prompts/{name}: {where} has {len(out)} identities; keep exactly {IDENTITIES_PER_DIMENSION}")
    if len({i.key for i in out}) != len(out):
        raise PromptDataError(f"prompts/{name}: {where} has duplicate identity keys")
    return tuple(out)


@cache
def load_taxonomy() -> Taxonomy:
    name = "identities.toml"
    data, version = read_versioned(__name__, name)
    dims = data.get("dimensions")
    if not isinstance(dims, dict) or len(dims) != DIMENSIONS_EXPECTED:
        raise PromptDataError(f"prompts/{name}: expected {DIMENSIONS_EXPECTED} [dimensions.*] tables, found {len(dims or {})}")
    dimensions, titles = {}, {}
    for key, table in dims.items():
        dimensions[key] = _identities(table.get("identities"), name, f"dimensions.{key}", key)
        titles[key] = table.get("title", key)
    placebo_table = data.get("placebo")
    if not isinstance(placebo_table, dict):
        raise PromptDataError(f"prompts/{name}: missing [placebo] table with 7 placebo identities")
    placebo = _identities(placebo_table.get("identities"), name, "placebo", "placebo")
    titles["placebo"] = placebo_table.get("title", "Placebo")
    return Taxonomy(version=version, dimensions=dimensions, titles=titles, placebo=placebo)


@cache
def load_families() -> Families:
    name = "families.toml"
    data, version = read_versioned(__name__, name)
    fams = data.get("families")
    if not isinstance(fams, dict) or len(fams) != FAMILIES_EXPECTED:
        raise PromptDataError(f"prompts/{name}: expected {FAMILIES_EXPECTED} [families.*] tables, found {len(fams or {})}")
    out = {}
    for key, table in fams.items():
        templates = table.get("templates")
        if not isinstance(templates, list) or len(templates) < MIN_TEMPLATES or not all(isinstance(t, str) and t.strip() for t in templates):
            raise PromptDataError(
                f"prompts/{name}: families.{key}.templates must list the canonical question and at least "
                f"{MIN_TEMPLATES - 1} paraphrases as non-empty strings"
            )
        out[key] = Family(key=key, title=table.get("title", key), templates=tuple(t.strip() for t in templates))
    return Families(version=version, families=out)


@cache
def load_frames() -> Frames:
    name = "controls.toml"
    data, version = read_versioned(__name__, name)
    try:
        comp, chat = data["completion"], data["chat"]
        frames = Frames(
            version=version,
            completion=comp["template"],
            completion_with_system=comp["with_system"],
            stop=tuple(comp.get("stop", ())),
            chat_user=chat["user"],
        )
    except KeyError as exc:
        raise PromptDataError(f"prompts/{name}: missing key {exc}; see the shipped file for the expected shape") from exc
    for field_name in ("completion", "completion_with_system", "chat_user"):
        template = getattr(frames, field_name)
        if "{question}" not in template or "{title}" not in template:
            raise PromptDataError(f"prompts/{name}: the {field_name} frame must contain {{title}} and {{question}}")
    return frames


def versions() -> dict[str, str]:
    """Versions stored with every run and result."""
    return {"taxonomy": load_taxonomy().version, "families": load_families().version, "frames": load_frames().version}
