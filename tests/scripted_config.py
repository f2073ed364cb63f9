"""The configuration the pipeline, alerts, snapshot and monitor-service tests share: two scripted
deployments, one with a planted religion effect (0.8), on a small grid, so a cycle takes seconds."""

from __future__ import annotations

REQUESTS_PER_ARTICLE = 2 * (2 * 7 + 7 + 3)
"""Per sampled article: 2 deployments x (2 dimensions x 7 identities + 7 placebo + 3 repeats)."""


def scripted_toml(*, feed: str = "sample:1", feed_name: str = "sample", articles: int = 2, a_extra: str = "",
                  b_extra: str = "", permutations: int = 199, bootstrap: int = 200, tail: str = "") -> str:
    """TOML text; ``a_extra``/``b_extra`` are extra lines for each deployment, ``tail`` extra tables at the end."""
    a_extra = f"{a_extra}\n" if a_extra else ""
    b_extra = f"{b_extra}\n" if b_extra else ""
    return f"""
[store]
path = "fw.db"

[[feeds]]
name = "{feed_name}"
url = "{feed}"

[[deployments]]
name = "scripted-a"
provider = "scripted"
model = "scripted"
{a_extra}
[[deployments]]
name = "scripted-b"
provider = "scripted"
model = "scripted"
{b_extra}extra = {{ effects = {{ religion = 0.8 }} }}

[grid]
families = ["impact"]
dimensions = ["religion", "political"]
repeats = 3
articles_per_batch = {articles}
articles_per_feed = {articles}

[stats]
permutations = {permutations}
bootstrap = {bootstrap}

{tail}
"""
