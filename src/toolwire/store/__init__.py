"""The audit store: runs and their privacy-filtered steps, in SQLite or PostgreSQL.

``RunStore`` and the records load on first use (PEP 562): a module that only needs a helper of
this package (``toolwire.store.private``) does not pull in the database layer.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from toolwire.store.records import RunSummary, StoredRun
    from toolwire.store.runs import RunStore

_HOMES = {
    "RunStore": "toolwire.store.runs",
    "RunSummary": "toolwire.store.records",
    "StoredRun": "toolwire.store.records",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'toolwire.store' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


__all__ = ["RunStore", "RunSummary", "StoredRun"]
