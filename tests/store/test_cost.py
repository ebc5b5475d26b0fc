"""A run's cost in the store: kept at every privacy level, summed from the recorded calls when
the run did not finish, and added to a database of the schema before it (v2) in place."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import Column, MetaData, Table, create_engine, insert, select

from toolwire import RunOptions, ScriptedProvider
from toolwire.core.lifecycle import RunStatus
from toolwire.loop.loop import LoopResult, TerminationReason
from toolwire.policy.pricing import Cost
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import LlmStep, RequestStep, RunStep
from toolwire.providers.base import CompletionResponse, Usage
from toolwire.runs.runtime import RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.store import schema as tables
from toolwire.store.engine import resolve_url
from toolwire.store.migrations import LATEST

from ..fakes import PricedModel
from .conftest import Backend
from .helpers import registry, run

ANSWER = CompletionResponse(
    content="priced answer",
    usage=Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000),
    model="gpt-4o-mini",
)


def _priced_run(store: RunStore) -> RunOutcome:
    request = RunRequest.of("what?", provider=PricedModel(ANSWER), model="gpt-4o-mini",
                            options=RunOptions(allowed_tools=[]))  # fmt: skip
    return Runtime(registry(), recorder=store).run_sync(request)


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_a_priced_run_keeps_its_cost_at_every_privacy_level(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    outcome = _priced_run(store)
    assert outcome.result is not None and outcome.result.cost.complete
    expected = float(outcome.result.cost.usd)
    assert expected > 0  # a million tokens each way costs something
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    assert stored.cost == pytest.approx(expected) and stored.cost_complete is True
    listed = store.list_runs(limit=1)[0]
    assert listed.cost == pytest.approx(expected) and listed.cost_complete is True
    assert [s.get("cost") for s in stored.steps if s["kind"] == "llm"] == [pytest.approx(expected)]


def test_a_run_without_prices_says_its_cost_is_incomplete(store: RunStore) -> None:
    outcome = run(store)
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    assert (stored.cost, stored.cost_complete) == (0.0, False)


def _unfinished(run_id: str, status: RunStatus, steps: Sequence[RunStep]) -> RunOutcome:
    return RunOutcome(run_id=run_id, status=status, result=None, steps=tuple(steps), wall_ms=1.0)


@pytest.mark.parametrize("status", [RunStatus.FAILED, RunStatus.CANCELLED])
def test_an_unfinished_run_costs_what_its_recorded_calls_cost(
    store: RunStore, status: RunStatus
) -> None:
    run_id = store.begin(RunRequest.of("q", provider=ScriptedProvider([])))
    steps: list[RunStep] = [
        RequestStep(round=1),
        LlmStep(round=1, cost=0.25),
        LlmStep(round=2, cost=0.5),
    ]
    assert store.settle(_unfinished(run_id, status, steps))
    stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.status, stored.cost, stored.cost_complete) == (str(status), 0.75, True)


def test_an_unfinished_run_with_an_unpriced_call_has_a_floor(store: RunStore) -> None:
    run_id = store.begin(RunRequest.of("q", provider=ScriptedProvider([])))
    steps: list[RunStep] = [LlmStep(round=1, cost=0.125), LlmStep(round=2)]
    store.settle(_unfinished(run_id, RunStatus.FAILED, steps))
    stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.cost, stored.cost_complete) == (0.125, False)


def test_a_completed_outcome_stores_the_loop_result_cost_exactly(store: RunStore) -> None:
    run_id = store.begin(RunRequest.of("q", provider=ScriptedProvider([])))
    result = LoopResult(final_content="a", trace=(), iterations=1, truncated=False,
                        reason=TerminationReason.COMPLETED, usage=Usage(),
                        cost=Cost(Decimal("0.0123"), complete=True))  # fmt: skip
    outcome = RunOutcome(run_id=run_id, status=RunStatus.COMPLETED, result=result, steps=(),
                         wall_ms=1.0)  # fmt: skip
    store.settle(outcome)
    stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.cost, stored.cost_complete) == (0.0123, True)


V2_RUN_ROW = {
    "id": "00000000-0000-4000-8000-000000000002",
    "status": "completed",
    "privacy_level": "full",
    "termination_reason": "completed",
    "truncated": False,
    "rounds": 2,
    "prompt_tokens": 7,
    "completion_tokens": 3,
    "final_answer": "from the old schema",
    "final_answer_length": 19,
    "cancel_requested": False,
    "settled": True,
    "provider": "scripted",
    "script": "/tmp/old.yaml",
}


def _create_v2(url: str) -> None:
    """A database exactly as schema version 2 left it: today's tables without the cost."""
    old = MetaData()
    for table in (tables.runs, tables.steps, tables.tool_state, tables.tool_group_state,
                  tables.schema_version):  # fmt: skip
        columns = [
            Column(
                c.name,
                c.type,
                primary_key=c.primary_key,
                nullable=c.nullable,
                unique=c.unique,
                autoincrement=c.autoincrement,
            )
            for c in table.columns
            if c.name not in tables.COST_COLUMNS
        ]
        Table(table.name, old, *columns)
    engine = create_engine(resolve_url(url))
    with engine.begin() as connection:
        old.create_all(connection)
        connection.execute(
            insert(old.tables["runs"]).values(**V2_RUN_ROW, created_at=datetime.now(UTC))
        )
        connection.execute(
            insert(old.tables["steps"]).values(
                run_id=V2_RUN_ROW["id"],
                sequence=1,
                kind="llm",
                round=1,
                duration_ms=1.5,
                payload='{"kind":"llm","round":1}',
            )
        )
        connection.execute(insert(old.tables["schema_version"]).values(version=2))
    engine.dispose()


def test_a_v2_database_gains_the_cost_columns_and_keeps_its_rows(backend: Backend) -> None:
    _create_v2(backend.url)
    store = backend.open()
    old = store.get_run(str(V2_RUN_ROW["id"]))
    assert old is not None
    assert (old.final_answer, old.rounds, old.prompt_tokens, old.step_count) == (
        "from the old schema",
        2,
        7,
        1,
    )
    assert (old.cost, old.cost_complete) == (None, None)  # never known
    assert old.steps == [{"sequence": 1, "kind": "llm", "round": 1}]
    fresh = _priced_run(store)
    stored = store.get_run(fresh.run_id)
    assert stored is not None and stored.cost is not None and stored.cost > 0
    engine = create_engine(store.url)
    with engine.connect() as connection:
        version = connection.execute(select(tables.schema_version.c.version)).scalars().all()
    engine.dispose()
    assert version == [LATEST] == [15]


def test_a_resumed_run_that_fails_costs_every_segments_calls(store: RunStore) -> None:
    run_id = store.begin(RunRequest.of("q", provider=ScriptedProvider([])))
    first: list[RunStep] = [RequestStep(round=1), LlmStep(round=1, cost=0.25)]
    for sequence, step in enumerate(first, start=1):  # the segment before the pause
        store.record_step(run_id, sequence, step)
    second: list[RunStep] = [RequestStep(round=2), LlmStep(round=2, cost=0.5)]
    for sequence, step in enumerate(second, start=3):  # the resumed segment, which fails
        store.record_step(run_id, sequence, step)
    store.settle(_unfinished(run_id, RunStatus.FAILED, second))
    stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.cost, stored.cost_complete) == (0.75, True)
