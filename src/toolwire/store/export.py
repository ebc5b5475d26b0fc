"""A stored run as an export record: the privacy-filtered run, tagged with its format.

The same record leaves through every door: ``toolwire runs show --json``, ``toolwire runs
export`` (one per line), the inspector's ``GET /api/runs/{id}/export`` and its Export panel.
It is the run as the store keeps it (already filtered at the run's privacy level; nothing is
added back) with two leading keys: ``schema`` (``toolwire.run``) and ``schema_version``.

``SCHEMA_VERSION`` changes only when a key is removed or changes meaning; a key added
(a new summary field, a new step field such as ``start_ms``) keeps the version, so a reader
must ignore keys it does not know.
"""

from __future__ import annotations

from typing import Any

from toolwire.store.records import StoredRun

SCHEMA = "toolwire.run"
SCHEMA_VERSION = 1


def run_record(stored: StoredRun) -> dict[str, Any]:
    """The export record of ``stored``: its format, then the run with its steps."""
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, **stored.to_dict()}
