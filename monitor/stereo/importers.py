"""Importers: the official EspanStereo release, SeeGULL Multilingual, and any CSV with a column map.

Read (CSV, JSON Lines or Parquet) -> parse into candidate and item rows (pure) -> save
(idempotent inserts). Every problem with the columns is found before anything is written
and raised as StereoImportError naming the missing columns; a row that cannot be used is
counted with its reason, never silently dropped.

Keep rules (see monitor.stereo.validate): EspanStereo items are a published, validated
dataset and are stored as approved (``curated``); SeeGULL rows keep their votes exactly as
published and are kept when 'stereotype' votes are a strict majority of all votes
(``majority_votes``); generic-CSV candidates go to in-country Likert rating unless vote
columns are mapped, and their items wait for an in-country approval.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sqlite_utils import Database

from monitor.ids import iso, make_id, utcnow
from monitor.stereo import validate as v
from monitor.stereo.text import candidate_text, clean, normalise
from store import stereo as store

FORMATS = ("espanstereo", "seegull", "csv")
ESPANSTEREO_COLUMNS = ("Stereotype Category", "Stereotype", "Target Group", "Context Sentence", "Stereotype Sentence",
                       "Counter-Stereotype Sentence")
COUNTRY_COLUMNS = ("Country", "País", "Pais", "Country Code", "country_code")
SEEGULL_COLUMNS = ("identity", "attribute", "stereotype", "non_stereotype", "unsure")
CSV_FIELDS = ("stereotype", "country", "category", "target_group", "context", "stereotype_sentence", "counter_sentence",
              "votes_stereotype", "votes_non_stereotype", "votes_unsure")
ESPANSTEREO_DATASET = "EspanStereo"


class StereoImportError(ValueError):
    """The file cannot be imported as asked; the message says what is wrong and how to fix it."""


@dataclass
class Parsed:
    candidates: list[dict] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    """(1-based data row, reason) for rows that could not be used."""


@dataclass(frozen=True, slots=True)
class ImportResult:
    format: str
    path: str
    dataset: str
    rows_read: int
    candidates_in_file: int
    candidates_new: int
    items_in_file: int
    items_new: int
    skipped: tuple[tuple[int, str], ...]
    by_country: dict
    kept: int | None
    """Candidates kept under the file's keep rule (None when they await Likert ratings)."""

    def summary(self) -> str:
        lines = [
            f"{self.path}: {self.rows_read} rows read as {self.format} ({self.dataset})",
            f"  candidates: {self.candidates_in_file} in file, {self.candidates_new} newly stored",
            f"  items: {self.items_in_file} in file, {self.items_new} newly stored",
            "  by country: " + ", ".join(f"{k} {n}" for k, n in sorted(self.by_country.items())),
        ]
        if self.kept is not None:
            lines.append(f"  kept under the keep rule: {self.kept} of {self.candidates_in_file}")
        if self.skipped:
            shown = "; ".join(f"row {n}: {why}" for n, why in self.skipped[:5])
            lines.append(f"  skipped rows: {len(self.skipped)} ({shown}{' ...' if len(self.skipped) > 5 else ''})")
        return "\n".join(lines)


# ---------------------------------------------------------------- read


def read_rows(path: str | Path) -> tuple[list[str], list[dict]]:
    """Columns and rows (values as stripped strings) of a CSV, JSON Lines/JSON or Parquet file."""
    p = Path(path)
    if not p.exists():
        raise StereoImportError(f"{p}: file not found")
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(p)
        return list(table.column_names), [_strings(r) for r in table.to_pylist()]
    if suffix in (".jsonl", ".json", ".ndjson"):
        return _read_json(p)
    if suffix in (".csv", ".tsv", ".txt", ""):
        return _read_csv(p)
    raise StereoImportError(f"{p}: unknown file type {suffix!r}; use .csv, .jsonl (JSON Lines) or .parquet")


def _strings(row: dict) -> dict:
    return {str(k): "" if val is None else str(val).strip() for k, val in row.items()}


