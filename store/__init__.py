"""The store: one SQLite file, written only by the monitor, read by the dashboard."""

from store.db import StoreError, open_readonly, open_writer, reading

__all__ = ["StoreError", "open_readonly", "open_writer", "reading"]
