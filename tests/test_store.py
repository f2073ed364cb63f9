import sqlite3

import pytest

from store import StoreError, open_readonly, open_writer
from store.migrations import migrations


def test_migrations_are_idempotent(tmp_path):
    path = tmp_path / "fw.db"
    db = open_writer(path)
    tables = set(db.table_names())
    assert {"runs", "feeds", "articles", "batches", "deployments", "prompts", "responses", "scores", "cells"} <= tables
    db.conn.close()
    db = open_writer(path)  # second open applies nothing new and loses nothing
    assert set(db.table_names()) == tables
    assert db.journal_mode == "wal"


def test_migrations_are_recorded_by_name(writer_db):
    applied = {row["name"] for row in writer_db.query("select name from _sqlite_migrations where migration_set = ?", [migrations.name])}
    assert "m001_core" in applied


def test_readonly_connection_refuses_writes(tmp_path):
    path = tmp_path / "fw.db"
    open_writer(path).conn.close()
    ro = open_readonly(path)
    assert ro["runs"].count == 0
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        ro.execute("insert into runs (id) values ('x')")


def test_readonly_reads_while_writer_holds_a_transaction(tmp_path):
    path = tmp_path / "fw.db"
    w = open_writer(path)
    with w.conn:
        w["feeds"].insert({"id": "f1", "name": "one"})
    w.execute("begin immediate")
    w["feeds"].insert({"id": "f2", "name": "two"})
    ro = open_readonly(path)
    assert ro["feeds"].count == 1  # sees committed rows, not blocked by the open write
    w.conn.commit()
    assert ro["feeds"].count == 2


def test_missing_database_says_what_to_do(tmp_path):
    with pytest.raises(StoreError, match="framewatch demo"):
        open_readonly(tmp_path / "none.db")


def test_garbage_file_is_a_clear_error_and_is_not_touched(tmp_path):
    path = tmp_path / "notadb.db"
    path.write_bytes(b"this is not sqlite" * 100)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="cannot open as a framewatch database"):
        open_writer(path)
    assert path.read_bytes() == before
