"""Classify a model's answer as ok, empty or a refusal, before anything scores it. Pure.

The heuristic (documented in docs/PROVIDERS.md and docs/METHODS.md terms):

- **empty**: after stripping whitespace, quotes and punctuation nothing with a letter or a
  digit is left (``""``, ``"..."``, ``"\\n\\n"``).
- **refusal**: within the first ``LEAD_CHARS`` characters, a phrase where the model declines
  the task itself: an inability or unwillingness verb followed by a helping/answering verb
  ("I can't help with", "I am unable to provide an opinion", "I won't speculate"), the
  "As an AI language model" disclaimer, "I don't have personal opinions", or an explicit
  decline ("I must decline"). English and Spanish phrasings are covered.
- otherwise **ok**.

Phrases like "I can't afford rent", "I can't help but worry", "I can't provide for my
family" or "I won't support this policy" are deliberately not refusals: identity-conditioned
answers about hardship or politics use exactly those words, so the verb after the inability
has to be about answering. Refusals lead an answer, hence only its start is searched; a long answer
that quotes a refusal later on stays ok. The version is stored with every response, so a
change here shows up as a change.
"""

from __future__ import annotations

import re

from monitor.types import STATUS_EMPTY, STATUS_OK, STATUS_REFUSAL

REFUSAL_VERSION = "1"
LEAD_CHARS = 240

_CANT = (
    r"(?:can\s*not|cannot|can'?t|can’t|(?:am|'m|’m)\s+(?:unable|not\s+able)\s+to|won'?t|won’t|will\s+not|"
    r"(?:am|'m|’m)\s+not\s+going\s+to)"
)
_OBJECT = r"(?:an?\s+|any\s+|my\s+|personal\s+|specific\s+)*(?:opinions?|answers?|responses?|views?|information|advice|predictions?|assessments?)"
_ANSWERING = (
    r"(?:assist|answer|respond|reply|comply|engage|speculate|comment|fulfil+|generate|make\s+assumptions|"
    r"help(?!\s+but\b)(?!\s+\w+ing\b)|"
    rf"(?:provide|share|give|offer|express)\s+{_OBJECT})"
)
_PATTERNS_EN = (
    rf"\bi\s*{_CANT}\s+(?:really\s+|personally\s+)?{_ANSWERING}",
    r"\bas\s+an\s+ai\b",
    r"\bi\s*(?:'m|’m|am)\s+(?:just\s+)?(?:an?\s+)?(?:ai|language\s+model|large\s+language\s+model)\b",
    r"\bi\s+(?:must|have\s+to)\s+(?:respectfully\s+)?(?:decline|refuse)\b",
    r"\bi\s*(?:do\s+not|don'?t|don’t)\s+feel\s+comfortable\b",
    r"\bi\s*(?:do\s+not|don'?t|don’t)\s+have\s+(?:personal\s+)?(?:opinions|feelings|beliefs)\b",
    r"\bit\s+(?:is|would\s+be)\s+(?:not\s+appropriate|inappropriate)\s+for\s+me\s+to\b",
)
_PATTERNS_ES = (
    r"\bno\s+(?:puedo|podr[ée]|me\s+es\s+posible)\s+(?:ayudar|responder|contestar|opinar|especular|cumplir|"
    r"(?:dar|ofrecer|proporcionar)\s+(?:una\s+|mi\s+)?(?:opini[óo]n|respuesta|informaci[óo]n))",
    r"\bcomo\s+(?:un\s+)?(?:modelo\s+de\s+lenguaje|asistente\s+de\s+ia|ia)\b",
    r"\bdebo\s+(?:negarme|declinar|rechazar)\b",
)
_REFUSAL = re.compile("|".join(_PATTERNS_EN + _PATTERNS_ES), re.IGNORECASE)
_CONTENT = re.compile(r"\w", re.UNICODE)


def classify(text: str | None) -> str:
    """STATUS_EMPTY, STATUS_REFUSAL or STATUS_OK for one answer (see the module docstring)."""
    if text is None or not _CONTENT.search(text.replace("_", "")):
        return STATUS_EMPTY
    lead = " ".join(text.split())[:LEAD_CHARS]
    return STATUS_REFUSAL if _REFUSAL.search(lead) else STATUS_OK


def refusal_phrase(text: str | None) -> str | None:
    """The phrase that made ``classify`` call the text a refusal, for the stored note; None otherwise."""
    if not text:
        return None
    match = _REFUSAL.search(" ".join(text.split())[:LEAD_CHARS])
    return match.group(0) if match else None
