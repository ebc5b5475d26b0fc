"""The governance log keeps the tools a run was not offered as one row per reason, with a
count, on SQLite and PostgreSQL; filters by gate; and a store written before the count was kept
(schema 10: one row per tool) is migrated to the same shape."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import column, create_engine, insert, table, text, update

from toolwire import RunOptions, ScriptedProvider, ToolContext, User
from toolwire.loop.governance import Gate
from toolwire.policy.privacy import tool_name
from toolwire.policy.trace import ToolStep
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.store import schema as tables
from toolwire.store.engine import resolve_url
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry

from ..fakes import call
from ..governed import governed_run
from .conftest import Backend
from .helpers import run

NOPE = tool_name("nope", frozenset())  # a made-up name, as the store keeps it (metadata)
AT = datetime(2026, 11, 30, 10, tzinfo=UTC)
ABOVE = "data class secret_adjacent is above the local ceiling"
BUILTINS = ToolRegistry(builtin_tools())
ADMIN_ONLY = [t.spec.name for t in BUILTINS if t.requires_admin and t.enabled_by_default]
WORKSPACE_ONLY = [n for n in BUILTINS.enabled_names() if n not in ADMIN_ONLY]


def plain_run(store: RunStore) -> str:
    """A non-admin run over the built-ins without a workspace: it is offered nothing."""
    provider = ScriptedProvider.from_turns([{"content": "ok"}])
    request = RunRequest.of("q", provider=provider, options=RunOptions(),
                            context=ToolContext(user=User("bob")))  # fmt: skip
    return Runtime(BUILTINS, recorder=store).run_sync(request).run_id


def test_a_run_refused_many_tools_for_one_reason_has_one_row_with_their_count(
    store: RunStore,
) -> None:
    run_id = plain_run(store)
    found = store.list_gate_decisions(run_id=run_id)
    assert [(r.gate, r.reason, r.tool, r.count) for r in reversed(found)] == [
        ("offer", "no_workspace", None, len(WORKSPACE_ONLY)),  # in the order reasons appear
        ("offer", "requires_admin", None, len(ADMIN_ONLY)),
    ]
    assert len(ADMIN_ONLY) == 15 and len(WORKSPACE_ONLY) == 18
    by_reason = {r.reason: r for r in found}
    assert by_reason["requires_admin"].detail == ", ".join(ADMIN_ONLY)
    assert by_reason["no_workspace"].detail == ", ".join(WORKSPACE_ONLY)
    assert by_reason["no_workspace"].to_dict()["count"] == len(WORKSPACE_ONLY)


def test_single_decisions_keep_their_tool_and_a_count_of_one(store: RunStore) -> None:
    governed_run(store)
    found = store.list_gate_decisions()
    assert {r.count for r in found} == {1}
    assert {r.tool for r in found if r.gate == "offer"} == {"vault", "admin_tool", "off_tool",
                                                            "ghost"}  # fmt: skip


def test_the_log_filters_by_gate(store: RunStore) -> None:
    governed_run(store)
    plain_run(store)
    for gate in Gate:
        found = store.list_gate_decisions(gate=gate)
        assert {r.gate for r in found} <= {str(gate)}
    assert [r.reason for r in reversed(store.list_gate_decisions(gate=Gate.CALL))] == [
        "unknown_tool", "not_permitted", "too_many_calls", "not_an_object", "denied",
    ]  # fmt: skip
    assert len(store.list_gate_decisions(gate=Gate.OFFER)) == 6
    assert [r.reason for r in store.list_gate_decisions(gate=Gate.BUDGET)] == ["budget_exhausted"]
    assert store.list_gate_decisions(gate=Gate.ROUNDS) == []


def _as_schema_10(backend: Backend, run_id: str, refused: dict[str, list[str]]) -> None:
    """The database as schema 10 left it: no count column, one offer row per refused tool, one
    call row per call refused (``unknown_tool`` for "nope" three times, ``denied`` once)."""
    engine = create_engine(resolve_url(backend.url))
    kept = [c for c in tables.gate_decisions.columns if c.name not in ("id", "count")]
    old = table("gate_decisions", *(column(c.name, c.type) for c in kept))
    with engine.begin() as connection:
        connection.execute(text("DELETE FROM gate_decisions"))
        connection.execute(text("ALTER TABLE gate_decisions DROP COLUMN count"))
        for reason, tools in refused.items():
            for tool in tools:
                detail = ABOVE if reason == "trust_zone" else None
                row = {
                    "run_id": run_id,
                    "sequence": 0,
                    "at": AT,
                    "round": 1,
                    "gate": "offer",
                    "reason": reason,
                    "actor": "policy",
                    "tool": tool,
                    "detail": detail,
                }
                connection.execute(insert(old).values(row))
        for round_, reason, tool, actor in CALLS:
            row = {"run_id": run_id, "sequence": round_ * 10, "at": AT, "round": round_,
                   "gate": "call", "reason": reason, "actor": actor, "tool": tool}  # fmt: skip
            connection.execute(insert(old).values(row))
        connection.execute(update(tables.schema_version).values(version=10))
    engine.dispose()


NOPE_CALL = ("unknown_tool", "nope", "runtime")
CALLS = [(2, *NOPE_CALL), (3, "denied", "rm", "ann"), (4, *NOPE_CALL), (5, *NOPE_CALL)]


def test_a_schema_10_store_is_migrated_to_one_row_per_reason(backend: Backend) -> None:
    store = backend.open()
    run_id = run(store).run_id
    backend.close()
    _as_schema_10(backend, run_id, {"requires_admin": ADMIN_ONLY, "disabled": ["get_env_raw"],
                                    "trust_zone": ["vault", "keys"]})  # fmt: skip
    found = backend.open().list_gate_decisions(run_id=run_id)
    assert [(r.reason, r.tool, r.count, r.detail) for r in reversed(found)] == [
        ("requires_admin", None, 15, ", ".join(ADMIN_ONLY)),
        ("disabled", "get_env_raw", 1, None),
        ("trust_zone", None, 2, f"{ABOVE}: vault, keys"),
        ("unknown_tool", "nope", 3, None),  # the first call's row, counting the later ones
        ("denied", "rm", 1, None),
    ]  # fmt: skip
    assert {r.at for r in found} == {"2026-11-30T10:00:00+00:00"}
    assert [(r.round, r.sequence) for r in found if r.gate == "call"] == [(3, 30), (2, 20)]


def test_a_call_refused_again_for_the_same_reason_adds_to_the_runs_row(store: RunStore) -> None:
    turns: list[dict[str, object]] = [
        {"tool_calls": [call("nope"), call("nope"), call("lookup", {"query": "a"})]},
        {"tool_calls": [call("list_users")]},
        {"tool_calls": [call("list_users"), call("nope")]},
        {"tool_calls": [call("lookup", "[1]")]},
        {"content": "done"},
    ]
    outcome = run(store, ScriptedProvider.from_turns(turns), max_rounds=6)
    found = store.list_gate_decisions(run_id=outcome.run_id)
    assert [(r.gate, r.reason, r.tool, r.count, r.round) for r in reversed(found)] == [
        ("call", "unknown_tool", NOPE, 3, 1),  # the first row, counting every later one
        ("call", "unknown_tool", tool_name("list_users", frozenset()), 2, 2),
        ("call", "not_an_object", "lookup", 1, 4),
    ]
    other = run(store, ScriptedProvider.from_turns([{"tool_calls": [call("nope")]},
                                                    {"content": "ok"}]))  # fmt: skip
    assert [r.count for r in store.list_gate_decisions(run_id=other.run_id)] == [1]


def test_a_step_written_in_a_callers_transaction_adds_a_repeated_refusal_too(
    store: RunStore,
) -> None:
    run_id = run(store).run_id  # a run to write more steps to, as a queue's decision does
    store.flush()
    engine = create_engine(store.url)
    try:
        for sequence, round_ in ((50, 7), (51, 8)):
            step = ToolStep(round=round_, tool_name="lookup", tool_result="Error: x",
                            tool_is_error=True, tool_refused="not_permitted")  # fmt: skip
            kept = step.to_dict()
            with engine.begin() as connection:
                store.insert_step(connection, store.step_row(run_id, sequence, step, kept, None))
    finally:
        engine.dispose()
    (row,) = store.list_gate_decisions(run_id=run_id)
    assert (row.gate, row.reason, row.tool, row.count, row.round, row.sequence) == (
        "call", "not_permitted", "lookup", 2, 7, 50,
    )  # fmt: skip


def test_a_schema_11_store_merges_the_rows_of_a_call_refused_again(backend: Backend) -> None:
    store = backend.open()
    run_id = run(store).run_id
    backend.close()
    engine = create_engine(resolve_url(backend.url))
    with engine.begin() as connection:  # as schema 11 wrote them: one row per refused call
        connection.execute(text("DELETE FROM gate_decisions"))
        for round_, reason, tool, actor in CALLS:
            row = {"run_id": run_id, "sequence": round_ * 10, "at": AT, "round": round_,
                   "gate": "call", "reason": reason, "actor": actor, "tool": tool,
                   "count": 2 if round_ == 4 else 1}  # fmt: skip
            connection.execute(insert(tables.gate_decisions).values(row))
        connection.execute(update(tables.schema_version).values(version=11))
    engine.dispose()
    found = backend.open().list_gate_decisions(run_id=run_id)
    assert [(r.reason, r.tool, r.count, r.round) for r in reversed(found)] == [
        ("unknown_tool", "nope", 4, 2),  # 1 + 2 + 1: the first row counts them all
        ("denied", "rm", 1, 3),
    ]
