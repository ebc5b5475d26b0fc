"""The audit store: runs and their privacy-filtered steps, in SQLite or PostgreSQL.

``RunStore`` and the records load on first use (PEP 562): a module that only needs a helper of
this package does not pull in the database layer.

Layer: above ``runs`` (it implements the runtime's recorder). May import ``core`` up to
``runs``; never MCP, the queue, the inspector or the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire.core.lazy import lazy_names

if TYPE_CHECKING:
    from toolwire.store.records import RunSummary, StoredRun
    from toolwire.store.runs import RunStore

_HOMES = {
    "RunStore": "toolwire.store.runs",
    "RunSummary": "toolwire.store.records",
    "StoredRun": "toolwire.store.records",
}


__getattr__ = lazy_names(__name__, _HOMES)


__all__ = ["RunStore", "RunSummary", "StoredRun"]
