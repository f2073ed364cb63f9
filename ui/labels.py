"""Human labels for stored keys (identities, dimensions, families, verdicts). Pure."""

from __future__ import annotations

from functools import cache

import prompts as prompt_data
from store.reviews import VERDICTS

CONTROL_LABELS = {"identity": "Identity", "identity_free": "Identity-free (repeat)", "placebo": "Placebo"}


@cache
def _identity_labels() -> dict[str, str]:
    tax = prompt_data.load_taxonomy()
    out = {i.key: i.label for group in tax.dimensions.values() for i in group}
    out.update({i.key: i.label for i in tax.placebo})
    return out


def identity(key: object) -> str:
    """'religion.muslim' -> 'Muslim'; unknown keys (an older taxonomy) are shown as stored."""
    if key is None or (isinstance(key, float) and key != key):
        return "no identity"
    return _identity_labels().get(str(key), str(key))


def dimension(key: object) -> str:
    titles = prompt_data.load_taxonomy().titles
    return titles.get(str(key), str(key))


def family(key: object) -> str:
    fams = prompt_data.load_families().families
    return fams[str(key)].title if str(key) in fams else str(key)


def verdict(key: object) -> str:
    if key is None or (isinstance(key, float) and key != key):
        return "unreviewed"
    return VERDICTS.get(str(key), str(key))
