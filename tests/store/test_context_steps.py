"""A run that drops old exchanges to fit its context window, as the store keeps it: the
``context_truncated`` step (metadata at every level), and the ``context_full`` ending."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from sqlalchemy import Column, MetaData, String, Table, create_engine, insert, select

from toolwire import ChatMessage, CompletionResponse, ScriptedProvider, ToolCall
from toolwire.core.lifecycle import RunStatus
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import ContextStep
from toolwire.providers.base import Stop
from toolwire.store import RunStore
from toolwire.store import schema as tables
from toolwire.store.engine import resolve_url
from toolwire.store.migrations import LATEST

from .conftest import Backend
from .helpers import run

CONTEXT_FIELDS = ("dropped_exchanges", "dropped_messages", "tokens_before", "tokens_after",
                  "context_window", "reserved_tokens")  # fmt: skip


def looking_up(messages: Sequence[ChatMessage]) -> CompletionResponse:
    """Six lookups, one a turn (the latest call, always in view, says how many), then an
    answer: enough to overflow a small window."""
    calls = [m for m in messages if m.role == "assistant"]
    number = int(calls[-1].tool_calls[0].id.split("_")[1]) if calls else 0
    if number >= 6:
        return CompletionResponse(content=f"looked up {number}")
    call = ToolCall(f"call_{number + 1}", "lookup", '{"query": "' + "q" * 400 + '"}')
    return CompletionResponse(tool_calls=(call,), stop=Stop.TOOL_CALLS)


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_a_context_step_is_stored_whole_at_every_level(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    outcome = run(store, ScriptedProvider(looking_up), max_rounds=10, context_window=1000,
                  max_tokens=50)  # fmt: skip
    assert outcome.status is RunStatus.COMPLETED and outcome.store_error is None
    assert outcome.result is not None and outcome.result.final_content == "looked up 6"
    recorded = [s for s in outcome.steps if isinstance(s, ContextStep)]
    assert recorded
    store.flush()
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    kept = [s for s in stored.steps if s["kind"] == "context_truncated"]
    assert len(kept) == len(recorded)
    for row, step in zip(kept, recorded, strict=True):
        assert row == {
            "sequence": row["sequence"],
            "kind": "context_truncated",
            "round": step.round,
            "duration_ms": round(step.duration_ms, 2),
            "start_ms": step.start_ms,
            **{name: getattr(step, name) for name in CONTEXT_FIELDS},
        }
        assert stored.steps[row["sequence"]]["kind"] == "request"  # the next one: its request


def test_a_run_that_cannot_fit_is_stored_completed_truncated_with_its_reason(
    store: RunStore,
) -> None:
    outcome = run(store, ScriptedProvider(looking_up), context_window=10)
    assert outcome.status is RunStatus.COMPLETED
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    assert (stored.termination_reason, stored.truncated, stored.rounds, stored.steps) == (
        "context_full", True, 0, [],
    )  # fmt: skip


def _create_v4(url: str) -> None:
    """A database as schema version 4 left it: step kinds of at most 16 characters."""
    old = MetaData()
    for table in (tables.runs, tables.steps, tables.schema_version):
        columns = [
            Column(c.name, String(16) if (table.name, c.name) == ("steps", "kind") else c.type,
                   primary_key=c.primary_key, nullable=c.nullable, unique=c.unique,
                   autoincrement=c.autoincrement)
            for c in table.columns
        ]  # fmt: skip
        Table(table.name, old, *columns)
    engine = create_engine(resolve_url(url))
    with engine.begin() as connection:
        old.create_all(connection)
        connection.execute(insert(old.tables["schema_version"]).values(version=4))
    engine.dispose()


def test_a_v4_database_gets_room_for_the_context_step_kind(backend: Backend) -> None:
    _create_v4(backend.url)
    store = backend.open()
    outcome = run(store, ScriptedProvider(looking_up), max_rounds=10, context_window=1000,
                  max_tokens=50)  # fmt: skip
    assert outcome.store_error is None
    store.flush()
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    assert "context_truncated" in {s["kind"] for s in stored.steps}
    engine = create_engine(store.url)
    with engine.connect() as connection:
        version = connection.execute(select(tables.schema_version.c.version)).scalars().all()
    engine.dispose()
    assert version == [LATEST] == [15]
