"""Ingest cycles: batches, idempotence, resume, story grouping, the batch sampler, failure
modes recorded per feed (against a real HTTP server on 127.0.0.1), and `framewatch ingest`."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from monitor import config
from monitor import ingest as ingest_mod
from monitor.config import ConfigError, FeedConfig, FetchConfig
from monitor.ids import utcnow
from monitor.ingest import batch_id_for, run_ingest
from monitor.sampling import Candidate, choose
from monitor.strata import IDENTITY_NEUTRAL, IDENTITY_RELEVANT
from monitor.testing.feed_server import FeedServer, Route
from monitor.testing.processes import free_port
from store import feeds as store

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "feeds"
FAST = FetchConfig(connect_timeout_s=1.0, read_timeout_s=0.5, total_timeout_s=1.5, max_bytes=100_000, max_redirects=3)


def make_cfg(db_path: Path, feeds=(), **grid) -> config.Config:
    cfg = config.load(None, db_path=db_path)
    grid = {"articles_per_batch": 10, "articles_per_feed": 10, "balance_strata": True, **grid}
    return replace(cfg, feeds=tuple(feeds), grid=replace(cfg.grid, **grid), fetch=FAST)


def fixture_feed(name: str, file: str) -> FeedConfig:
    return FeedConfig(name, str(FIXTURES / file))


def snapshot(db) -> dict:
    return {t: [dict(r) for r in db.query(f"select * from {t} order by 1")] for t in ("batches", "feed_polls", "articles", "feeds")}


# --- batches and idempotence -----------------------------------------------------------

def test_three_sample_batches(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", articles_per_batch=2, articles_per_feed=2)
    reports = [run_ingest(writer_db, cfg, feeds=[FeedConfig("sample", f"sample:{n}")], label=f"week-{n}") for n in (1, 2, 3)]
    assert [r.new_articles for r in reports] == [6, 6, 6]
    assert [r.sampled_articles for r in reports] == [2, 2, 2]
    assert all(r.feeds[0].status == "ok" and r.feeds[0].fetched == 6 for r in reports)
    assert reports[0].batch_id == batch_id_for("week-1")
    batches = list(writer_db.query("select * from batches order by opened_at"))
    assert [b["status"] for b in batches] == ["closed"] * 3 and [b["articles"] for b in batches] == [6, 6, 6]
    for r in reports:  # balance: one identity-relevant and one identity-neutral article per batch
        strata = [row["stratum"] for row in writer_db.query(
            "select stratum from articles where batch_id = ? and sampled = 1", [r.batch_id])]
        assert sorted(strata) == [IDENTITY_NEUTRAL, IDENTITY_RELEVANT]
    for row in writer_db.query("select * from articles"):
        assert row["stratum_version"] == "lexicon-1" and json.loads(row["flags"]) == []
        assert row["language"] == "en" and row["language_declared"] == "en" and row["story_id"]
        assert (row["sample_reason"] is not None) == (row["sampled"] == 1)


def test_same_label_again_changes_nothing(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[fixture_feed("a", "outlet-a.xml"), FeedConfig("sample", "sample:1")])
    first = run_ingest(writer_db, cfg, label="cycle-1")
    before = snapshot(writer_db)
    again = run_ingest(writer_db, cfg, label="cycle-1")
    assert snapshot(writer_db) == before
    assert again.resumed and (again.batch_id, again.feeds, again.new_articles) == (first.batch_id, first.feeds, first.new_articles)


def test_ingesting_the_same_feeds_twice_adds_nothing(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[fixture_feed("a", "outlet-a.xml"), fixture_feed("b", "outlet-b.xml")])
    first = run_ingest(writer_db, cfg, label="one")
    second = run_ingest(writer_db, cfg, label="two")
    assert first.new_articles == 8 and second.new_articles == 0 and second.sampled_articles == 0
    assert [f.status for f in second.feeds] == ["unchanged", "unchanged"]  # same bytes as the last poll
    assert writer_db["articles"].count == 8
    closed = store.get_batch(writer_db, second.batch_id)
    assert (closed["status"], closed["feeds_unchanged"], closed["articles"]) == ("closed", 2, 0)


def test_refetched_items_are_duplicates_not_new(writer_db, tmp_path):
    """The bytes change (a new item, a new build date) but the old items are not stored again."""
    a = (FIXTURES / "outlet-a.xml").read_text()
    grown = a.replace("<item>", """<item><title>Fresh item added later</title>
        <link>https://outlet-a.example.com/world/fresh</link><pubDate>Wed, 11 Nov 2026 06:00:00 GMT</pubDate></item><item>""", 1)
    path = tmp_path / "feed.xml"
    cfg = make_cfg(tmp_path / "x.db", feeds=[FeedConfig("a", str(path))])
    path.write_text(a)
    run_ingest(writer_db, cfg, label="one")
    path.write_text(grown)
    report = run_ingest(writer_db, cfg, label="two")
    feed = report.feeds[0]
    assert (feed.status, feed.fetched, feed.new, feed.duplicate) == ("ok", 5, 1, 4)
    assert report.new_articles == 1
    first_batch = batch_id_for("one")
    assert writer_db["articles"].count_where("batch_id = ?", [first_batch]) == 4  # first write wins


