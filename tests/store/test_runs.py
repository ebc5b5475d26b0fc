from __future__ import annotations

import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import create_engine, select, update

from toolwire import (
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
)
from toolwire.core.errors import StoreError
from toolwire.core.lifecycle import RunStatus
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import RequestStep
from toolwire.providers.scripted import Turn
from toolwire.runs.runtime import RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore, liveness
from toolwire.store import schema as tables
from toolwire.store.migrations import LATEST

from .conftest import Backend
from .helpers import lookup, run, two_round_script


def test_a_run_is_stored_with_its_steps_in_sequence(store: RunStore) -> None:
    outcome = run(store)
    assert outcome.status is RunStatus.COMPLETED and outcome.store_error is None
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    assert [(s["sequence"], s["kind"], s["round"]) for s in stored.steps] == [
        (1, "request", 1),
        (2, "llm", 1),
        (3, "tool", 1),
        (4, "request", 2),
        (5, "llm", 2),
    ]
    summary = stored.summary.to_dict()
    assert datetime.fromisoformat(summary.pop("created_at")).tzinfo == UTC
    assert datetime.fromisoformat(summary.pop("finished_at")).tzinfo == UTC
    assert 0 < summary.pop("duration_ms") < 60_000
    options = summary.pop("options")
    assert options == {**RunOptions().to_dict(), "dry_run": False}
    assert summary == {
        "id": outcome.run_id,
        "status": "completed",
        "provider": "scripted",
        "model": "m-1",
        "privacy_level": "metadata",
        "termination_reason": "completed",
        "truncated": False,
        "rounds": 2,
        "prompt_tokens": 11,
        "completion_tokens": 5,
        "final_answer": None,
        "final_answer_length": 8,
        "error": None,
        "step_count": 5,
        "cancel_requested": False,
        "cost": 0.0,  # the scripted model has no price: nothing known, so a floor of 0
        "cost_complete": False,
        "queued": False,  # run in this process, not by a queue worker
        "stalls": 0,
        "rerun_of": None,
        "tool_errors": 0,
        "tokens_known": True,  # the script reported its usage
        "cost_estimated": False,  # ... so no price came from an estimate
    }
    assert stored.steps[2] == {
        "sequence": 3,
        "kind": "tool",
        "round": 1,
        "duration_ms": stored.steps[2]["duration_ms"],
        "start_ms": outcome.steps[2].start_ms,  # a time is metadata: kept at every level
        "tool_call_id": "call_1_1",
        "tool_name": "lookup",
        "tool_is_error": False,
        "tool_result_length": len("found orders"),
        "tool_artifacts_count": 1,
        "tool_artifact_types": ["table"],
        "tool_arguments_keys_count": 1,
        "tool_integrity": "untrusted",  # a tool that declares none: metadata at every level
        "content_withheld": True,
    }


def test_runs_are_listed_newest_first_with_paging(store: RunStore) -> None:
    ids = [run(store).run_id for _ in range(3)]
    assert [r.id for r in store.list_runs()] == ids[::-1]
    assert [r.id for r in store.list_runs(limit=1, offset=1)] == [ids[1]]
    assert store.list_runs(offset=3) == []
    with pytest.raises(ValueError, match="limit must be between 1 and 1000, not 0"):
        store.list_runs(limit=0)
    assert store.get_run("no-such-run") is None


def test_a_run_settles_once(store: RunStore) -> None:
    outcome = run(store)
    late = RunOutcome(
        run_id=outcome.run_id,
        status=RunStatus.FAILED,
        result=None,
        steps=(),
        wall_ms=1.0,
        error="late",
    )
    assert store.settle(late) is False
    stored = store.get_run(outcome.run_id)
    assert stored is not None and (stored.status, stored.error) == ("completed", None)


