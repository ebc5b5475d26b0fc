from __future__ import annotations

import asyncio
import threading
from typing import Any

from toolwire import RunOptions, RunStep, ScriptedProvider, ToolRegistry, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.policy.trace import RequestStep
from toolwire.runs.runtime import MemoryRecorder, RunOutcome, RunRequest, Runtime

from .fakes import call, only


class ListRecorder(MemoryRecorder):
    """A recorder that keeps everything in lists; ``fail_on`` makes one action raise."""

    def __init__(self, fail_on: str = "") -> None:
        super().__init__()
        self.fail_on = fail_on
        self.steps: list[tuple[str, int, str]] = []
        self.settled: list[RunOutcome] = []
        self.cancel_flags: set[str] = set()

    def begin(self, request: RunRequest) -> str:
        if self.fail_on == "begin":
            raise OSError("disk full")
        return "run-1"

    def record_step(self, run_id: str, sequence: int, step: RunStep) -> None:
        if self.fail_on == "step" and step.kind == "tool":
            raise OSError("disk full")
        self.steps.append((run_id, sequence, step.kind))

    def settle(self, outcome: RunOutcome) -> bool:
        self.settled.append(outcome)
        return True

    def cancel_requested(self, run_id: str) -> bool:
        return run_id in self.cancel_flags


@tool(data_class="public")
def double(n: int) -> str:
    return str(2 * n)


def script(*turns: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider.from_turns(list(turns))


def test_a_run_is_begun_recorded_in_sequence_and_settled_once() -> None:
    recorder = ListRecorder()
    runtime = Runtime(ToolRegistry([double]), recorder=recorder)
    provider = script({"tool_calls": [call("double", {"n": 2})]}, {"content": "4"})
    outcome = runtime.run_sync(RunRequest.of("double 2", provider=provider))
    assert outcome.status is RunStatus.COMPLETED
    assert outcome.result is not None and outcome.result.final_content == "4"
    assert outcome.run_id == "run-1"
    assert recorder.steps == [
        ("run-1", 1, "request"),
        ("run-1", 2, "llm"),
        ("run-1", 3, "tool"),
        ("run-1", 4, "request"),
        ("run-1", 5, "llm"),
    ]
    assert recorder.settled == [outcome]
    assert outcome.store_error is None


def test_a_store_failure_never_breaks_the_run_but_is_reported() -> None:
    recorder = ListRecorder(fail_on="step")
    runtime = Runtime(ToolRegistry([double]), recorder=recorder)
    provider = script({"tool_calls": [call("double", {"n": 2})]}, {"content": "4"})
    outcome = runtime.run_sync(RunRequest.of("double 2", provider=provider))
    assert outcome.status is RunStatus.COMPLETED
    assert outcome.store_error == "the run store failed; this run is not fully recorded"
    assert [k for _, _, k in recorder.steps] == ["request", "llm"]
    assert recorder.settled == [outcome]  # still settled, with the failure on it


def test_a_failed_begin_still_runs_with_a_fresh_id() -> None:
    outcome = Runtime(ToolRegistry(), recorder=ListRecorder(fail_on="begin")).run_sync(
        RunRequest.of("hi", provider=script({"content": "hello"}))
    )
    assert outcome.status is RunStatus.COMPLETED and len(outcome.run_id) == 32
    assert outcome.store_error is not None


def test_cancel_from_another_thread_aborts_a_slow_provider_call() -> None:
    runtime = Runtime(ToolRegistry([double]))
    provider = script({"content": "late", "delay_ms": 30_000})
    started = threading.Event()
    ids: list[str] = []

    def on_start(run_id: str) -> None:
        ids.append(run_id)
        started.set()

    def cancel_soon() -> None:
        started.wait(5)
        while not runtime.running():
            threading.Event().wait(0.01)
        assert runtime.cancel(ids[0])

    threading.Thread(target=cancel_soon).start()
    outcome = asyncio.run(runtime.run(RunRequest.of("hi", provider=provider), on_start=on_start))
    assert outcome.status is RunStatus.CANCELLED
    assert outcome.wall_ms < 10_000
    assert [s.kind for s in outcome.steps] == ["request"]


def test_cancel_requested_through_the_store_stops_at_the_next_step() -> None:
    recorder = ListRecorder()
    recorder.cancel_flags.add("run-1")
    provider = script({"tool_calls": [call("double", {"n": 2})]}, {"content": "4"})
    outcome = Runtime(ToolRegistry([double]), recorder=recorder).run_sync(
        RunRequest.of("x", provider=provider)
    )
    assert outcome.status is RunStatus.CANCELLED
    assert recorder.settled[0].status is RunStatus.CANCELLED
    assert recorder.steps == [("run-1", 1, "request")]  # the step that met the cancel is kept


def test_provider_failure_is_a_failed_run_with_a_safe_error() -> None:
    outcome = Runtime(ToolRegistry([double])).run_sync(
        RunRequest.of("x", provider=script({"tool_calls": [call("double", {"n": 1})]}))
    )
    assert outcome.status is RunStatus.FAILED
    assert outcome.error == "the provider call failed: ScriptExhausted"


def test_dry_run_records_the_request_and_calls_nothing() -> None:
    outcome = Runtime(ToolRegistry([double])).run_sync(
        RunRequest.of("x", provider=script(), options=RunOptions(dry_run=True))
    )
    assert outcome.status is RunStatus.DRY_RUN  # not stored as completed: nothing was sent
    assert [s.kind for s in outcome.steps] == ["request"]
    assert only(outcome.steps[0], RequestStep).tool_specs == ("double",)


def where_registry(threads: list[str]) -> ToolRegistry:
    @tool(data_class="public")
    def where() -> str:
        threads.append(threading.current_thread().name)
        return "here"

    return ToolRegistry([where])


def one_call() -> ScriptedProvider:
    return script({"tool_calls": [call("where")]}, {"content": "done"})


def test_run_sync_runs_a_sync_tool_on_the_thread_of_its_own_event_loop() -> None:
    threads: list[str] = []
    runtime = Runtime(where_registry(threads))
    outcome = runtime.run_sync(RunRequest.of("x", provider=one_call()))
    assert outcome.status is RunStatus.COMPLETED
    assert threads == [threading.current_thread().name]  # asyncio.run's loop runs right here


def test_a_run_beside_another_task_runs_a_sync_tool_in_the_worker_pool() -> None:
    threads: list[str] = []
    runtime = Runtime(where_registry(threads))

    async def beside() -> RunOutcome:
        other = asyncio.ensure_future(asyncio.sleep(10))  # another run's task, say
        try:
            return await runtime.run(RunRequest.of("x", provider=one_call()))
        finally:
            other.cancel()

    alone = asyncio.run(runtime.run(RunRequest.of("x", provider=one_call())))
    shared = asyncio.run(beside())
    assert alone.status is shared.status is RunStatus.COMPLETED
    assert threads[0] == threading.current_thread().name
    assert threads[1].startswith("toolwire-tool")
