"""The audit store: runs and their privacy-filtered steps, in SQLite or PostgreSQL."""

from __future__ import annotations

from toolwire.store.records import RunSummary, StoredRun
from toolwire.store.runs import RunStore

__all__ = ["RunStore", "RunSummary", "StoredRun"]
