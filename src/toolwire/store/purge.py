"""Purging: finished runs older than a given age go, with their steps, gates, words and
egress ledger.

Only runs in a terminal state are deleted, so a run still running, waiting or queued is never
cut from under its process. Ids are deleted ``PURGE_CHUNK`` at a time, in one transaction.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import timedelta

from sqlalchemy import Engine, delete, select

from toolwire.core.lifecycle import TERMINAL, as_strings
from toolwire.store import schema, search
from toolwire.store.engine import errors
from toolwire.store.rows import now

PURGE_CHUNK = 500  # ids per DELETE: well under every driver's bound-parameter limit
_runs, _steps, _gates = schema.runs, schema.steps, schema.gate_decisions
_egress = schema.egress


def purge(engine: Engine, older_than_days: float) -> int:
    """Delete finished runs created more than ``older_than_days`` ago; return how many."""
    if not math.isfinite(older_than_days) or older_than_days < 0:
        raise ValueError(f"older_than_days must be 0 or more days, not {older_than_days}")
    cutoff = now() - timedelta(days=older_than_days)
    doomed = select(_runs.c.id, _runs.c.uid).where(
        _runs.c.created_at < cutoff, _runs.c.status.in_(as_strings(TERMINAL))
    )
    with errors("purge old runs"), engine.begin() as connection:
        found = connection.execute(doomed).all()
        ids = [row.id for row in found]
        search.delete_runs(connection, [row.uid for row in found])
        for chunk in _chunks(ids):
            connection.execute(delete(_gates).where(_gates.c.run_id.in_(chunk)))
            connection.execute(delete(_egress).where(_egress.c.run_id.in_(chunk)))
            connection.execute(delete(_steps).where(_steps.c.run_id.in_(chunk)))
            connection.execute(delete(_runs).where(_runs.c.id.in_(chunk)))
    return len(ids)


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(ids), PURGE_CHUNK):
        yield ids[start : start + PURGE_CHUNK]