def test_a_cancel_round_trips_and_wins_over_a_later_settle(store: RunStore) -> None:
    run_id = store.begin(RunRequest.of("x", provider=two_round_script()))
    assert store.cancel_requested(run_id) is False
    assert store.request_cancel(run_id) is True
    assert store.cancel_requested(run_id) is True
    assert store.request_cancel(run_id) is False  # no longer running
    assert store.request_cancel("no-such-run") is False
    done = RunOutcome(run_id=run_id, status=RunStatus.COMPLETED, result=None, steps=(), wall_ms=1.0)
    assert store.settle(done) is True
    assert store.settle(done) is False
    stored = store.get_run(run_id)
    assert stored is not None and stored.status == "cancelled" and stored.cancel_requested


def test_a_cancel_through_another_store_aborts_the_call_in_flight(backend: Backend) -> None:
    store, other = backend.open(), backend.open()

    def respond(messages: object) -> Turn:
        (running,) = [r for r in other.list_runs() if r.status == "running"]
        assert other.request_cancel(running.id)
        # An answer that comes late: the call is in flight when the cancel is polled for.
        calls = [{"name": "lookup", "arguments": {"query": "q"}}]
        return _turn({"content": "", "tool_calls": calls, "delay_ms": 30_000})

    outcome = run(store, ScriptedProvider(respond))
    assert outcome.status is RunStatus.CANCELLED
    stored = store.get_run(outcome.run_id)
    assert stored is not None and stored.status == "cancelled"
    # The call in flight when the cancel came has no answer step, and no tool ran.
    assert [s["kind"] for s in stored.steps] == ["request"]
    assert [s.kind for s in outcome.steps] == ["request"]


def test_a_cancel_through_the_same_store_is_seen_at_once(store: RunStore) -> None:
    run_id = store.begin(RunRequest.of("x", provider=two_round_script()))
    assert store.cancel_requested(run_id) is False
    assert store.request_cancel(run_id) is True
    assert store.cancel_requested(run_id) is True  # no waiting for the next poll


def _turn(data: dict[str, object]) -> Turn:
    return Turn.model_validate(data)


def test_sequence_numbers_are_unique_and_increasing(backend: Backend) -> None:
    store = backend.open()
    run_id = store.begin(RunRequest.of("x", provider=two_round_script()))
    step = RequestStep(round=1)
    store.record_step(run_id, 1, step)
    store.record_step(run_id, 2, step)
    with pytest.raises(
        StoreError, match=f"step sequence 2 of run {run_id} is not after the last one \\(2\\)"
    ):
        store.record_step(run_id, 2, step)
    with pytest.raises(StoreError, match="is not after the last one"):
        store.record_step(run_id, 1, step)
    # Another store (another process) knows nothing in memory: the table key still refuses
    # it, and the failure of a step written behind the run is reported to its next call.
    store.flush()
    other = backend.open()
    other.record_step(run_id, 2, step)
    with pytest.raises(
        StoreError, match=f"the run store could not record step 2 of run {run_id}: "
    ):
        other.settle(_outcome(run_id))
    stored = store.get_run(run_id)
    assert stored is not None and [s["sequence"] for s in stored.steps] == [1, 2]


def test_a_step_for_an_unknown_run_is_refused(store: RunStore) -> None:
    store.record_step("nope", 1, RequestStep(round=1))
    with pytest.raises(StoreError, match="the run store could not record step 1 of run nope: "):
        store.settle(_outcome("nope"))
    assert store.settle(_outcome("nope")) is False  # each failure is reported once


def _outcome(run_id: str) -> RunOutcome:
    return RunOutcome(run_id=run_id, status=RunStatus.COMPLETED, result=None, steps=(), wall_ms=0.0)


def test_purge_deletes_old_finished_runs_and_their_steps(backend: Backend) -> None:
    store = backend.open()
    old, recent = run(store).run_id, run(store).run_id
    running = store.begin(RunRequest.of("x", provider=two_round_script()))
    engine = create_engine(backend.url if "://" in backend.url else f"sqlite:///{backend.url}")
    with engine.begin() as connection:
        ten_days_ago = datetime.now(UTC) - timedelta(days=10)
        connection.execute(
            update(tables.runs)
            .where(tables.runs.c.id.in_([old, running]))
            .values(created_at=ten_days_ago)
        )
    assert store.purge(older_than_days=5) == 1
    assert store.get_run(old) is None
    assert store.get_run(recent) is not None and store.get_run(running) is not None
    with engine.connect() as connection:
        left = connection.execute(select(tables.steps.c.run_id).distinct()).scalars().all()
    engine.dispose()
    assert left == [recent]
    assert store.purge(older_than_days=0) == 1  # the recent one; never a running run
    assert [r.id for r in store.list_runs()] == [running]
    with pytest.raises(ValueError, match="older_than_days must be 0 or more days, not -1"):
        store.purge(older_than_days=-1)


