"""A tool name the model made up is content: below ``redacted`` no sink of the store holds it.

One run, on SQLite and PostgreSQL, calls a registered tool and three names no tool has: one
the seam does not know (``unknown_tool``), one past the turn's call limit (``too_many_calls``,
never looked up), and one in a turn a person denies (``denied``, across a resumed segment).
Each invented name is a canary. At ``none`` and ``metadata`` none of them is in the database's
bytes (steps' payloads, the ``tool_name`` column, the search index, the governance log), in a
search, in the log's rows or in ``toolwire runs export``; the registered names are in every one
of them. At ``redacted`` and ``full`` the names are kept as before.
"""

from __future__ import annotations

import json
import uuid

import pytest
from sqlalchemy import create_engine, select
from typer.testing import CliRunner

from toolwire import RunOptions, ScriptedProvider, ToolRegistry, tool
from toolwire.cli.app import app, load_commands
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel, tool_name
from toolwire.runs.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore, schema
from toolwire.store.browse import RunQuery
from toolwire.store.engine import resolve_url

from ..fakes import call
from .conftest import Backend

TAG = uuid.uuid4().hex[:10]
# One word each (the search splits words at "_"), all beginning with the same canary.
CANARY = f"exfil{TAG}"
UNKNOWN, PAST_LIMIT, DENIED = (f"{CANARY}{n}" for n in ("one", "two", "three"))
INVENTED = (UNKNOWN, PAST_LIMIT, DENIED)
WITHHELD = [PrivacyLevel.NONE, PrivacyLevel.METADATA]


@tool(data_class="public")
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool(data_class="public", requires_approval=True)
def delete_row(n: int) -> str:
    """Delete a row (needs approval)."""
    return f"deleted {n}"


def invented_run(store: RunStore) -> RunOutcome:
    """Round 1: lookup, UNKNOWN, lookup, PAST_LIMIT (a limit of 3 calls a turn); round 2:
    delete_row and DENIED, denied by ann; round 3: the answer."""
    provider = ScriptedProvider.from_turns([
        {"tool_calls": [call("lookup", {"query": "a"}), call(UNKNOWN),
                        call("lookup", {"query": "b"}), call(PAST_LIMIT)]},
        {"tool_calls": [call("delete_row", {"n": 1}), call(DENIED)]},
        {"content": "done"},
    ])  # fmt: skip
    runtime = Runtime(ToolRegistry([lookup, delete_row]), recorder=store,
                      state_key=StateKey.generate())  # fmt: skip
    options = RunOptions(max_calls_per_turn=3, max_rounds=5)
    waiting = runtime.run_sync(RunRequest.of("go", provider=provider, options=options))
    assert waiting.pause is not None, waiting
    decision = OperatorDecision(action="deny", digest=waiting.pause.digest, actor="ann")
    ended = runtime.resume_sync(waiting.run_id, decision, provider=provider)
    assert ended.status == "completed", ended
    return ended


def tool_column(url: str) -> list[str | None]:
    """The ``tool_name`` column of the tool steps, as the database holds it."""
    engine = create_engine(resolve_url(url))
    try:
        with engine.connect() as connection:
            query = select(schema.steps.c.tool_name).where(schema.steps.c.kind == "tool")
            return list(connection.execute(query.order_by(schema.steps.c.sequence)).scalars())
    finally:
        engine.dispose()


def exported(url: str) -> str:
    load_commands()
    done = CliRunner().invoke(app, ["runs", "export", "--db", url])
    assert done.exit_code == 0, done.output
    return done.stdout


@pytest.mark.parametrize("level", WITHHELD)
def test_an_invented_name_is_in_no_sink_below_redacted(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    outcome = invented_run(store)
    shown = {name: tool_name(name, frozenset()) for name in INVENTED}
    assert all(s.startswith("unknown:sha256:") for s in shown.values())
    assert len(set(shown.values())) == 3  # the digests still tell the names apart
    for data in (backend.raw_bytes(), exported(backend.url).encode()):
        assert outcome.run_id.encode() in data
        assert CANARY.encode() not in data
        assert b"lookup" in data and b"delete_row" in data
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    assert CANARY not in json.dumps(stored.to_dict())
    requested = [s["requested_tool_names"] for s in stored.steps if s.get("requested_tool_names")]
    assert requested == [
        ["lookup", shown[UNKNOWN], "lookup", shown[PAST_LIMIT]],
        ["delete_row", shown[DENIED]],
    ]
    calls = [s["tool_name"] for s in stored.steps if s["kind"] == "tool"]
    expected = ["lookup", shown[UNKNOWN], "lookup", shown[PAST_LIMIT], "delete_row", shown[DENIED]]
    assert calls == expected
    assert tool_column(backend.url) == expected
    audit = [(r.reason, r.actor, r.tool) for r in reversed(store.list_gate_decisions())]
    assert audit == [
        ("unknown_tool", "runtime", shown[UNKNOWN]),
        ("too_many_calls", "runtime", shown[PAST_LIMIT]),
        ("denied", "ann", None),
        ("denied", "ann", "delete_row"),
        ("denied", "ann", shown[DENIED]),
    ]
    assert store.list_gate_decisions(tool=UNKNOWN) == []
    assert found(store, CANARY) == [] and found(store, UNKNOWN) == []
    assert found(store, "lookup") == [outcome.run_id]
    assert found(store, shown[UNKNOWN]) == [outcome.run_id]  # the digest is what was kept


@pytest.mark.parametrize("level", [PrivacyLevel.REDACTED, PrivacyLevel.FULL])
def test_redacted_and_full_keep_an_invented_name_as_it_was(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    outcome = invented_run(store)
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    calls = [s["tool_name"] for s in stored.steps if s["kind"] == "tool"]
    assert calls == ["lookup", UNKNOWN, "lookup", PAST_LIMIT, "delete_row", DENIED]
    assert tool_column(backend.url) == calls
    assert [r.tool for r in store.list_gate_decisions(reason="unknown_tool")] == [UNKNOWN]
    assert found(store, UNKNOWN) == [outcome.run_id]


def found(store: RunStore, words: str) -> list[str]:
    return [run.id for run in store.find_runs(RunQuery(search=words)).runs]
