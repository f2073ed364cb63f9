"""Feeds in two steps: ``fetch`` (the only network/file access, every limit enforced) and
``parse`` (pure: bytes -> normalised items, with reasons for what was dropped).

feedparser never fetches: it has no timeout (kurtmckee/feedparser #76, #263), so a hung
server would block the monitor forever. We fetch with httpx, then hand it the bytes.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

from monitor.config import SAMPLE_NEWS_DIR, ConfigError, FetchConfig
from monitor.dedup import article_id, canonical_link
from monitor.ids import iso, utcnow
from monitor.normalize import (
    cap,
    choose_language,
    language_code,
    looks_like_injection,
    parse_loose_date,
    plain_text,
    struct_to_utc,
    zone_unknown_to_feedparser,
)
from monitor.strata import classify

OK = "ok"
UNCHANGED = "unchanged"
FAILED = "failed"
FUTURE_TOLERANCE = timedelta(days=1)
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True, slots=True)
class FetchResult:
    url: str
    """As configured (``sample:1``, a path, a URL)."""
    final_url: str
    """After redirects; the base for relative links."""
    status: str
    """OK (content holds the body), UNCHANGED (HTTP 304) or FAILED (error says why)."""
    fetched_at: datetime
    http_status: int | None = None
    content: bytes | None = None
    content_type: str = ""
    etag: str | None = None
    last_modified: str | None = None
    error: str | None = None
    elapsed_s: float = 0.0

    @property
    def content_hash(self) -> str | None:
        return hashlib.sha256(self.content).hexdigest() if self.content is not None else None


def resolve_source(url: str) -> str | Path:
    """The URL to GET, or the local file to read: ``sample:N`` -> monitor/sample_news/batch-N.xml,
    ``file://...`` and plain paths -> Path. A malformed ``sample:`` is a configuration error."""
    if url.startswith("sample:"):
        n = url.removeprefix("sample:")
        if not n.isdigit():
            raise ConfigError(f"feed url {url!r}: write sample:N with N a number, e.g. sample:1")
        return SAMPLE_NEWS_DIR / f"batch-{int(n)}.xml"
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("http", "https"):
        return url
    if scheme == "file":
        return Path(unquote(urlsplit(url).path))
    if scheme and len(scheme) > 1:  # one letter is a Windows drive, not a scheme
        raise ConfigError(f"feed url {url!r}: scheme {scheme!r} is not supported; use http(s)://, file://, a path or sample:N")
    return Path(url).expanduser()


def fetch(url: str, cfg: FetchConfig, *, etag: str | None = None, last_modified: str | None = None,
          client=None) -> FetchResult:
    """Fetch one feed. Never raises for a per-feed problem: failures come back as FAILED with the reason."""
    source = resolve_source(url)
    start = time.monotonic()
    fetched_at = utcnow()
    if isinstance(source, Path):
        result = _read_file(url, source, cfg, fetched_at)
    else:
        result = _get(url, source, cfg, etag, last_modified, client, fetched_at, start)
    return _with_elapsed(result, time.monotonic() - start)


def _with_elapsed(r: FetchResult, elapsed: float) -> FetchResult:
    return FetchResult(r.url, r.final_url, r.status, r.fetched_at, r.http_status, r.content, r.content_type,
                       r.etag, r.last_modified, r.error, round(elapsed, 3))


def _failed(url: str, final: str, fetched_at: datetime, error: str, http_status: int | None = None) -> FetchResult:
    return FetchResult(url, final, FAILED, fetched_at, http_status=http_status, error=error)


def _read_file(url: str, path: Path, cfg: FetchConfig, fetched_at: datetime) -> FetchResult:
    try:
        with path.open("rb") as fh:
            content = fh.read(cfg.max_bytes + 1)
    except OSError as exc:
        return _failed(url, str(path), fetched_at, f"cannot read file: {exc.strerror or exc} ({path})")
    if len(content) > cfg.max_bytes:
        return _failed(url, str(path), fetched_at, f"over size cap: file larger than {cfg.max_bytes} bytes")
    return FetchResult(url, path.resolve().as_uri(), OK, fetched_at, content=content)


