"""Snapshots: export (files, README, manifest, no secrets), verify (tampering names the file), reproduce
(zero differences on the pipeline's own output; a planted difference is found), and the dashboard on a snapshot."""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from monitor import config
from monitor.cli import main
from monitor.config import FeedConfig
from monitor.snapshot import SnapshotError, _write_manifest, export_snapshot, verify_snapshot
from monitor.snapshot_readme import undocumented
from monitor.snapshot_reproduce import reproduce_snapshot
from scripted_config import scripted_toml
from store import open_readonly, open_writer

ENV_KEY = "sk-proj-PLANTEDenvKEY0123456789abcdefXYZ"
SLACK_SECRET = "PLANTEDslackSECRET42"
BASIC_PASSWORD = "hunter2PLANTED"
GOOGLE_KEY = "AIzaPLANTEDgoogleKEY0123456789abcd"
PLANTED = (ENV_KEY, SLACK_SECRET, BASIC_PASSWORD, GOOGLE_KEY)

CONFIG = scripted_toml(
    a_extra='api_key_env = "FW_SNAPSHOT_TEST_KEY"',
    b_extra=f'base_url = "https://svc:{BASIC_PASSWORD}@llm.example/v1?key={GOOGLE_KEY}"',
    tail=f'[alerts.webhook]\nurl = "https://hooks.slack.com/services/T0/B0/{SLACK_SECRET}"',
)
TABLES = ("batches", "runs", "feeds", "deployments", "articles", "templates", "frames", "identities", "prompts",
          "responses", "scores", "cells", "aggregates", "deployment_batches", "hotspots", "stability", "rank_agreement")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Three cycles of the real pipeline (scripted deployments, hash embedder) with secrets planted around it."""
    from monitor.pipeline import run_cycle
    from monitor.scoring.embed import FakeEmbedder
    from store.writes import record_config

    mp = pytest.MonkeyPatch()
    mp.setenv("FW_SNAPSHOT_TEST_KEY", ENV_KEY)
    root = tmp_path_factory.mktemp("snapshot")
    (root / "framewatch.toml").write_text(CONFIG, encoding="utf-8")
    cfg = config.load(root / "framewatch.toml")
    db = open_writer(cfg.db_path)
    record_config(db, cfg)
    for i in (1, 2, 3):
        run_cycle(db, cfg, label=f"sample-{i}", feeds=[FeedConfig("sample", f"sample:{i}")], embedder=FakeEmbedder())
    with db.conn:  # places a key can end up despite redaction upstream: errors, request descriptions, feed errors
        rid = next(db.query("select id from responses limit 1"))["id"]
        db.execute("update responses set error = ?, request_json = json_set(request_json, '$.headers', ?) where id = ?",
                   [f"401 invalid key {ENV_KEY}", f"Authorization: Bearer {ENV_KEY}", rid])
        db.execute("update runs set error = ?", [f"generate: AuthenticationError: key {ENV_KEY} rejected"])
        db.execute("update feeds set last_error = ?", [f"GET https://u:{BASIC_PASSWORD}@feeds.example/rss failed"])
    db.conn.close()
    yield cfg
    mp.undo()


@pytest.fixture(scope="module")
def exported(store, tmp_path_factory):
    db = open_readonly(store.db_path)
    out = tmp_path_factory.mktemp("exports") / "snap"
    result = export_snapshot(db, store, out, with_text=True)
    db.conn.close()
    return result


def copy_of(exported, tmp_path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(exported.folder, target)
    return target


# -- export -----------------------------------------------------------------------------------------

def test_export_writes_tables_readme_manifest_and_a_zip(exported):
    folder = exported.folder
    assert exported.batches and exported.deployments == ("scripted-a", "scripted-b")
    for table in TABLES:
        csv, parquet = folder / "tables" / f"{table}.csv", folder / "tables" / f"{table}.parquet"
        assert csv.is_file() and parquet.is_file(), table
        assert list(pd.read_csv(csv).columns) == list(pd.read_parquet(parquet).columns)
    assert len(pd.read_parquet(folder / "tables" / "responses.parquet")) == exported.rows["responses"] > 0
    assert exported.rows["cells"] == 24 and exported.rows["deployments"] == 2
    for name in ("README.md", "manifest.json", "versions.json", "config.json", "snapshot.db",
                 "prompts/identities.toml", "prompts/families.toml", "prompts/controls.toml"):
        assert (folder / name).is_file(), name
    manifest = json.loads((folder / "manifest.json").read_text())["files"]
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert sorted(manifest) == [p for p in on_disk if p != "manifest.json"]
    assert all(len(entry["sha256"]) == 64 for entry in manifest.values())
    with zipfile.ZipFile(exported.zip_path) as zf:
        assert sorted(n.split("/", 1)[1] for n in zf.namelist()) == on_disk
    versions = json.loads((folder / "versions.json").read_text())
    assert versions["scorer_version"].startswith("fake-hash-256+vader-") and versions["embedder"] == "fake-hash-256"
    assert versions["taxonomy_version"] and versions["families_version"] and versions["frames_version"]
    assert versions["with_text"] is True and all(versions["complete_batches"].values())


def test_readme_describes_every_file_and_column(exported):
    readme = (exported.folder / "README.md").read_text()
    columns = {t: list(pd.read_parquet(exported.folder / "tables" / f"{t}.parquet").columns) for t in TABLES}
    assert undocumented(columns) == [], "describe these columns in monitor/snapshot_readme.py"
    for table, cols in columns.items():
        assert f"### {table}" in readme
        for col in cols:
            assert f"| `{col}` |" in readme, f"{table}.{col}"
    for name in ("manifest.json", "versions.json", "config.json", "snapshot.db", "tables/<name>.parquet"):
        assert f"`{name}`" in readme
    assert "undocumented" not in readme


def test_tables_keep_types_and_the_text_only_when_asked(exported, store, tmp_path):
    responses = pd.read_parquet(exported.folder / "tables" / "responses.parquet")
    assert responses["text"].notna().all() and str(responses["tokens_in"].dtype) == "Int64"
    scores = pd.read_parquet(exported.folder / "tables" / "scores.parquet")
    assert "embedding" not in scores.columns and scores["sentiment"].dtype == "float64"
    db = open_readonly(store.db_path)
    plain = export_snapshot(db, store, tmp_path / "plain", batches=["sample-2"], make_zip=False)
    db.conn.close()
    assert plain.zip_path is None and plain.batches == (exported.batches[1],)
    assert pd.read_parquet(plain.folder / "tables" / "responses.parquet")["text"].isna().all()
    conn = sqlite3.connect(plain.folder / "snapshot.db")
    assert conn.execute("select count(*) from responses where text is not null").fetchone()[0] == 0
    assert conn.execute("select count(distinct batch_id) from cells").fetchone()[0] == 1
    conn.close()


def _every_text(folder: Path, zip_path: Path) -> dict[str, str]:
    """Every exported byte, decoded where it is compressed: files, parquet values, SQLite rows, zip members."""
    texts = {str(p.relative_to(folder)): p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()}
    for p in (folder / "tables").glob("*.parquet"):
        texts[f"{p.name} (values)"] = pd.read_parquet(p).to_csv()
    conn = sqlite3.connect(folder / "snapshot.db")
    texts["snapshot.db (dump)"] = "\n".join(conn.iterdump())
    conn.close()
    with zipfile.ZipFile(zip_path) as zf:
        for name in zf.namelist():
            texts[f"zip:{name}"] = zf.read(name).decode("utf-8", "replace")
            if name.endswith(".parquet"):
                texts[f"zip:{name} (values)"] = pd.read_parquet(io.BytesIO(zf.read(name))).to_csv()
    return texts


def test_no_api_key_or_secret_in_any_exported_file(exported):
    texts = _every_text(exported.folder, exported.zip_path)
    leaks = [(name, secret) for name, text in texts.items() for secret in PLANTED if secret in text]
    assert leaks == []
    cfg = json.loads((exported.folder / "config.json").read_text())
    assert cfg["deployments"][0]["api_key_env"] == "FW_SNAPSHOT_TEST_KEY"  # the NAME stays: it is how to run it
    assert cfg["alerts"]["webhook"]["url"] == "[REDACTED]"
    assert cfg["deployments"][1]["base_url"].startswith("https://[REDACTED]@llm.example/v1?key=[REDACTED]")
    # The planted rows are still there, with the key removed and the rest of the message kept.
    runs = pd.read_parquet(exported.folder / "tables" / "runs.parquet")
    assert runs["error"].str.contains("AuthenticationError: key [REDACTED] rejected", regex=False).all()


def test_an_echoed_key_in_a_model_answer_is_removed_but_ordinary_words_are_kept():
    from monitor.snapshot_tables import scrub_rows

    rows = [{"id": "r1", "text": f"Basic needs matter. Your key {ENV_KEY} and token of respect.", "error": None}]
    clean = scrub_rows("responses", rows, [ENV_KEY], with_text=True)[0]
    assert clean["text"] == "Basic needs matter. Your key [REDACTED] and token of respect."


def test_export_refuses_unknown_batches_and_deployments(store, tmp_path):
    db = open_readonly(store.db_path)
    with pytest.raises(SnapshotError, match="no batch with id or label 'sample-9'; recent batches: sample-1"):
        export_snapshot(db, store, tmp_path / "x", batches=["sample-9"])
    with pytest.raises(SnapshotError, match="have no responses in the chosen batches"):
        export_snapshot(db, store, tmp_path / "y", deployments=["gpt-9"])
    db.conn.close()
    assert not (tmp_path / "x").exists()


# -- verify ------------------------------------------------------------------------------------------

def test_verify_passes_on_the_folder_and_the_zip(exported):
    assert verify_snapshot(exported.folder).ok and verify_snapshot(exported.zip_path).ok
    result = CliRunner().invoke(main, ["snapshot", "verify", str(exported.zip_path)])
    assert result.exit_code == 0 and "snapshot OK" in result.output


def test_tampering_with_one_file_fails_verify_naming_that_file(exported, tmp_path):
    folder = copy_of(exported, tmp_path)
    cells = folder / "tables" / "cells.csv"
    cells.write_text(cells.read_text().replace("0.", "0.9", 1))
    result = verify_snapshot(folder)
    assert not result.ok and [p.path for p in result.problems] == ["tables/cells.csv"]
    cli = CliRunner().invoke(main, ["snapshot", "verify", str(folder)])
    assert cli.exit_code == 1 and "tables/cells.csv: SHA-256 differs" in cli.output


def test_verify_reports_missing_and_added_files(exported, tmp_path):
    folder = copy_of(exported, tmp_path)
    (folder / "tables" / "scores.parquet").unlink()
    (folder / "notes.txt").write_text("added later")
    problems = {p.path: p.reason for p in verify_snapshot(folder).problems}
    assert problems == {"tables/scores.parquet": "missing (listed in the manifest)",
                        "notes.txt": "not listed in the manifest (added after export)"}
    (folder / "manifest.json").unlink()
    assert verify_snapshot(folder).problems[0].path == "manifest.json"


# -- reproduce -----------------------------------------------------------------------------------------

def test_export_then_reproduce_gives_zero_differences(exported):
    report = reproduce_snapshot(exported.folder)
    assert report.ok, "\n".join(report.lines())
    compared = {t.table: t for t in report.tables}
    assert set(compared) >= {"scores", "embeddings", "cells", "aggregates", "hotspots", "stability"}
    assert compared["cells"].compared_rows == 24 and compared["cells"].compared_values > 500
    assert compared["scores"].compared_rows == exported.rows["scores"]
    assert all(t.compared_rows > 0 for t in report.tables)
    cli = CliRunner().invoke(main, ["snapshot", "reproduce", str(exported.zip_path)])
    assert cli.exit_code == 0 and "reproduced: zero differences" in cli.output


def test_reproduce_finds_a_difference_beyond_the_tolerance(exported, tmp_path):
    folder = copy_of(exported, tmp_path)
    cells = pd.read_parquet(folder / "tables" / "cells.parquet")
    changed = cells.index[cells["scfs"].notna()][0]
    cells.loc[changed, "scfs"] += 1e-3
    cells.to_parquet(folder / "tables" / "cells.parquet", index=False)
    _write_manifest(folder)  # a consistent snapshot with a wrong number in it
    report = reproduce_snapshot(folder)
    diff = next(t for t in report.tables if t.table == "cells")
    assert not report.ok and diff.differences == 1 and diff.max_abs_diff == pytest.approx(1e-3, rel=1e-6)
    assert f"('{cells.loc[changed, 'id']}',) scfs" in diff.examples[0]
    assert reproduce_snapshot(folder, tolerance=1e-2).ok


def test_reproduce_refuses_a_tampered_snapshot_and_one_without_text(exported, store, tmp_path):
    folder = copy_of(exported, tmp_path)
    (folder / "tables" / "scores.csv").write_text("tampered")
    with pytest.raises(SnapshotError, match="fails verification"):
        reproduce_snapshot(folder)
    db = open_readonly(store.db_path)
    plain = export_snapshot(db, store, tmp_path / "plain", make_zip=False)
    db.conn.close()
    cli = CliRunner().invoke(main, ["snapshot", "reproduce", str(plain.folder)])
    assert cli.exit_code != 0 and "exported without response text" in cli.output and "--with-text" in cli.output


def test_reproduce_a_partial_selection_skips_only_grid_wide_values(store, tmp_path):
    db = open_readonly(store.db_path)
    part = export_snapshot(db, store, tmp_path / "part", deployments=["scripted-b"], with_text=True, make_zip=False)
    db.conn.close()
    report = reproduce_snapshot(part.folder)
    assert report.ok, "\n".join(report.lines())
    assert any("q_value and significant not compared" in n for n in report.notes)


@pytest.mark.slow
def test_reproduce_with_the_real_embedder(tmp_path):
    """The pinned production scorer (MiniLM from its PyPI package + VADER): one cycle, export, reproduce."""
    from monitor.pipeline import run_cycle

    (tmp_path / "framewatch.toml").write_text(CONFIG, encoding="utf-8")
    cfg = config.load(tmp_path / "framewatch.toml")
    db = open_writer(cfg.db_path)
    run_cycle(db, cfg, label="sample-1", feeds=[FeedConfig("sample", "sample:1")])  # embedder=None: MiniLM
    result = export_snapshot(db, cfg, tmp_path / "snap", with_text=True)
    db.conn.close()
    assert json.loads((result.folder / "versions.json").read_text())["embedder"] == "minilm-l6-v2"
    report = reproduce_snapshot(result.zip_path)
    assert report.ok, "\n".join(report.lines())


# -- the dashboard on a snapshot ----------------------------------------------------------------------

def test_dashboard_snapshot_verifies_then_serves_snapshot_db(exported, tmp_path, monkeypatch):
    import ui.serve

    served = []
    monkeypatch.setattr(ui.serve, "serve_dashboard", lambda db, port, open_browser=False: served.append(Path(db)) or 0)
    ok = CliRunner().invoke(main, ["dashboard", "--snapshot", str(exported.zip_path), "--port", "8599"])
    assert ok.exit_code == 0, ok.output
    assert served[-1].name == "snapshot.db" and "snapshot OK" in ok.output
    folder = copy_of(exported, tmp_path)
    (folder / "tables" / "cells.csv").write_text("tampered")
    bad = CliRunner().invoke(main, ["dashboard", "--snapshot", str(folder)])
    assert bad.exit_code != 0 and "tables/cells.csv" in bad.output and len(served) == 1


def test_the_dashboard_renders_from_snapshot_db_and_leaves_it_unchanged(exported, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    folder = copy_of(exported, tmp_path)
    monkeypatch.setenv("FRAMEWATCH_DB", str(folder / "snapshot.db"))
    app = str(Path(__file__).resolve().parents[1] / "app.py")
    for page in ("pages/overview.py", "pages/hotspots.py", "pages/alerts.py"):
        at = AppTest.from_file(app, default_timeout=60)
        at.user = {"is_logged_in": False}
        at.run()
        at.switch_page(page).run()
        assert not at.exception, (page, at.exception)
    assert verify_snapshot(folder).ok  # opened read-only: not one byte changed


def test_cli_export_chooses_batches_and_deployments(store, tmp_path):
    out = tmp_path / "cli-snap"
    result = CliRunner().invoke(main, ["snapshot", "export", "--config", str(store.path), "--out", str(out),
                                       "--batch", "sample-3", "--deployment", "scripted-b", "--no-zip"])
    assert result.exit_code == 0, result.output
    assert "response text not included" in result.output and not out.with_suffix(".zip").exists()
    versions = json.loads((out / "versions.json").read_text())
    assert versions["deployments"] == ["scripted-b"] and len(versions["batches"]) == 1
    assert versions["complete_batches"] == {versions["batches"][0]: False}
    again = CliRunner().invoke(main, ["snapshot", "export", "--config", str(store.path), "--out", str(out)])
    assert again.exit_code != 0 and "--overwrite" in again.output


def test_export_fails_and_leaves_nothing_if_a_secret_survives_scrubbing(store, tmp_path, monkeypatch):
    from monitor import snapshot_tables

    monkeypatch.setattr(snapshot_tables, "scrub_rows", lambda table, rows, secrets, with_text: list(rows))
    db = open_readonly(store.db_path)
    with pytest.raises(SnapshotError, match="secret value was found in .*snapshot.db"):
        export_snapshot(db, store, tmp_path / "leaky")
    db.conn.close()
    assert not (tmp_path / "leaky").exists() and not (tmp_path / "leaky.zip").exists()