def test_availability_overrides_round_trip_with_the_cascade(store: RunStore) -> None:
    store.set_tool_state("lookup", False)
    store.set_group_state("records", False)
    store.set_tool_state("other", True)
    availability = store.load_availability()
    assert (availability.tools, availability.groups) == (
        {"lookup": False, "other": True},
        {"records": False},
    )
    store.set_tool_state("lookup", True)
    registry = ToolRegistry([lookup], availability=store.load_availability())
    assert registry.is_enabled("lookup") is False  # a tool override cannot beat its group
    store.set_group_state("records", None)
    registry = ToolRegistry([lookup], availability=store.load_availability())
    assert registry.is_enabled("lookup") is True
    store.set_tool_state("lookup", None)
    store.set_tool_state("other", None)
    availability = store.load_availability()
    assert (availability.tools, availability.groups) == ({}, {})
    with pytest.raises(ValueError, match="a tool name must be 1 to 255 characters long"):
        store.set_tool_state("", True)


def test_migrations_are_idempotent_on_reopen(backend: Backend) -> None:
    first = backend.open()
    run_id = run(first).run_id
    first.close()
    second = backend.open()
    second.close()
    third = backend.open()
    assert third.get_run(run_id) is not None
    engine = create_engine(third.url)
    with engine.connect() as connection:
        assert connection.execute(select(tables.schema_version.c.version)).scalars().all() == [
            LATEST
        ]
    with engine.begin() as connection:
        connection.execute(update(tables.schema_version).values(version=LATEST + 1))
    engine.dispose()
    with pytest.raises(
        StoreError, match=f"schema is version {LATEST + 1}, newer than this toolwire knows"
    ):
        backend.open()


def test_threads_record_runs_concurrently(store: RunStore) -> None:
    outcomes: list[RunOutcome] = []
    lock = threading.Lock()

    def one(n: int) -> None:
        outcome = run(store, two_round_script(query=f"q{n}"))
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=one, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {o.store_error for o in outcomes} == {None}
    assert sorted(r.step_count for r in store.list_runs()) == [5] * 6


def test_an_unwritable_path_is_a_clear_error(tmp_path: object) -> None:
    from pathlib import Path

    blocker = Path(str(tmp_path)) / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(StoreError) as caught:
        RunStore.open(str(blocker / "runs.db"))
    assert str(caught.value) == f"cannot create the store directory {blocker}: a file is in the way"


def test_bad_urls_are_clear_errors_without_secrets() -> None:
    with pytest.raises(StoreError, match="unsupported store URL scheme 'mysql'"):
        RunStore.open("mysql://root@localhost/db")
    with pytest.raises(StoreError, match=r"^an in-memory SQLite store would be a different"):
        RunStore.open("sqlite://")
    with pytest.raises(StoreError) as caught:
        RunStore.open("postgresql+psycopg://me:topsecret@127.0.0.1:1/nowhere")
    assert str(caught.value).startswith(
        "the run store could not open postgresql+psycopg://me:***@127.0.0.1:1/nowhere: "
    )
    assert "topsecret" not in str(caught.value)


