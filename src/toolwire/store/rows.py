"""The rows the store writes for a run and its steps, and which strings can name a run.

A run's row says who runs it, with what provider (read back by ``provider_ref``) and how it
is kept; every label is cut to its column and made storable. A step's row holds what its
privacy filter kept, with the governance rows and the words for search derived from that and
written beside it (``beside``), never in it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, insert

from toolwire.core.jsonenc import sink_dumps
from toolwire.core.lifecycle import RunStatus
from toolwire.core.text import storable
from toolwire.loop.governance import decisions_of_step
from toolwire.loop.run import RunRequest
from toolwire.policy.charter import ProviderRef
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import RunStep
from toolwire.store import liveness, schema, search
from toolwire.store.egress import INSERT_EGRESS, egress_rows
from toolwire.store.gates import ADD_TO_CALL, addition, gate_rows, split_calls
from toolwire.store.statements import step_columns

_SENDS = frozenset({"llm", "provider_failed"})  # the kinds of step that can carry egress
RUN_ID = re.compile(r"[0-9A-Za-z-]{1,64}")
_GATES = "gates"  # the key of a step row's governance rows (written beside it, not in it)
_TEXT = "body"  # the key of a step row's words for search (written beside it, see search)
_EGRESS = "egress"  # the key of a step row's egress ledger rows (written beside it)


def now() -> datetime:
    return datetime.now(UTC)


def is_run_id(value: str) -> bool:
    """Whether ``value`` can name a run: ids are UUIDs, so anything else is simply not found
    (and never reaches a driver, which may refuse it: PostgreSQL text cannot hold NUL)."""
    return RUN_ID.fullmatch(value) is not None


# The columns a new run's row sets (``run_row``'s, and its charter).
RUN_COLUMNS = (
    "id", "status", "created_at", "provider", "model", "base_url", "trust_zone", "script",
    "max_tokens_field", "privacy_level", "options", "rerun_of", "owner_host", "owner_pid",
    "owner_started", "charter", "workspace",
)  # fmt: skip


def run_row(
    run_id: str,
    request: RunRequest,
    status: RunStatus,
    *,
    privacy: PrivacyLevel,
    owner: liveness.Owner,
) -> dict[str, Any]:
    """The row a new run is inserted as: who runs it, with what provider, kept how."""
    ref = request.provider_ref
    return {
        "id": run_id,
        "status": status.value,
        "created_at": now(),
        "provider": _label(ref.name),
        "model": _label(request.model),
        "base_url": _text(ref.base_url),
        "trust_zone": _label(ref.trust_zone, 32),
        "script": _text(ref.script),
        "max_tokens_field": _label(ref.max_tokens_field, 32),
        "privacy_level": privacy.value,
        "options": sink_dumps(_options(request)),
        "rerun_of": request.rerun_of if is_run_id(request.rerun_of or "") else None,
        "owner_host": owner.host,
        "owner_pid": owner.pid,
        "owner_started": owner.started,
    }


def provider_ref(row: Any) -> ProviderRef:
    """How to reach a stored run's provider again (never a key)."""
    return ProviderRef(
        name=row.provider or "",
        model=row.model,
        base_url=row.base_url,
        trust_zone=row.trust_zone,
        script=row.script,
        max_tokens_field=row.max_tokens_field,
    )


def step_row(
    run_id: str, sequence: int, step: RunStep, kept: dict[str, Any], decider: str | None
) -> dict[str, Any]:
    """The row of one step, ``kept`` being what its privacy filter kept, with the governance
    rows derived from it (``decider``: who decided the run's paused turn, if anyone) and the
    words it holds for search (see :mod:`toolwire.store.search`)."""
    decisions = decisions_of_step(kept, decider)
    sent = egress_rows(run_id, sequence, step, now()) if step.kind in _SENDS else ()
    return {
        "run_id": run_id,
        "sequence": sequence,
        "kind": step.kind,
        "round": step.round,
        "duration_ms": round(step.duration_ms, 2),
        "payload": sink_dumps(kept),
        **step_columns(step.kind, kept),
        _TEXT: search.step_body(kept) if sequence < search.SEQUENCE_SPAN else "",
        _GATES: gate_rows(run_id, sequence, decisions, now()) if decisions else (),
        _EGRESS: sent,
    }


def beside(
    rows: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The governance rows, the rows of words (``run_id``, ``sequence``, ``body``) and the
    egress ledger's rows written beside step rows made by ``step_row``."""
    gates = [gate for row in rows for gate in row[_GATES]]
    sent = [line for row in rows for line in row[_EGRESS]]
    return gates, [row for row in rows if row[_TEXT]], sent


def insert_step(connection: Connection, row: Mapping[str, Any]) -> None:
    """Insert a row made by ``step_row``, with its governance rows and its words, in the
    caller's transaction."""
    step = {k: v for k, v in row.items() if k not in (_GATES, _TEXT, _EGRESS)}
    connection.execute(insert(schema.steps).values(step))
    fresh, calls = split_calls(row[_GATES])
    for call in calls:  # a call refused again adds to the run's row
        if not connection.execute(ADD_TO_CALL, addition(call)).rowcount:
            fresh.append(call)
    if fresh:
        connection.execute(insert(schema.gate_decisions), fresh)
    if row[_TEXT]:
        words = {"run_id": row["run_id"], "sequence": row["sequence"], "body": row[_TEXT]}
        connection.execute(search.insert(connection.dialect), words)
    if row[_EGRESS]:
        connection.execute(INSERT_EGRESS, list(row[_EGRESS]))


def _label(value: object, chars: int = schema.NAME_CHARS) -> str | None:
    """A provider or model label, cut to fit its column."""
    if not isinstance(value, str) or not value:
        return None
    return storable(value[:chars])


def _text(value: object) -> str | None:
    return storable(value) if isinstance(value, str) and value else None


def _options(request: RunRequest) -> dict[str, Any]:
    """What a run was asked to do, as stored: its options (metadata, never a prompt)."""
    return {**request.options.to_dict(), "dry_run": request.options.dry_run}
