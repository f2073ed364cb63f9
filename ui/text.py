"""Untrusted text (feeds, model answers, search input) made safe to show. Pure.

Streamlit already escapes HTML in st.markdown unless told otherwise, and we never tell it
otherwise for such text. What is left is Markdown itself: a news title or a model answer
could carry a link, an image (which the browser would fetch), a heading or a LaTeX block.
Every Markdown punctuation character is backslash-escaped, so the text renders literally.
"""

from __future__ import annotations

import math
import re

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=^\"'@%])")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def plain(value: object) -> str:
    """A printable string: None/NaN become '', control and bidi-override characters are removed."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return _CONTROL.sub("", str(value))


def escape_markdown(value: object) -> str:
    """Text that st.markdown renders exactly as written (line breaks kept, no markup of any kind)."""
    lines = plain(value).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # Leading spaces would turn a line into a code block; they carry no meaning in an answer.
    return "  \n".join(_MARKDOWN_SPECIAL.sub(r"\\\1", line.strip()) for line in lines)


def shorten(value: object, limit: int = 160) -> str:
    text = " ".join(plain(value).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
