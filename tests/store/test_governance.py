"""The governance log as the store keeps it, on SQLite and PostgreSQL: one row per gate
decision of a scripted run, with the right gate, reason, actor and tool; filters; no content."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from toolwire import ScriptedProvider
from toolwire.core.jsonenc import dumps
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..governed import EXPECTED, NOPE, governed_run
from .conftest import Backend
from .helpers import run
from .test_context_steps import looking_up


def rows(store: RunStore, **filters: object) -> list[tuple[object, ...]]:
    found = store.list_gate_decisions(limit=1000, **filters)  # type: ignore[arg-type]
    return [(r.gate, r.reason, r.actor, r.tool) for r in reversed(found)]


def test_each_refusal_of_a_scripted_run_is_a_row_with_its_reason(store: RunStore) -> None:
    waiting, ended = governed_run(store)
    assert waiting.run_id == ended.run_id
    assert rows(store) == EXPECTED
    logged = store.list_gate_decisions()
    assert {r.run_id for r in logged} == {ended.run_id}
    by_reason = {r.reason: r for r in logged}
    assert (
        by_reason["trust_zone"].detail
        == "data class secret_adjacent is above the external_global ceiling"
    )
    assert (
        by_reason["denied"].sequence is not None and by_reason["budget_exhausted"].sequence is None
    )
    assert by_reason["budget_exhausted"].detail == "after 4 rounds, 110 tokens"
    assert by_reason["too_many_calls"].round == 1 and by_reason["not_an_object"].round == 2
    approval = next(r for r in logged if r.gate == "approval")
    assert approval.detail is not None and approval.detail.startswith("turn ")
    stored = store.get_run(ended.run_id)
    assert stored is not None
    steps = {s["sequence"]: s for s in stored.steps}
    assert steps[by_reason["unknown_tool"].sequence]["tool_name"] == NOPE


def test_the_log_filters_by_tool_reason_run_and_time(store: RunStore) -> None:
    _, ended = governed_run(store)
    other = run(store)  # an ordinary run: no gate refused anything
    assert rows(store, run_id=other.run_id) == []
    assert rows(store, tool="lookup") == [
        ("call", "too_many_calls", "runtime", "lookup"),
        ("call", "not_an_object", "runtime", "lookup"),
    ]
    assert rows(store, reason="denied") == [
        ("approval", "denied", "ann", None), ("call", "denied", "ann", "delete_row"),
    ]  # fmt: skip
    assert rows(store, reason="denied", tool="delete_row", run_id=ended.run_id) == [
        ("call", "denied", "ann", "delete_row"),
    ]
    assert rows(store, since=datetime.now(UTC) + timedelta(minutes=1)) == []
    assert len(rows(store, since=datetime.now(UTC) - timedelta(minutes=5))) == len(EXPECTED)
    newest = store.list_gate_decisions(limit=2)
    assert [r.reason for r in newest] == ["budget_exhausted", "denied"]
    assert [r.reason for r in store.list_gate_decisions(limit=1, offset=1)] == ["denied"]
    assert rows(store, run_id="not a run id!") == []
    assert rows(store, tool="a\x00b") == []  # PostgreSQL would refuse a NUL: it is replaced


def test_context_cut_offs_are_rows(store: RunStore) -> None:
    dropped = run(store, ScriptedProvider(looking_up), max_rounds=10, context_window=1000,
                  max_tokens=50)  # fmt: skip
    full = run(store, ScriptedProvider(looking_up), context_window=10)
    truncations = store.list_gate_decisions(run_id=dropped.run_id)
    assert truncations and {(r.gate, r.reason, r.actor) for r in truncations} == {
        ("context", "context_truncated", "runtime")
    }
    assert all(r.detail is not None and "-token window" in r.detail for r in truncations)
    (ending,) = store.list_gate_decisions(run_id=full.run_id)
    assert (ending.gate, ending.reason, ending.detail) == (
        "context", "context_full", "after 0 rounds, 0 tokens",
    )  # fmt: skip


@pytest.mark.parametrize("level", [PrivacyLevel.METADATA, PrivacyLevel.FULL])
def test_rows_hold_no_content_at_any_level(backend: Backend, level: PrivacyLevel) -> None:
    store = backend.open(level)
    governed_run(store, prompt="prompt-canary-7f3a")
    logged = dumps([r.to_dict() for r in store.list_gate_decisions()])
    assert "canary" not in logged and "found a" not in logged


def test_purging_a_run_purges_its_rows(store: RunStore) -> None:
    governed_run(store)
    assert store.list_gate_decisions()
    assert store.purge(older_than_days=0) == 1
    assert store.list_gate_decisions() == []


def test_a_limit_outside_a_page_is_refused(store: RunStore) -> None:
    with pytest.raises(ValueError, match="limit must be between 1 and 1000"):
        store.list_gate_decisions(limit=0)
    with pytest.raises(ValueError, match="offset must be 0 or more"):
        store.list_gate_decisions(offset=-1)