def _get(url, target, cfg, etag, last_modified, client, fetched_at, start) -> FetchResult:
    import httpx

    headers = {"User-Agent": cfg.user_agent, "Accept": "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.8, */*;q=0.1"}
    if etag:
        headers["If-None-Match"] = etag
    if last_modified:
        headers["If-Modified-Since"] = last_modified
    timeout = httpx.Timeout(cfg.read_timeout_s, connect=cfg.connect_timeout_s, pool=cfg.connect_timeout_s)
    own = client is None
    if own:
        client = httpx.Client(timeout=timeout, follow_redirects=False, max_redirects=cfg.max_redirects)
    deadline = start + cfg.total_timeout_s
    chain = [target]
    current = target
    try:
        for _ in range(cfg.max_redirects + 1):
            with client.stream("GET", current, headers=headers, timeout=timeout, follow_redirects=False) as resp:
                if resp.status_code in REDIRECTS and resp.headers.get("location"):
                    nxt = urljoin(current, resp.headers.get("location", ""))
                    if urlsplit(nxt).scheme not in ("http", "https"):
                        return _failed(url, current, fetched_at, f"redirect to a non-HTTP location {nxt[:200]!r}", resp.status_code)
                    if nxt in chain:
                        loop = " -> ".join(chain[chain.index(nxt):] + [nxt])
                        return _failed(url, current, fetched_at, f"redirect loop: {loop[:300]}", resp.status_code)
                    chain.append(nxt)
                    current = nxt
                    continue
                return _read_response(url, current, resp, cfg, fetched_at, deadline)
        return _failed(url, current, fetched_at, f"too many redirects (more than {cfg.max_redirects})")
    except httpx.ConnectTimeout:
        return _failed(url, current, fetched_at, f"timeout: no connection within {cfg.connect_timeout_s:g} s")
    except httpx.ReadTimeout:
        return _failed(url, current, fetched_at, f"timeout: server sent nothing for {cfg.read_timeout_s:g} s")
    except httpx.TimeoutException as exc:
        return _failed(url, current, fetched_at, f"timeout: {type(exc).__name__}")
    except httpx.ConnectError as exc:
        return _failed(url, current, fetched_at, _connect_reason(exc))
    except httpx.HTTPError as exc:  # protocol errors, decoding errors, bad URLs
        return _failed(url, current, fetched_at, f"HTTP error: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        if own:
            client.close()


def _connect_reason(exc: Exception) -> str:
    text = str(exc)
    if "refused" in text.lower():
        return "connection refused"
    if "name or service not known" in text.lower() or "nodename nor servname" in text.lower() or "getaddrinfo" in text.lower():
        return f"DNS lookup failed (offline?): {text[:160]}"
    return f"connection failed: {text[:200]}"


def _read_response(url, final, resp, cfg: FetchConfig, fetched_at, deadline) -> FetchResult:
    code = resp.status_code
    if code == 304:
        return FetchResult(url, final, UNCHANGED, fetched_at, http_status=code,
                           etag=resp.headers.get("etag"), last_modified=resp.headers.get("last-modified"))
    if code >= 400 or code < 200:
        return _failed(url, final, fetched_at, f"HTTP {code} {resp.reason_phrase}".strip(), code)
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > cfg.max_bytes:
        return _failed(url, final, fetched_at, f"over size cap: server announced {int(declared)} bytes > {cfg.max_bytes}", code)
    body = bytearray()
    # Decoded bytes are counted, so a small gzip that inflates to gigabytes is stopped too.
    for chunk in resp.iter_bytes():
        body += chunk
        if len(body) > cfg.max_bytes:
            return _failed(url, final, fetched_at, f"over size cap: more than {cfg.max_bytes} bytes", code)
        if time.monotonic() > deadline:
            return _failed(url, final, fetched_at, f"too slow: response not complete after {cfg.total_timeout_s:g} s", code)
    return FetchResult(url, final, OK, fetched_at, http_status=code, content=bytes(body),
                       content_type=resp.headers.get("content-type", ""),
                       etag=resp.headers.get("etag"), last_modified=resp.headers.get("last-modified"))


# --- parse (pure) ----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FeedItem:
    """One usable entry, normalised; becomes one ``articles`` row unless it is a duplicate."""

    id: str
    feed_id: str
    guid: str
    link: str
    canonical_link: str
    title: str
    summary: str
    published_at: datetime
    fetched_at: datetime
    date_missing: bool
    language: str | None
    language_declared: str | None
    stratum: str
    stratum_topics: tuple[str, ...]
    stratum_terms: tuple[str, ...]
    stratum_version: str
    flags: tuple[str, ...]
    """Marks on a kept item: date_missing, date_parsed_loosely, date_zone_corrected, date_in_future,
    language_mismatch, title_from_summary, unsafe_link_removed, text_truncated, injection_like."""


@dataclass(frozen=True, slots=True)
class ParsedFeed:
    ok: bool
    """A feed was recognised (possibly malformed, possibly empty)."""
    error: str | None
    """Why not, when not ok."""
    warning: str | None
    """Kept going despite: bozo exception, empty feed."""
    title: str
    language: str | None
    entries: int
    """Entries feedparser found, before dropping."""
    items: tuple[FeedItem, ...]
    dropped: tuple[tuple[str, str], ...]
    """(reason, detail) for every entry not kept."""


_ENTITY_DECL = (b"<!entity", "<!entity".encode("utf-16-le"), "<!entity".encode("utf-16-be"))
_ROOT = re.compile(rb"<(rss|feed|rdf:rdf|channel|item|entry)[\s>]", re.IGNORECASE)
_HTML_PAGE = re.compile(rb"<\s*(!doctype\s+html|html[\s>]|head[\s>]|body[\s>])", re.IGNORECASE)


def parse(content: bytes, *, feed_id: str, fetched_at: datetime, content_type: str = "", base_url: str = "",
          default_language: str | None = None, title_max: int = 300, summary_max: int = 1200) -> ParsedFeed:
    """Bytes -> ParsedFeed. Never raises for bad input; the result says what went wrong."""
    import feedparser

    if not content.strip():
        return _not_a_feed("empty response (0 bytes of content)")
    if any(marker in _prolog(content).lower() for marker in _ENTITY_DECL):
        # Billion laughs / quadratic blowup need entity declarations; real feeds do not declare any.
        return _not_a_feed("refused: the document declares XML entities (<!ENTITY>), the shape of an entity-expansion bomb")
    headers = {"content-type": content_type or "application/xml", "content-location": base_url}
    try:
        d = feedparser.parse(content, response_headers=headers, sanitize_html=True, resolve_relative_uris=True)
    except Exception as exc:  # noqa: BLE001 - feedparser is third-party; bad bytes must stay a per-feed error
        return _not_a_feed(f"parser crashed: {type(exc).__name__}: {str(exc)[:200]}")
    bozo = _bozo_text(d)
    if not d.entries:
        if _HTML_PAGE.search(content[:4096]) or (not d.version and "html" in content_type.lower()):
            return _not_a_feed("not a feed: got an HTML page" + (f" ({content_type})" if content_type else ""))
        if not d.version:
            return _not_a_feed(f"not a feed: {bozo or 'no RSS or Atom root element'}")
        if bozo:
            return _not_a_feed(f"no items: {bozo}")
    declared = language_code(d.feed.get("language")) or language_code(default_language)
    items, dropped, seen = [], [], set()
    for entry in d.entries:
        item = _item(entry, feed_id, fetched_at, declared, title_max, summary_max)
        if isinstance(item, tuple):
            dropped.append(item)
        elif item.id in seen:
            dropped.append(("duplicate_in_feed", item.title[:120]))
        else:
            seen.add(item.id)
            items.append(item)
    if bozo and not items:
        return _not_a_feed(f"no usable items: {bozo}")
    warning = bozo if d.entries else "empty feed: a valid feed with no items"
    return ParsedFeed(True, None, warning, plain_text(d.feed.get("title"), 200), declared, len(d.entries),
                      tuple(items), tuple(dropped))


def _prolog(content: bytes) -> bytes:
    """What precedes the root element: the only place a DTD can declare entities. Article text
    that merely mentions <!ENTITY (a CDATA tutorial) comes later and is not refused."""
    m = _ROOT.search(content)
    return content[: m.start()] if m else content


def _not_a_feed(reason: str) -> ParsedFeed:
    return ParsedFeed(False, reason, None, "", None, 0, (), ())


def _bozo_text(d) -> str | None:
    if not d.get("bozo"):
        return None
    exc = d.get("bozo_exception")
    return f"malformed feed ({type(exc).__name__}: {str(exc)[:200]})" if exc else "malformed feed"


def _item(entry, feed_id, fetched_at, declared, title_max, summary_max) -> FeedItem | tuple[str, str]:
    flags = []
    raw_summary = entry.get("summary") or ""
    if not raw_summary and entry.get("content"):
        raw_summary = entry["content"][0].get("value", "")
    title = plain_text(entry.get("title"), title_max)
    summary = plain_text(raw_summary, summary_max)
    if not title and not summary:
        return ("no_title_or_summary", str(entry.get("link") or entry.get("id") or "")[:200])
    if not title:
        title = cap(summary, min(title_max, 160))
        flags.append("title_from_summary")
    if summary.endswith("…") or title.endswith("…"):
        flags.append("text_truncated")
    link = (entry.get("link") or "").strip()
    if link and urlsplit(link).scheme.lower() not in ("http", "https"):
        link = ""
        flags.append("unsafe_link_removed")
    guid = str(entry.get("id") or "").strip()[:500]
    published, how = _published(entry, fetched_at)
    if how:
        flags.append(how)
    if looks_like_injection(entry.get("title"), raw_summary, title, summary):
        flags.append("injection_like")
    language, mismatch = choose_language(declared, f"{title}. {summary}")
    if mismatch:
        flags.append("language_mismatch")
    decision = classify(title, summary)
    return FeedItem(
        id=article_id(feed_id, guid, link, title, iso(published) if how != "date_missing" else ""),
        feed_id=feed_id, guid=guid, link=link, canonical_link=canonical_link(link), title=title, summary=summary,
        published_at=published, fetched_at=fetched_at, date_missing=how == "date_missing",
        language=language, language_declared=declared, stratum=decision.stratum,
        stratum_topics=decision.identity_topics or decision.neutral_topics, stratum_terms=decision.matched,
        stratum_version=decision.version, flags=tuple(flags),
    )


def _published(entry, fetched_at: datetime) -> tuple[datetime, str | None]:
    """(published UTC, flag). Entries without a usable date keep fetched_at and are marked."""
    when = struct_to_utc(entry.get("published_parsed")) or struct_to_utc(entry.get("updated_parsed"))
    how = None
    raw = entry.get("published") or entry.get("updated")
    if when is not None and zone_unknown_to_feedparser(raw):
        when = parse_loose_date(raw)
        how = "date_zone_corrected" if when else None
    if when is None:
        when = parse_loose_date(entry.get("published")) or parse_loose_date(entry.get("updated"))
        how = "date_parsed_loosely" if when else None
    if when is None:
        return fetched_at, "date_missing"
    if when > fetched_at + FUTURE_TOLERANCE:
        return fetched_at, "date_in_future"
    return when, how