def _read_csv(p: Path) -> tuple[list[str], list[dict]]:
    text = p.read_text(encoding="utf-8-sig")
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.DictReader(text.splitlines(), dialect=dialect)
    columns = [c.strip() for c in (reader.fieldnames or [])]
    rows = [_strings({k.strip() if k else "": val for k, val in r.items()}) for r in reader]
    return columns, rows


def _read_json(p: Path) -> tuple[list[str], list[dict]]:
    text = p.read_text(encoding="utf-8-sig").strip()
    try:
        records = json.loads(text) if text.startswith("[") else [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise StereoImportError(f"{p}: not valid JSON Lines ({exc}); write one JSON object per line") from exc
    if not all(isinstance(r, dict) for r in records):
        raise StereoImportError(f"{p}: every JSON line must be an object with the column names as keys")
    columns: list[str] = []
    for r in records:
        columns.extend(k for k in r if k not in columns)
    return columns, [_strings(r) for r in records]


def _find(columns: list[str], wanted: tuple[str, ...]) -> dict[str, str | None]:
    """Map each wanted column to the file's column, ignoring case, spaces, '-' and '_'."""
    key = lambda s: re.sub(r"[\s_\-]+", "", s.lower())  # noqa: E731
    present = {key(c): c for c in columns}
    return {w: present.get(key(w)) for w in wanted}


def _require(columns: list[str], wanted: tuple[str, ...], what: str, path: str) -> dict[str, str]:
    found = _find(columns, wanted)
    missing = [w for w, c in found.items() if c is None]
    if missing:
        raise StereoImportError(
            f"{path}: not a {what} file: missing column(s) {', '.join(repr(m) for m in missing)}. "
            f"Found columns: {', '.join(repr(c) for c in columns) or 'none'}."
        )
    return found  # type: ignore[return-value]


# ---------------------------------------------------------------- parse (pure)


def _country(value: str, where: str) -> str:
    from prompts.stereo import load_catalog

    code = load_catalog().country_code(value)
    if code is None:
        known = ", ".join(load_catalog().countries)
        raise StereoImportError(f"{where}: unknown country {value!r}; use one of {known}, or add it to prompts/stereo/countries.toml")
    return code


def _category(value: str) -> str:
    from prompts.stereo import load_catalog
    from prompts.stereo import fold

    key = load_catalog().category_key(value)
    return key or re.sub(r"[^a-z0-9]+", "_", fold(value)).strip("_") or "unspecified"


def _candidate(dataset: str, source: str, country: str, category: str, group: str, text: str, rule: str,
               source_file: str, now: str, **extra) -> dict:
    from prompts.stereo import load_catalog

    norm = normalise(text)
    return {"id": make_id("candidate", dataset, country, category, norm), "country": country, "category": category,
            "target_group": group, "text": text, "text_norm": norm, "source": source, "dataset": dataset,
            "source_file": source_file, "keep_rule": rule, "catalog_version": load_catalog().version,
            "created_at": now, **extra}


def parse_espanstereo(columns: list[str], rows: list[dict], *, path: str, country: str | None = None) -> Parsed:
    found = _require(columns, ESPANSTEREO_COLUMNS, "EspanStereo", path)
    country_col = next((c for c in _find(columns, COUNTRY_COLUMNS).values() if c), None)
    if country is None and country_col is None:
        raise StereoImportError(
            f"{path}: no country column ({' / '.join(COUNTRY_COLUMNS[:2])}) in this EspanStereo file; "
            "pass --country CODE (e.g. --country MX) to say which country it is about."
        )
    fixed = _country(country, "--country") if country else None
    out, now, name = Parsed(), iso(utcnow()), Path(path).name
    seen: dict[str, dict] = {}
    for n, row in enumerate(rows, start=1):
        get = lambda col: clean(row.get(found[col], ""))  # noqa: E731
        code = fixed or _country(row.get(country_col, ""), f"{path} row {n}")
        stereotype, ctx, s1, s2 = get("Stereotype"), get("Context Sentence"), get("Stereotype Sentence"), get("Counter-Stereotype Sentence")
        if not stereotype or not ctx or not s1 or not s2:
            out.skipped.append((n, "empty Stereotype, Context, Stereotype or Counter-Stereotype Sentence"))
            continue
        category = _category(get("Stereotype Category"))
        cand = _candidate(ESPANSTEREO_DATASET, "espanstereo", code, category, get("Target Group"), stereotype,
                          v.RULE_CURATED, name, now, source_row=n,
                          extra_json=json.dumps({"category_label": get("Stereotype Category")}, ensure_ascii=False))
        seen.setdefault(cand["id"], cand)
        out.items.append({
            "id": make_id("item", cand["id"], ctx, s1, s2), "candidate_id": cand["id"], "country": code,
            "category": category, "target_group": cand["target_group"], "stereotype": stereotype, "context": ctx,
            "stereotype_sentence": s1, "counter_sentence": s2, "source": "espanstereo", "dataset": ESPANSTEREO_DATASET,
            "author": f"{ESPANSTEREO_DATASET} ({name})", "status": store.ITEM_APPROVED, "created_at": now, "decided_at": now,
        })
    out.candidates = list(seen.values())
    return out


def seegull_country(path: str) -> str | None:
    """``..._es_in_MX.csv`` -> MX."""
    m = re.search(r"_in_([A-Za-z]{2})\b", Path(path).stem)
    return m.group(1).upper() if m else None


def parse_seegull(columns: list[str], rows: list[dict], *, path: str, country: str | None = None) -> Parsed:
    found = _require(columns, SEEGULL_COLUMNS, "SeeGULL Multilingual", path)
    code = country or seegull_country(path)
    if code is None:
        raise StereoImportError(f"{path}: cannot tell the annotators' country from the file name; pass --country CODE (e.g. MX)")
    code = _country(code, "--country")
    name = Path(path).name
    dataset = f"SeeGULL Multilingual ({Path(path).stem.split('_', 1)[-1]})"
    out, now = Parsed(), iso(utcnow())
    other = [c for c in columns if c not in found.values()]
    for n, row in enumerate(rows, start=1):
        identity, attribute = clean(row.get(found["identity"])), clean(row.get(found["attribute"]))
        try:
            votes = [int(float(row.get(found[k]) or 0)) for k in ("stereotype", "non_stereotype", "unsure")]
        except ValueError:
            out.skipped.append((n, "vote counts are not numbers"))
            continue
        if not identity or not attribute:
            out.skipped.append((n, "empty identity or attribute"))
            continue
        text = candidate_text(identity, attribute)
        cand = _candidate(dataset, "seegull", code, "origin", identity, text, v.RULE_MAJORITY, name, now,
                          source_row=n, identity=identity, attribute=attribute, votes_stereotype=votes[0],
                          votes_non_stereotype=votes[1], votes_unsure=votes[2],
                          extra_json=json.dumps({c: row.get(c, "") for c in other}, ensure_ascii=False))
        cand["id"] = make_id("candidate", dataset, code, n, identity, attribute)  # every row, even a repeated pair
        out.candidates.append(cand)
    return out


def parse_mapping(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``("stereotype=Estereotipo", "country=País")`` -> {field: column}."""
    mapping = {}
    for pair in pairs:
        if "=" not in pair:
            raise StereoImportError(f"--map {pair!r}: write FIELD=COLUMN, e.g. --map stereotype=Estereotipo")
        fld, col = (s.strip() for s in pair.split("=", 1))
        if fld not in CSV_FIELDS:
            raise StereoImportError(f"--map {pair!r}: unknown field {fld!r}; fields are {', '.join(CSV_FIELDS)}")
        mapping[fld] = col
    return mapping


def parse_csv(columns: list[str], rows: list[dict], *, path: str, mapping: dict[str, str], country: str | None = None) -> Parsed:
    cols = {f: mapping.get(f, f) for f in CSV_FIELDS}
    required = ["stereotype"] + ([] if country else ["country"])
    missing = [f"{cols[f]!r} (for {f})" for f in required if cols[f] not in columns]
    if missing:
        raise StereoImportError(
            f"{path}: missing column(s) {', '.join(missing)}. Found columns: {', '.join(repr(c) for c in columns)}. "
            "Map yours with --map FIELD=COLUMN (e.g. --map stereotype=Estereotipo) or pass --country CODE."
        )
    has = {f: cols[f] in columns for f in CSV_FIELDS}
    with_votes = has["votes_stereotype"]
    with_items = has["context"] and has["stereotype_sentence"] and has["counter_sentence"]
    fixed = _country(country, "--country") if country else None
    name = Path(path).name
    dataset = f"csv:{name}"
    out, now = Parsed(), iso(utcnow())
    seen: dict[str, dict] = {}
    for n, row in enumerate(rows, start=1):
        get = lambda f: clean(row.get(cols[f], "")) if has[f] else ""  # noqa: E731
        text = get("stereotype")
        if not text:
            out.skipped.append((n, "empty stereotype"))
            continue
        code = fixed or _country(get("country"), f"{path} row {n}")
        extra = {}
        if with_votes:
            try:
                extra = {k: int(float(get(k) or 0)) for k in ("votes_stereotype", "votes_non_stereotype", "votes_unsure")}
            except ValueError:
                out.skipped.append((n, "vote counts are not numbers"))
                continue
        cand = _candidate(dataset, "csv", code, _category(get("category") or "unspecified"), get("target_group"), text,
                          v.RULE_MAJORITY if with_votes else v.RULE_MEDIAN, name, now, source_row=n, **extra)
        seen.setdefault(cand["id"], cand)
        if with_items and get("context") and get("stereotype_sentence") and get("counter_sentence"):
            ctx, s1, s2 = get("context"), get("stereotype_sentence"), get("counter_sentence")
            out.items.append({
                "id": make_id("item", cand["id"], ctx, s1, s2), "candidate_id": cand["id"], "country": code,
                "category": cand["category"], "target_group": cand["target_group"], "stereotype": text, "context": ctx,
                "stereotype_sentence": s1, "counter_sentence": s2, "source": "csv", "dataset": dataset,
                "author": dataset, "status": store.ITEM_DRAFT, "created_at": now,
            })
    out.candidates = list(seen.values())
    return out


# ---------------------------------------------------------------- save


def import_file(db: Database, path: str | Path, fmt: str, *, country: str | None = None,
                mapping: dict[str, str] | None = None) -> ImportResult:
    if fmt not in FORMATS:
        raise StereoImportError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    columns, rows = read_rows(path)
    p = str(path)
    if fmt == "espanstereo":
        parsed = parse_espanstereo(columns, rows, path=p, country=country)
    elif fmt == "seegull":
        parsed = parse_seegull(columns, rows, path=p, country=country)
    else:
        parsed = parse_csv(columns, rows, path=p, mapping=mapping or {}, country=country)
    new_candidates = store.save_candidates(db, parsed.candidates)
    new_items = store.save_items(db, parsed.items)
    rules = {c["keep_rule"] for c in parsed.candidates}
    kept = None
    if rules and rules <= {v.RULE_MAJORITY, v.RULE_CURATED}:
        kept = sum(1 for c in parsed.candidates
                   if c["keep_rule"] == v.RULE_CURATED
                   or v.majority_keep(c["votes_stereotype"], c["votes_non_stereotype"], c["votes_unsure"]))
    dataset = parsed.candidates[0]["dataset"] if parsed.candidates else fmt
    return ImportResult(
        format=fmt, path=p, dataset=dataset, rows_read=len(rows), candidates_in_file=len(parsed.candidates),
        candidates_new=new_candidates, items_in_file=len(parsed.items), items_new=new_items,
        skipped=tuple(parsed.skipped), by_country=dict(Counter(c["country"] for c in parsed.candidates)), kept=kept,
    )
