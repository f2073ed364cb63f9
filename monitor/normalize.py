"""Turn feed fields into what the store keeps: plain text, UTC dates, a language code. Pure.

Feed text is hostile input: titles and summaries arrive as HTML, as escaped HTML, as
double-escaped HTML, or as plain text that merely looks like markup. Everything stored
is plain text with no tag-like sequence left, so no page can ever render it as markup.
"""

from __future__ import annotations

import calendar
import html
import re
import time
from datetime import UTC, datetime, timedelta, timezone

import nh3

_TAG_LIKE = re.compile(r"<\s*/?\s*[A-Za-z!?][^<>]*>?")
_SPACE = re.compile(r"\s+")
_INVISIBLE = re.compile("[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\u200b-\u200f\u2028\u2029\u2060-\u2064\ufeff"
                        "\U000e0000-\U000e007f]")  # control, zero-width, and Unicode tag characters (hidden text)
_INJECTION = re.compile(
    r"ignore (?:all |any |the )?(?:previous|prior|above|earlier) (?:instructions|prompts?|messages?)"
    r"|disregard (?:all |any |the )?(?:previous|prior|above|earlier)"
    r"|system prompt|developer message|jailbreak"
    r"|\b(?:you are|act as|pretend to be) (?:now )?(?:an? )?(?:ai|assistant|language model|chatbot|llm)\b"
    r"|<\|?(?:im_start|im_end|system|assistant|user)\|?>|\[/?inst\]|###\s*(?:instruction|system)",
    re.IGNORECASE,
)


def plain_text(value: str | None, max_chars: int) -> str:
    """HTML or text -> one line of plain text: tags and script/style bodies removed, entities decoded,
    whitespace collapsed, capped at ``max_chars`` (cut at a word boundary, with an ellipsis)."""
    if not value:
        return ""
    text = value
    # Each round strips one level of markup and decodes one level of escaping; escaped
    # markup (&lt;script&gt;) becomes real markup after decoding, so strip again.
    for _ in range(4):
        stripped = html.unescape(nh3.clean(text, tags=set(), clean_content_tags={"script", "style"}))
        if stripped == text:
            break
        text = stripped
    text = _TAG_LIKE.sub(" ", text)  # whatever survived four rounds is not news text
    text = _INVISIBLE.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    return cap(text, max_chars)


def looks_like_injection(*texts: str | None) -> bool:
    """Instruction-like text aimed at a model (indirect prompt injection). Such articles are
    flagged, not dropped: an injected article would move every model alike and look like a finding."""
    return any(t and _INJECTION.search(t) for t in texts)


def cap(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1]
    if " " in cut[max_chars // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "…"


# --- dates -------------------------------------------------------------------------

def struct_to_utc(value: time.struct_time | tuple | None) -> datetime | None:
    """feedparser's *_parsed tuples are UTC: calendar.timegm, never time.mktime (local time)."""
    if not value:
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(tuple(value)[:9]), UTC)
    except (OverflowError, ValueError, TypeError):
        return None


_MONTHS = {
    # Spanish
    "enero": 1, "ene": 1, "febrero": 2, "feb": 2, "marzo": 3, "mar": 3, "abril": 4, "abr": 4, "mayo": 5, "may": 5,
    "junio": 6, "jun": 6, "julio": 7, "jul": 7, "agosto": 8, "ago": 8, "septiembre": 9, "setiembre": 9, "sep": 9,
    "sept": 9, "set": 9, "octubre": 10, "oct": 10, "noviembre": 11, "nov": 11, "diciembre": 12, "dic": 12,
    # Portuguese (shared abbreviations above: fev differs, as do the long names)
    "janeiro": 1, "jan": 1, "fevereiro": 2, "fev": 2, "março": 3, "marco": 3, "maio": 5, "junho": 6, "julho": 7,
    "setembro": 9, "outubro": 10, "out": 10, "novembro": 11, "dezembro": 12, "dez": 12,
    # English, for mixed strings such as "07 Jun 2017 11:28:10 ART"
    "january": 1, "february": 2, "march": 3, "april": 4, "june": 6, "july": 7, "august": 8, "aug": 8,
    "september": 9, "october": 10, "november": 11, "december": 12, "dec": 12,
}
_ZONES = {  # abbreviations feedparser does not know; only unambiguous ones
    "ART": -3, "BRT": -3, "BRST": -2, "CLT": -4, "CLST": -3, "UYT": -3, "COT": -5, "PET": -5, "MEX": -6,
    "CET": 1, "CEST": 2, "WET": 0, "WEST": 1, "GMT": 0, "UT": 0, "UTC": 0, "Z": 0,
}
_DATE = re.compile(
    r"(?P<day>\d{1,2})\s+(?:de\s+)?(?P<month>[^\W\d_]+)\.?\s+(?:de\s+)?(?P<year>\d{4})"
    r"(?:[\sT,]+(?P<h>\d{1,2}):(?P<m>\d{2})(?::(?P<s>\d{2}))?)?"
    r"(?:\s*(?P<zone>[+-]\d{2}:?\d{2}|[A-Za-z]{1,5}))?",
    re.IGNORECASE,
)