def test_a_store_failure_mid_run_leaves_the_run_going(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "runs.db"
    store = RunStore.open(str(path))
    store.close()
    path.unlink()
    Path(f"{path}-wal").unlink(missing_ok=True)
    path.mkdir()  # the database is now a directory: every write fails
    outcome = Runtime(ToolRegistry([lookup]), recorder=store).run_sync(
        RunRequest.of("x", provider=two_round_script())
    )
    assert outcome.status is RunStatus.COMPLETED
    assert outcome.store_error == "the run store failed; this run is not fully recorded"


def test_only_runs_of_dead_processes_on_this_host_are_interrupted(backend: Backend) -> None:
    store = backend.open()
    ids = [store.begin(RunRequest.of("x", provider=two_round_script())) for _ in range(4)]
    host = liveness.host_identity()
    me = liveness.this_process()
    dead_pid = _a_dead_pid()
    owners = {
        ids[0]: {"owner_host": host, "owner_pid": dead_pid},  # gone: interrupted
        ids[1]: {"owner_host": host, "owner_pid": me.pid, "owner_started": "1"},  # pid reused
        ids[2]: {"owner_host": "elsewhere", "owner_pid": dead_pid},  # cannot tell: left alone
        ids[3]: {},  # this very process: alive
    }
    engine = create_engine(store.url)
    with engine.begin() as connection:
        for run_id, values in owners.items():
            if values:
                connection.execute(
                    update(tables.runs).where(tables.runs.c.id == run_id).values(**values)
                )
    engine.dispose()
    reopened = backend.open()
    statuses = {r.id: r.status for r in reopened.list_runs()}
    assert [statuses[i] for i in ids] == ["interrupted", "interrupted", "running", "running"]


def _a_dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize("level", [PrivacyLevel.FULL, PrivacyLevel.REDACTED])
def test_hostile_model_output_is_stored_not_lost(backend: Backend, level: PrivacyLevel) -> None:
    """Lone surrogates and NUL in the answer, NaN in a raw body: the run is kept whole."""
    store = backend.open(level)
    answer = "done \udc80 with a NUL \x00 inside"
    calls = (ToolCall("c1", "lookup", '{"query": "q"}'),)
    turns = iter(
        [
            CompletionResponse(tool_calls=calls, raw={"score": float("nan")}),
            CompletionResponse(content=answer, raw={"inf": float("inf")}),
        ]
    )
    provider = ScriptedProvider(lambda messages: next(turns))
    request = RunRequest.of(
        "q", provider=provider, options=RunOptions(capture_raw=True), model="m\x00\ud800"
    )
    outcome = Runtime(ToolRegistry([lookup]), recorder=store).run_sync(request)
    assert outcome.status is RunStatus.COMPLETED and outcome.store_error is None
    stored = store.get_run(outcome.run_id)
    assert stored is not None and stored.status == "completed"
    assert [s["kind"] for s in stored.steps] == ["request", "llm", "tool", "request", "llm"]
    assert stored.steps[1]["raw"] == {"score": "nan"}
    assert stored.final_answer == "done \ufffd with a NUL \ufffd inside"
    assert stored.model == "m\ufffd\ufffd"


@pytest.mark.parametrize("run_id", ["\x00", "a\x00b", "\udc80", "x" * 65, "' OR 1=1 --", ""])
def test_ids_that_cannot_name_a_run_are_not_found(store: RunStore, run_id: str) -> None:
    assert store.get_run(run_id) is None
    assert store.request_cancel(run_id) is False


def test_a_waiting_run_keeps_its_servers_output_cap_field_for_the_resume(store: RunStore) -> None:
    from toolwire.core.lifecycle import RunStatus as Status
    from toolwire.providers.openai import OpenAIProvider
    from toolwire.runs.runtime import RunRequest as Request
    from toolwire.runs.runtime import provider_from_ref

    local = OpenAIProvider(
        model="llama", api_key="", base_url="http://127.0.0.1:9/v1", max_tokens_field="max_tokens"
    )
    run_id = store.begin(Request.of("hi", provider=local, model="llama"))
    assert store.suspend(run_id, Status.AWAITING_APPROVAL, lambda _: "tw2:1:0:sealed", "d" * 32)
    waiting = store.waiting(run_id)
    assert waiting is not None and waiting.provider.max_tokens_field == "max_tokens"
    rebuilt = provider_from_ref(waiting.provider)
    assert isinstance(rebuilt, OpenAIProvider)
    assert (rebuilt.max_tokens_field, rebuilt.base_url) == ("max_tokens", "http://127.0.0.1:9/v1")
