"""Shared fixtures. Real data in ../shared is optional: tests that need it skip without it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def shared_data() -> Path:
    data = SHARED / "data"
    if not data.is_dir():
        pytest.skip("../shared/data is absent (fresh clone): real-data test skipped")
    return data


@pytest.fixture
def writer_db(tmp_path):
    from store import open_writer

    db = open_writer(tmp_path / "fw.db")
    yield db
    db.conn.close()