def parse_loose_date(text: str | None) -> datetime | None:
    """Dates feedparser gives up on: Spanish/Portuguese names (``Seg, 24 Set 2018 19:42:40 -0300``,
    ``miércoles, 07 de junio de 2017``) and zone abbreviations such as ``ART``. None if unsure."""
    if not text:
        return None
    m = _DATE.search(text.strip())
    if not m:
        return None
    month = _MONTHS.get(m["month"].lower())
    if month is None:
        return None
    zone = _zone(m["zone"])
    if m["zone"] and zone is None:
        return None
    try:
        local = datetime(int(m["year"]), month, int(m["day"]), int(m["h"] or 0), int(m["m"] or 0), int(m["s"] or 0),
                         tzinfo=zone or UTC)
    except ValueError:
        return None
    return local.astimezone(UTC)


_FEEDPARSER_ZONES = {"UT", "GMT", "Z", "ADT", "AST", "AT", "EDT", "EST", "ET", "CDT", "CST", "CT", "MDT", "MST", "MT",
                     "PDT", "PST", "PT", "A", "N", "M", "Y", "MET", "MEST"}
"""feedparser's RFC 822 zone table; any other name it silently reads as UTC."""


def zone_unknown_to_feedparser(text: str | None) -> bool:
    """True for a date like ``Wed, 07 Jun 2017 11:28:10 ART``, which feedparser would read 3 hours off."""
    if not text:
        return False
    last = text.strip().rsplit(None, 1)[-1].upper()
    return last.isalpha() and last not in _FEEDPARSER_ZONES and _ZONES.get(last, 0) != 0


def _zone(token: str | None) -> timezone | None:
    if not token:
        return None
    if token[0] in "+-":
        digits = token[1:].replace(":", "")
        minutes = int(digits[:2]) * 60 + int(digits[2:])
        return timezone(timedelta(minutes=minutes if token[0] == "+" else -minutes))
    hours = _ZONES.get(token.upper())
    return None if hours is None else timezone(timedelta(hours=hours))


# --- language ------------------------------------------------------------------------

_ISO3 = {"eng": "en", "spa": "es", "esp": "es", "por": "pt", "fra": "fr", "fre": "fr", "deu": "de", "ger": "de",
         "ita": "it", "ara": "ar", "zho": "zh", "chi": "zh"}
MIN_DETECT_CHARS = 40
"""Below this much text langdetect guesses wildly; keep the declared language."""
MIN_DETECT_PROB = 0.90
DETECT_CHARS = 300
"""Enough text for a confident guess; langdetect's cost grows with length."""


def language_code(declared: str | None) -> str | None:
    """'en-GB' -> 'en', 'es_AR' -> 'es', 'spa' (ISO 639-2) -> 'es'; '' or junk -> None."""
    if not declared:
        return None
    head = re.split(r"[-_\s]", declared.strip().lower())[0]
    if len(head) == 2 and head.isalpha():
        return head
    return _ISO3.get(head)


def detect_language(text: str) -> tuple[str, float] | None:
    """(code, probability) from langdetect, seeded so the same text always gives the same answer."""
    if len(text) < MIN_DETECT_CHARS:
        return None
    from langdetect import DetectorFactory, detect_langs
    from langdetect.lang_detect_exception import LangDetectException

    DetectorFactory.seed = 0
    try:
        best = detect_langs(text[:DETECT_CHARS])[0]
    except LangDetectException:
        return None
    return best.lang.split("-")[0], float(best.prob)


def choose_language(declared: str | None, text: str) -> tuple[str | None, bool]:
    """(language to store, mismatch flag). A confident detection beats the declaration."""
    code = language_code(declared)
    detected = detect_language(text)
    if detected is None or detected[1] < MIN_DETECT_PROB:
        return code, False
    return detected[0], code is not None and code != detected[0]
