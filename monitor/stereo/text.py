"""Text normalisation and parsing of model answers for the stereotype workflow. Pure."""

from __future__ import annotations

import re
import unicodedata

_BULLET = re.compile(r"^\s*(?:[-*•·–—]+|\(?\d{1,3}[.)\]:-]|\(?[a-zA-Z][.)])\s*")
_TAG = re.compile(r"</?[a-zA-Z][^>]{0,40}>")
_QUOTES = "\"'«»“”‘’`"
_SEPARATORS = (":", " — ", " – ", " - ", " = ", " → ", " -> ")
MAX_CANDIDATE_CHARS = 300


def normalise(text: str) -> str:
    """Lower case, no accents, punctuation as spaces, single spaces: the exact-duplicate key."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(re.sub(r"[^\w]+", " ", plain).split())


def clean(text: str) -> str:
    return " ".join(str(text or "").split()).strip(_QUOTES + " ")


def parse_candidates(raw: str) -> list[tuple[str, str]]:
    """(target group, stereotype) pairs from a list answer, one per line, ``grupo: estereotipo``.

    A line without a separator is kept with an empty group; headings, questions, empty lines
    and lines without a letter are dropped; markdown emphasis, HTML tags and numbering are
    stripped.
    """
    out: list[tuple[str, str]] = []
    for line in (raw or "").splitlines():
        line = _TAG.sub("", line)
        line = _BULLET.sub("", line.replace("**", "").replace("__", "")).strip()
        if not re.search(r"[^\W\d_]", line) or len(line) > MAX_CANDIDATE_CHARS:
            continue
        if line.startswith("¿") or line.endswith("?"):  # a question the model asked itself, not a stereotype
            continue
        group, text = "", line
        for sep in _SEPARATORS:
            if sep in line:
                left, right = line.split(sep, 1)
                if clean(right) and len(clean(left)) <= 80:
                    group, text = clean(left), clean(right)
                break
        if line.endswith(":") and not group:  # a heading such as "Estereotipos comunes:"
            continue
        text = clean(text)
        if text:
            out.append((group, text))
    return out


def candidate_text(group: str, text: str) -> str:
    """The stored form of a candidate: ``grupo: estereotipo`` when a group was given."""
    return f"{group}: {text}" if group else text