def test_two_outlets_with_the_same_stories_are_grouped(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[fixture_feed("a", "outlet-a.xml"), fixture_feed("b", "outlet-b.xml")])
    report = run_ingest(writer_db, cfg, label="one")
    a, b = report.feeds
    assert (a.new, a.duplicate) == (4, 0)
    assert (b.fetched, b.new, b.duplicate) == (5, 4, 1)  # the syndicated goalkeeper item has A's link
    stories: dict[str, set[str]] = {}
    for row in writer_db.query("select title, story_id from articles"):
        stories.setdefault(row["story_id"], set()).add(row["title"].split()[0])
    grouped = sorted(sorted(v) for v in stories.values() if len(v) > 1)
    assert grouped == [["Central", "Ostria"], ["Magnitude", "Tsunami"], ["Norland", "Parliament"]]
    assert len(stories) == 5
    sampled = list(writer_db.query("select story_id from articles where sampled = 1"))
    assert len(sampled) == 5 and len({r["story_id"] for r in sampled}) == 5  # one article per story


def test_sampler_caps_from_config(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[fixture_feed("a", "outlet-a.xml"), fixture_feed("b", "outlet-b.xml")],
                   articles_per_batch=3, articles_per_feed=2)
    report = run_ingest(writer_db, cfg, label="one")
    rows = list(writer_db.query("select feed_id, stratum, sample_reason from articles where sampled = 1"))
    assert report.sampled_articles == len(rows) == 3
    assert max(sum(r["feed_id"] == f for r in rows) for f in {r["feed_id"] for r in rows}) <= 2
    assert {r["stratum"] for r in rows} == {IDENTITY_RELEVANT, IDENTITY_NEUTRAL}
    assert all(r["sample_reason"].startswith("sampler-1: pick") for r in rows)


def test_budget_caps_articles(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[FeedConfig("sample", "sample:1")])
    cfg = replace(cfg, budget=replace(cfg.budget, max_articles_per_cycle=1))
    assert run_ingest(writer_db, cfg, label="one").sampled_articles == 1


def test_closed_batches_are_immutable(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[FeedConfig("sample", "sample:1")])
    report = run_ingest(writer_db, cfg, label="one")
    with pytest.raises(store.BatchClosedError, match="immutable"):
        store.mark_sampled(writer_db, report.batch_id, {})
    with pytest.raises(store.BatchClosedError):
        store.save_poll(writer_db, store.PollRecord(report.batch_id, "f", "f", "u", utcnow(), "ok"))


