"""Deduplication keys and near-duplicate story grouping. Pure.

Two levels:
- *the same item*: the same guid or the same canonical link, across polls and across feeds
  (BBC "world" and "top stories" carry the same URLs). Such an entry is a duplicate and is
  never stored twice; the article id is a hash of the canonical link.
- *the same story*: different outlets' items about one event ("Quake of magnitude 7.1 hits
  Japan" / "Japan coast struck by 7.1 earthquake"). These are kept as separate articles but
  share a ``story_id``, so the batch sampler takes one article per story.

The story rule (documented in docs/INGEST.md): titles become sets of content words
(accent-folded, stop words removed, plural -s trimmed); two items are the same story when
they were published within STORY_WINDOW of each other, share at least MIN_SHARED title
words, and either the title Jaccard similarity is >= TITLE_JACCARD, or it is >=
TITLE_JACCARD_WITH_SUMMARY and the Jaccard similarity of title+summary words is >=
TEXT_JACCARD.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from monitor.ids import make_id
from monitor.strata import tokens

DEDUP_VERSION = "dedup-1"
STORY_WINDOW = timedelta(days=3)
MIN_SHARED = 2
TITLE_JACCARD = 0.45
TITLE_JACCARD_WITH_SUMMARY = 0.2
TEXT_JACCARD = 0.25
SUMMARY_WORDS = 40

_TRACKING = {
    "fbclid", "gclid", "dclid", "msclkid", "mc_cid", "mc_eid", "cmpid", "cmp", "ocid", "smid", "smtyp", "partner",
    "ref", "ref_src", "rss", "feed", "feedname", "src", "source", "at_medium", "at_campaign", "at_link_id",
    "at_ptr_name", "at_link_origin", "at_bbc_team", "at_format", "at_link_type", "at_custom1", "at_custom2",
    "at_custom3", "at_custom4", "sr_share", "outputtype", "int_source", "int_medium", "int_campaign",
}


def canonical_link(url: str | None) -> str:
    """Comparable form of an article URL: https, lower-case host without www., no default port,
    no fragment, no tracking parameters (utm_*, at_*, fbclid ...), no trailing slash, sorted query."""
    if not url:
        return ""
    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        return url
    host = parts.hostname.lower().removeprefix("www.")
    port = parts.port if parts.port not in (None, 80, 443) else None
    netloc = f"{host}:{port}" if port else host
    query = sorted(
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith("utm_") and k.lower() not in _TRACKING
    )
    path = parts.path.rstrip("/") or "/"
    return urlunsplit(("https", netloc, path, urlencode(query), ""))


def article_id(feed_id: str, guid: str, link: str, title: str, published_key: str) -> str:
    """Same canonical link => same id, whatever feed it came from. Without a link, the guid
    within its feed; without both, title + date within its feed."""
    canon = canonical_link(link)
    if canon:
        return make_id("article", canon)
    if guid:
        return make_id("article", feed_id, "guid", guid)
    return make_id("article", feed_id, "title", title, published_key)


def global_guid(guid: str) -> bool:
    """A guid that names the item worldwide (a URL or URN), so equal guids across feeds are one item.
    Bare numbers or slugs are only unique inside their own feed."""
    g = guid.lower()
    return g.startswith(("http://", "https://", "urn:", "tag:")) and len(g) > 12


# --- stories ---------------------------------------------------------------------------

_STOP = set(
    "a an the of in on at to for from by with and or but as is are was were be been has have had it its this that "
    "these those after before over under into about amid says said say new live watch video how why what who when "
    "will would could can may than more most not no up out off s de la el los las del en y o un una por para con "
    "que se su sus al es da do dos das na no nos em e um uma com por para os as ao der die das und".split()
)


def title_words(text: str) -> frozenset[str]:
    words = set()
    for tok in tokens(text.replace("'s ", " ").replace("’s ", " ")):
        for part in tok.split("-"):
            part = part.removesuffix("'s")
            if part in _STOP or (len(part) < 2 and not part.isdigit()):
                continue
            if len(part) > 3 and part.endswith("s") and not part.endswith("ss"):
                part = part[:-1]
            words.add(part)
    return frozenset(words)


@dataclass(frozen=True, slots=True)
class StoryItem:
    id: str
    title: str
    summary: str
    published_at: datetime
    story_id: str | None = None
    """Known for stored articles; None for the new ones being grouped."""


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def same_story(a: StoryItem, b: StoryItem) -> bool:
    if abs(a.published_at - b.published_at) > STORY_WINDOW:
        return False
    ta, tb = title_words(a.title), title_words(b.title)
    if len(ta & tb) < MIN_SHARED:
        return False
    jt = _jaccard(ta, tb)
    if jt >= TITLE_JACCARD:
        return True
    if jt < TITLE_JACCARD_WITH_SUMMARY:
        return False
    wa = ta | title_words(" ".join(a.summary.split()[:SUMMARY_WORDS]))
    wb = tb | title_words(" ".join(b.summary.split()[:SUMMARY_WORDS]))
    return _jaccard(wa, wb) >= TEXT_JACCARD


def group_stories(new: Sequence[StoryItem], known: Iterable[StoryItem] = ()) -> dict[str, str]:
    """story_id for each new item: that of the first matching known or earlier new item, else its own.
    Known items keep their story_id (first write wins); new items are taken in (published, id) order."""
    pool: list[StoryItem] = []
    index: dict[str, list[int]] = defaultdict(list)

    def add(item: StoryItem) -> None:
        for w in title_words(item.title):
            index[w].append(len(pool))
        pool.append(item)

    for item in sorted(known, key=lambda x: (x.published_at, x.id)):
        if item.story_id:
            add(item)
    result: dict[str, str] = {}
    for item in sorted(new, key=lambda x: (x.published_at, x.id)):
        shared: dict[int, int] = defaultdict(int)
        for w in title_words(item.title):
            for i in index.get(w, ()):
                shared[i] += 1
        story = None
        for i in sorted(k for k, n in shared.items() if n >= MIN_SHARED):
            if same_story(item, pool[i]):
                story = pool[i].story_id
                break
        story = story or make_id("story", item.id)
        result[item.id] = story
        add(StoryItem(item.id, item.title, item.summary, item.published_at, story))
    return result
