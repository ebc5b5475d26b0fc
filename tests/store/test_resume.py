"""Suspended runs in a real store: killed between suspend and resume, racing resumes from two
processes, no plaintext of the state at rest, and cancel of a waiting run."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from toolwire import ScriptedProvider, ToolRegistry, tool
from toolwire.core.errors import RunNotWaiting
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore

from . import resume_kit
from .conftest import Backend
from .resume_kit import Kit, answer, run_columns, step_payloads

CANARY = "canary-7f3e9a1d"
EXECUTED = ["note 0", "mark 1", "note 2"]


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)  # no atexit, no flush, no settle: only the store survives
    proc.communicate(timeout=resume_kit.WAIT_SECONDS)  # reaps it and closes its pipe


def test_a_run_killed_while_waiting_is_resumed_by_a_new_process(tmp_path: Path) -> None:
    kit = Kit.make(tmp_path)
    url = str(tmp_path / "runs.db")
    proc, suspended = kit.suspend(url)
    assert suspended["status"] == "awaiting_approval"
    assert kit.marks() == ["note 0"]  # round 1 ran; the paused turn did not
    kill(proc)
    assert proc.returncode == -signal.SIGKILL
    row = run_columns(url, suspended["run_id"])
    assert row["status"] == "awaiting_approval" and row["script"] == str(tmp_path / "script.json")

    (resumer,) = kit.resume(url, suspended["run_id"], suspended["digest"])
    assert answer(resumer) == {"status": "completed", "answer": "finished", "iterations": 3}
    assert kit.marks() == EXECUTED
    first, *rest = kit.marker.read_text().splitlines()
    assert first.endswith(str(proc.pid)) and all(line.endswith(str(resumer.pid)) for line in rest)
    with RunStore.open(url) as store:
        run = store.get_run(suspended["run_id"])
        assert run is not None
        assert (run.status, run.rounds, run.prompt_tokens, run.completion_tokens) == (
            "completed", 3, 13, 7
        )  # fmt: skip
        assert [(s["kind"], s["round"]) for s in run.steps] == [
            ("request", 1), ("llm", 1), ("tool", 1), ("request", 2), ("llm", 2),
            ("decision", 2), ("tool", 2), ("tool", 2), ("request", 3), ("llm", 3),
        ]  # fmt: skip
        assert [s["sequence"] for s in run.steps] == list(range(1, 11))
    row = run_columns(url, suspended["run_id"])
    assert row["suspended_state"] is None and row["pending_digest"] is None


def test_two_racing_resumes_execute_the_pending_turn_once(tmp_path: Path, backend: Backend) -> None:
    kit = Kit.make(tmp_path)
    proc, suspended = kit.suspend(backend.url)
    kill(proc)
    racers = kit.resume(backend.url, suspended["run_id"], suspended["digest"], parties=2)
    results = [(p, answer(p)) for p in racers]
    winners = [p for p, found in results if "status" in found]
    assert len(winners) == 1
    assert sorted(str(found) for _, found in results) == sorted(
        [
            str({"status": "completed", "answer": "finished", "iterations": 3}),
            str({"error": "StaleDecision",
                 "message": "another decision on this turn was taken first"}),
        ]
    )  # fmt: skip
    assert kit.marks() == EXECUTED
    resumed = kit.marker.read_text().splitlines()[1:]
    assert {line.split()[-1] for line in resumed} == {str(winners[0].pid)}
    assert run_columns(backend.url, suspended["run_id"])["status"] == "completed"


# -- no plaintext at rest ----------------------------------------------------------------------


def start_waiting(store: RunStore, key: StateKey, prompt: str) -> tuple[Runtime, str, str]:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "note", "arguments": {"n": 0}}]},
        {"tool_calls": [{"name": "mark", "arguments": {"n": 1, "text": CANARY}}]},
        {"content": "finished"},
    ]
    runtime = Runtime(marking_registry(), recorder=store, state_key=key)
    request = RunRequest.of(prompt, provider=ScriptedProvider.from_turns(turns))
    outcome = runtime.run_sync(request)
    assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
    return runtime, outcome.run_id, outcome.pause.digest


def marking_registry() -> ToolRegistry:
    @tool(name="mark", data_class="public", requires_approval=True)
    def mark(n: int, text: str = "") -> str:
        return f"marked {n}"

    @tool(name="note", data_class="public")
    def note(n: int) -> str:
        return f"noted {n}"

    return ToolRegistry([mark, note])


def test_at_full_the_suspended_state_holds_no_plaintext(backend: Backend) -> None:
    store = backend.open(PrivacyLevel.FULL)
    runtime, run_id, digest = start_waiting(store, StateKey.generate(), f"prompt {CANARY}")
    sealed = run_columns(backend.url, run_id)["suspended_state"]
    assert isinstance(sealed, str) and sealed.startswith("tw2:")
    assert CANARY not in sealed and "prompt" not in sealed and "mark" not in sealed
    assert any(CANARY in payload for payload in step_payloads(backend.url, run_id))
    decision = OperatorDecision(action="approve", digest=digest, actor="ops")
    provider = ScriptedProvider.from_turns([{}, {}, {"content": "finished"}])
    done = runtime.resume_sync(run_id, decision, provider=provider)
    assert done.status is RunStatus.COMPLETED
    row = run_columns(backend.url, run_id)
    assert row["suspended_state"] is None and row["pending_digest"] is None


def test_at_metadata_the_canary_is_nowhere_in_the_database(backend: Backend) -> None:
    store = backend.open(PrivacyLevel.METADATA)
    runtime, run_id, digest = start_waiting(store, StateKey.generate(), f"prompt {CANARY}")
    store.flush()
    assert CANARY.encode() not in backend.raw_bytes()
    decision = OperatorDecision(action="approve", digest=digest, actor="ops")
    provider = ScriptedProvider.from_turns([{}, {}, {"content": f"answer {CANARY}"}])
    assert runtime.resume_sync(run_id, decision, provider=provider).status is RunStatus.COMPLETED
    store.flush()
    assert CANARY.encode() not in backend.raw_bytes()
    row = run_columns(backend.url, run_id)
    assert row["suspended_state"] is None and row["pending_digest"] is None


# -- cancel ----------------------------------------------------------------------------------


def test_a_cancelled_waiting_run_settles_cancelled_and_cannot_resume(backend: Backend) -> None:
    store = backend.open()
    runtime, run_id, digest = start_waiting(store, StateKey.generate(), "go")
    assert [r.id for r in store.list_runs(waiting=True)] == [run_id]
    assert store.request_cancel(run_id)
    assert not store.request_cancel(run_id)
    row = run_columns(backend.url, run_id)
    assert (row["status"], row["suspended_state"], row["pending_digest"]) == (
        "cancelled", None, None
    )  # fmt: skip
    assert row["settled"] and row["termination_reason"] == "cancelled"
    assert store.list_runs(waiting=True) == []
    decision = OperatorDecision(action="approve", digest=digest, actor="ops")
    with pytest.raises(RunNotWaiting):
        runtime.resume_sync(run_id, decision, provider=ScriptedProvider.from_turns([]))
    with pytest.raises(RunNotWaiting):
        runtime.pending(run_id)


def test_a_run_whose_steps_could_not_be_stored_fails_instead_of_waiting(
    backend: Backend,
) -> None:
    from sqlalchemy import create_engine, insert

    from toolwire.store import schema
    from toolwire.store.engine import resolve_url

    store = backend.open()
    engine = create_engine(resolve_url(backend.url))

    def occupy_a_step(run_id: str) -> None:  # the llm step's sequence is taken: its row fails
        with engine.begin() as connection:
            connection.execute(insert(schema.steps).values(
                run_id=run_id, sequence=2, kind="llm", round=1, duration_ms=0.0, payload="{}"
            ))  # fmt: skip

    runtime = Runtime(marking_registry(), recorder=store, state_key=StateKey.generate())
    turns: list[dict[str, Any]] = [{"tool_calls": [{"name": "mark", "arguments": {"n": 1}}]}]
    request = RunRequest.of("go", provider=ScriptedProvider.from_turns(turns))
    outcome = asyncio.run(runtime.run(request, on_start=occupy_a_step))
    engine.dispose()
    assert outcome.status is RunStatus.FAILED
    assert outcome.error == "the run could not be suspended: the run store failed; this run " \
        "is not fully recorded"  # fmt: skip
    row = run_columns(backend.url, outcome.run_id)
    assert (row["status"], row["suspended_state"], row["pending_digest"]) == ("failed", None, None)
    assert store.waiting(outcome.run_id) is None