def test_a_crashed_cycle_resumes_without_polling_twice(writer_db, tmp_path, monkeypatch):
    cfg = make_cfg(tmp_path / "x.db", feeds=[fixture_feed("a", "outlet-a.xml"), FeedConfig("sample", "sample:2")])
    calls = []
    real_fetch = ingest_mod.feed_mod.fetch

    def counting_fetch(url, *a, **kw):
        calls.append(url)
        return real_fetch(url, *a, **kw)

    monkeypatch.setattr(ingest_mod.feed_mod, "fetch", counting_fetch)
    monkeypatch.setattr(ingest_mod, "_sample", lambda *a: (_ for _ in ()).throw(RuntimeError("power cut")))
    with pytest.raises(RuntimeError):
        run_ingest(writer_db, cfg, label="one")
    assert store.get_batch(writer_db, batch_id_for("one"))["status"] == "open"
    monkeypatch.undo()
    monkeypatch.setattr(ingest_mod.feed_mod, "fetch", counting_fetch)
    calls.clear()
    # Now a third feed is configured: only it is polled; the two saved polls are kept.
    cfg = replace(cfg, feeds=cfg.feeds + (fixture_feed("b", "outlet-b.xml"),))
    report = run_ingest(writer_db, cfg, label="one")
    assert calls == [str(FIXTURES / "outlet-b.xml")]
    assert report.resumed and [f.name for f in report.feeds] == ["a", "sample", "b"]
    assert store.get_batch(writer_db, report.batch_id)["status"] == "closed"
    assert report.new_articles == 4 + 6 + 4 and report.sampled_articles > 0


def test_an_unexpected_fetch_error_is_recorded_for_that_feed_only(writer_db, tmp_path, monkeypatch):
    real_fetch = ingest_mod.feed_mod.fetch

    def flaky(url, *a, **kw):
        if url == "sample:2":
            raise MemoryError("simulated")
        return real_fetch(url, *a, **kw)

    monkeypatch.setattr(ingest_mod.feed_mod, "fetch", flaky)
    cfg = make_cfg(tmp_path / "x.db", feeds=[FeedConfig("one", "sample:1"), FeedConfig("two", "sample:2")])
    report = run_ingest(writer_db, cfg, label="x")
    assert [(f.name, f.status) for f in report.feeds] == [("one", "ok"), ("two", "failed")]
    assert report.feeds[1].failed_reason == "unexpected error: MemoryError: simulated"


def test_misconfigured_feed_url_fails_before_opening_a_batch(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[FeedConfig("bad", "sample:first")])
    with pytest.raises(ConfigError, match="'bad'.*sample:N"):
        run_ingest(writer_db, cfg, label="one")
    assert writer_db["batches"].count == 0


def test_disabled_feeds_are_skipped(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", feeds=[FeedConfig("sample", "sample:1"), FeedConfig("off", "sample:2", enabled=False)])
    assert [f.name for f in run_ingest(writer_db, cfg, label="one").feeds] == ["sample"]


# --- sampler (pure) --------------------------------------------------------------------

def _cand(i, feed, stratum, story=None, hour=0, seen=False):
    return Candidate(f"a{i}", feed, story or f"s{i}", stratum, f"2026-11-10T{hour:02d}:00:00+00:00", seen)


def test_sampler_rules():
    cands = [_cand(1, "f1", IDENTITY_RELEVANT, hour=9), _cand(2, "f1", IDENTITY_RELEVANT, hour=8),
             _cand(3, "f1", IDENTITY_RELEVANT, hour=7), _cand(4, "f2", IDENTITY_RELEVANT, story="s1", hour=10),
             _cand(5, "f2", IDENTITY_NEUTRAL, hour=6), _cand(6, "f3", IDENTITY_NEUTRAL, hour=5)]
    chosen = choose(cands, per_batch=4, per_feed=2, balance=True)
    assert list(chosen) == ["a4", "a5", "a2", "a6"]  # a4 (newest) takes story s1, so a1 is skipped
    unbalanced = choose(cands, per_batch=3, per_feed=1, balance=False)
    assert len(unbalanced) == 3 and len({c.feed_id for c in cands if c.id in unbalanced}) == 3
    assert choose(cands, per_batch=0, per_feed=2, balance=True) == {}
    assert list(choose(cands, per_batch=1, per_feed=2, balance=True, first=IDENTITY_NEUTRAL)) == ["a5"]


def test_sampler_prefers_stories_not_seen_before():
    cands = [_cand(1, "f1", IDENTITY_RELEVANT, hour=9, seen=True), _cand(2, "f1", IDENTITY_RELEVANT, hour=1)]
    assert list(choose(cands, per_batch=1, per_feed=2, balance=True)) == ["a2"]
    assert list(choose(cands[:1], per_batch=1, per_feed=2, balance=True)) == ["a1"]


def test_sampler_takes_injection_like_articles_last():
    flagged = Candidate("a1", "f1", "s1", IDENTITY_RELEVANT, "2026-11-10T09:00:00+00:00", injection_like=True)
    plain = _cand(2, "f2", IDENTITY_RELEVANT, hour=1)
    assert list(choose([flagged, plain], per_batch=1, per_feed=2, balance=True)) == ["a2"]
    picked = choose([flagged, plain], per_batch=2, per_feed=2, balance=True)
    assert list(picked) == ["a2", "a1"] and "injection_like" in picked["a1"]


def test_sampler_alternates_the_first_stratum_across_batches(writer_db, tmp_path):
    cfg = make_cfg(tmp_path / "x.db", articles_per_batch=1)
    strata = []
    for n in (1, 2, 3):
        r = run_ingest(writer_db, cfg, feeds=[FeedConfig("sample", f"sample:{n}")], label=f"w{n}")
        strata += [row["stratum"] for row in writer_db.query("select stratum from articles where sampled = 1 and batch_id = ?", [r.batch_id])]
    assert strata == [IDENTITY_RELEVANT, IDENTITY_NEUTRAL, IDENTITY_RELEVANT]


# --- failure modes against a real HTTP server --------------------------------------------

@pytest.mark.slow
def test_every_failure_mode_is_recorded_per_feed_and_the_cycle_goes_on(writer_db, tmp_path):
    def fx(name):
        return (FIXTURES / name).read_bytes()

    routes = {
        "/good.xml": Route(body=fx("outlet-a.xml"), etag='"a1"'),
        "/gone": Route(body=b"not here", status=404, content_type="text/html"),
        "/broken": Route(body=b"oops", status=500, content_type="text/plain"),
        "/hang": Route(body=fx("outlet-b.xml"), behaviour="hang", delay_s=3.0),
        "/drip": Route(behaviour="drip", delay_s=0.05),
        "/endless": Route(behaviour="endless"),
        "/html": Route(body=fx("page.html"), content_type="text/html; charset=utf-8"),
        "/bomb": Route(body=fx("bomb.xml")),
        "/loop": Route(behaviour="redirect", location="/loop"),
        "/malformed": Route(body=b"<rss><channel><title>x</title><item><title>a</ti"),
        "/garbage": Route(body=b"<<<>>> not xml at all \x00\x01", content_type="application/octet-stream"),
        "/empty": Route(body=fx("empty.xml")),
        "/latin1": Route(body=fx("latin1-undeclared.xml"), content_type="text/xml"),
        "/lying-charset": Route(body=fx("utf8-declared-latin1.xml"), content_type="application/xml; charset=iso-8859-1"),
        "/dates": Route(body=fx("foreign-dates.xml")),
        "/hostile": Route(body=fx("hostile.xml")),
        "/truncated": Route(body=fx("truncated.xml")),
    }
    closed_port = free_port()
    with FeedServer(routes) as srv:
        feeds = [FeedConfig(path.strip("/").replace(".xml", ""), srv.url(path)) for path in routes]
        feeds.append(FeedConfig("refused", f"http://127.0.0.1:{closed_port}/feed.xml"))
        cfg = make_cfg(tmp_path / "x.db", feeds=feeds)
        report = run_ingest(writer_db, cfg, label="hostile-world")
    by_name = {f.name: f for f in report.feeds}
    assert list(by_name) == [f.name for f in feeds]
    expected_failures = {
        "gone": "HTTP 404", "broken": "HTTP 500", "hang": "timeout", "drip": "too slow", "endless": "over size cap",
        "html": "not a feed: got an HTML page", "bomb": "entity-expansion bomb", "loop": "redirect loop",
        "malformed": "malformed", "garbage": "not a feed", "refused": "connection refused",
    }
    for name, reason in expected_failures.items():
        assert by_name[name].status == "failed" and reason in by_name[name].failed_reason, (name, by_name[name])
    for name in ("good", "empty", "latin1", "lying-charset", "dates", "hostile", "truncated"):
        assert by_name[name].status == "ok", by_name[name]
    assert by_name["empty"].fetched == 0 and "empty feed" in by_name["empty"].warning
    assert by_name["hostile"].dropped == 1 and by_name["hostile"].duplicate == 1
    assert "CharacterEncodingOverride" in by_name["latin1"].warning

    batch = store.get_batch(writer_db, report.batch_id)
    assert (batch["status"], batch["feeds_ok"], batch["feeds_failed"]) == ("closed", 7, 11)
    titles = {r["title"] for r in writer_db.query("select title from articles")}
    assert {"Ataque del Estado Islámico: la policía investiga", "Eleições: candidatos debatem educação e saúde"} <= titles
    assert all("<" not in t and "script" not in t.lower() for t in titles)
    polls = {p["feed_name"]: p for p in store.polls_of_batch(writer_db, report.batch_id)}
    assert json.loads(polls["hostile"]["dropped_json"]) == {"no_title_or_summary": 1}
    assert polls["gone"]["http_status"] == 404 and polls["good"]["bytes"] > 0
    health = {f["name"]: f for f in writer_db.query("select * from feeds")}
    assert health["good"]["etag"] == '"a1"' and health["good"]["last_success_at"] and health["good"]["last_error"] is None
    assert health["refused"]["last_status"] == "failed" and health["refused"]["last_error"] == "connection refused"
    summary = {h["name"]: h for h in store.feed_health(writer_db)}
    assert summary["hostile"]["items_per_poll"] == 7 and summary["hostile"]["dropped_share"] == round(1 / 7, 3)
    assert summary["hostile"]["dropped_reasons"] == {"no_title_or_summary": 1}
    assert summary["gone"]["polls_failed"] == 1 and summary["gone"]["last_error"] == "HTTP 404 Not Found"
    assert "CharacterEncodingOverride" in summary["latin1"]["last_warning"] and summary["good"]["articles"] == 4
    dated = {r["title"]: r for r in writer_db.query("select * from articles where feed_id = ?", [polls["dates"]["feed_id"]])}
    assert dated["Data em português"]["published_at"] == "2018-09-24T22:42:40+00:00"
    assert dated["Fecha ilegible"]["date_missing"] == 1 and "date_missing" in json.loads(dated["Fecha ilegible"]["flags"])


@pytest.mark.slow
def test_conditional_get_and_a_feed_that_breaks_later_loses_nothing(writer_db, tmp_path):
    body = (FIXTURES / "outlet-a.xml").read_bytes()
    with FeedServer({"/a.xml": Route(body=body, etag='"v7"', last_modified="Tue, 10 Nov 2026 15:00:00 GMT")}) as srv:
        cfg = make_cfg(tmp_path / "x.db", feeds=[FeedConfig("a", srv.url("/a.xml"))])
        first = run_ingest(writer_db, cfg, label="one")
        second = run_ingest(writer_db, cfg, label="two")
        assert srv.seen[-1].headers.get("if-none-match") == '"v7"'
        srv.routes["/a.xml"] = Route(body=b"<html><body>maintenance</body></html>", content_type="text/html")
        third = run_ingest(writer_db, cfg, label="three")
    assert first.feeds[0].new == 4
    assert second.feeds[0].status == "unchanged"
    poll = store.polls_of_batch(writer_db, second.batch_id)[0]
    assert poll["http_status"] == 304
    assert third.feeds[0].status == "failed" and "HTML page" in third.feeds[0].failed_reason
    assert writer_db["articles"].count == 4  # the stored articles survive a feed going bad
    feed = next(writer_db.query("select * from feeds"))
    assert feed["etag"] == '"v7"' and feed["last_status"] == "failed" and feed["last_success_at"] and feed["last_error"]
    from store import open_readonly

    health = store.feed_health(open_readonly(tmp_path / "fw.db"))  # what the dashboard reads
    assert [(h["name"], h["polls"], h["polls_failed"], h["items_per_poll"]) for h in health] == [("a", 3, 1, 4.0)]


# --- CLI and example config -----------------------------------------------------------------

def test_cli_ingest_prints_per_feed_lines(tmp_path, monkeypatch):
    from monitor.cli import main

    monkeypatch.chdir(tmp_path)
    toml = tmp_path / "fw.toml"
    toml.write_text(f"""
[[feeds]]
name = "sample"
url = "sample:1"
[[feeds]]
name = "outlet-a"
url = "{(FIXTURES / 'outlet-a.xml').as_uri()}"
[[feeds]]
name = "missing"
url = "{tmp_path / 'nope.xml'}"
[[deployments]]
name = "local"
provider = "local"
[grid]
articles_per_batch = 2
""")
    runner = CliRunner()
    args = ["ingest", "--config", str(toml), "--db", str(tmp_path / "fw.db"), "--label", "cli-1"]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(l.startswith("sample") and "fetched    6  new    6  duplicate    0" in l for l in lines), result.output
    assert any(l.startswith("outlet-a") and "new    4" in l for l in lines)
    assert any(l.startswith("missing") and "failed: cannot read file" in l for l in lines)
    assert "10 new articles, 2 sampled" in lines[-1]
    again = runner.invoke(main, args)
    assert again.exit_code == 0 and "already closed: nothing changed" in again.output
    assert "failed: cannot read file" in again.output


def test_cli_ingest_bad_feed_url_is_a_configuration_error(tmp_path):
    from monitor.cli import main

    toml = tmp_path / "fw.toml"
    toml.write_text('[[feeds]]\nname = "x"\nurl = "ftp://example.com/feed"\n[[deployments]]\nname = "l"\nprovider = "local"\n')
    result = CliRunner().invoke(main, ["ingest", "--config", str(toml), "--db", str(tmp_path / "fw.db")])
    assert result.exit_code != 0 and "not supported" in result.output


def test_example_config_is_valid_and_lists_real_news_feeds():
    cfg = config.load(REPO / "framewatch.example.toml")
    urls = {f.name: f.url for f in cfg.feeds}
    for host in ("feeds.bbci.co.uk/news/world/rss.xml", "feeds.bbci.co.uk/news/rss.xml", "aljazeera.com", "feeds.npr.org",
                 "theguardian.com/world", "english.elpais.com"):
        assert any(host in u for u in urls.values()), host
    assert all(u.startswith("https://") for u in urls.values())
    assert cfg.fetch == FetchConfig()  # the example shows the defaults
    raw = (REPO / "framewatch.example.toml").read_text()
    assert '# url = "sample:1"' in raw and "HOSTED DEPLOYMENTS" in raw
    assert set(tomllib.loads(raw)) >= {"store", "feeds", "deployments", "grid", "generation", "schedule", "budget", "stats", "fetch"}


@pytest.mark.parametrize("key, value, message", [
    ("max_bytes", 0, "fetch.max_bytes"),
    ("read_timeout_s", -1, "fetch.read_timeout_s"),
    ("max_redirects", -1, "fetch.max_redirects"),
    ("colour", "red", "unknown key fetch.colour"),
])
def test_fetch_config_errors(tmp_path, key, value, message):
    toml = tmp_path / "fw.toml"
    toml.write_text(f'[[deployments]]\nname = "l"\nprovider = "local"\n[fetch]\n{key} = {json.dumps(value)}\n')
    with pytest.raises(ConfigError, match=message):
        config.load(toml)
