"""The calls of one turn: concurrency, order, sequential-only tools, cancellation."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from toolwire import ChatMessage, RunOptions, ToolLoop, ToolRegistry, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.policy.trace import RunTrace, ToolStep
from toolwire.runs.runtime import MemoryRecorder, RunRequest, Runtime
from toolwire.tools.api import Effect, runs_concurrently

from .fakes import RecordingProvider, call

SLEEP = 0.05


class InFlight:
    """Counts calls running at once, from the loop or from worker threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.log: list[tuple[str, str]] = []

    def enter(self, name: str) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.log.append(("start", name))

    def leave(self, name: str) -> None:
        with self.lock:
            self.now -= 1
            self.log.append(("end", name))


def sleepers(flight: InFlight) -> ToolRegistry:
    @tool(data_class="public")
    async def nap(label: str, seconds: float = SLEEP) -> str:
        flight.enter(label)
        try:
            await asyncio.sleep(seconds)
        finally:
            flight.leave(label)
        return f"woke {label}"

    @tool(data_class="public")
    def doze(label: str, seconds: float = SLEEP) -> str:
        flight.enter(label)
        try:
            time.sleep(seconds)
        finally:
            flight.leave(label)
        return f"woke {label}"

    @tool(data_class="public", concurrent=False)
    def write(label: str) -> str:
        flight.enter(label)
        try:
            time.sleep(SLEEP / 5)
        finally:
            flight.leave(label)
        return f"wrote {label}"

    return ToolRegistry([nap, doze, write])


def one_turn(
    calls: list[dict[str, Any]], flight: InFlight, **options: Any
) -> tuple[Any, RecordingProvider, float]:
    provider = RecordingProvider.of([{"tool_calls": calls}, {"content": "done"}])
    loop = ToolLoop(provider, sleepers(flight))
    started = time.perf_counter()
    result = loop.run_sync([ChatMessage.user("go")], options=RunOptions(**options))
    return result, provider, time.perf_counter() - started


@pytest.mark.parametrize("name", ["nap", "doze"])  # an async tool; a sync one in worker threads
def test_ten_sleeping_calls_overlap_and_finish_in_about_one_sleep(name: str) -> None:
    flight = InFlight()
    calls = [call(name, {"label": f"n{i}"}) for i in range(10)]
    result, _, elapsed = one_turn(calls, flight, max_concurrency=10)
    assert flight.peak == 10
    assert elapsed < 5 * SLEEP  # ten one after another would take 10 sleeps
    assert [i.result for i in result.trace] == [f"woke n{i}" for i in range(10)]


@pytest.mark.parametrize(("limit", "peak"), [(None, 8), (3, 3), (1, 1)])
def test_the_concurrency_setting_caps_calls_in_flight(limit: int | None, peak: int) -> None:
    flight = InFlight()
    calls = [call("nap", {"label": f"n{i}", "seconds": 0.01}) for i in range(12)]
    options = {} if limit is None else {"max_concurrency": limit}
    result, _, _ = one_turn(calls, flight, **options)
    assert flight.peak == peak
    assert len(result.trace) == 12 and not any(i.is_error for i in result.trace)


def test_results_are_appended_in_the_order_the_model_asked_for_them() -> None:
    flight = InFlight()
    # The first call sleeps longest, so calls finish in reverse order.
    calls = [call("nap", {"label": f"n{i}", "seconds": 0.01 * (6 - i)}, f"c{i}") for i in range(6)]
    result, provider, _ = one_turn(calls, flight)
    assert flight.log[-1] == ("end", "n0")
    ids = [c["id"] for c in calls]
    sent = provider.requests[1].messages
    assert [m.tool_call_id for m in sent if m.role == "tool"] == ids
    assert [m.content for m in sent if m.role == "tool"] == [f"woke n{i}" for i in range(6)]
    assert [i.call_id for i in result.trace] == ids


def test_a_sequential_only_tool_is_never_overlapped() -> None:
    flight = InFlight()
    calls = [
        call("nap", {"label": "r1"}),
        call("doze", {"label": "r2"}),
        call("write", {"label": "w1"}),
        call("nap", {"label": "r3"}),
        call("write", {"label": "w2"}),
        call("write", {"label": "w3"}),
        call("doze", {"label": "r4"}),
    ]
    result, _, _ = one_turn(calls, flight)
    log = flight.log
    for label in ("w1", "w2", "w3"):
        start = log.index(("start", label))
        assert log[start + 1] == ("end", label), log  # nothing starts or ends while it runs
    # Reads asked for before a write finish before it starts; those after start after it.
    assert log.index(("end", "r1")) < log.index(("start", "w1"))
    assert log.index(("end", "r2")) < log.index(("start", "w1"))
    assert log.index(("end", "w1")) < log.index(("start", "r3"))
    assert log.index(("end", "w3")) < log.index(("start", "r4"))
    assert flight.peak == 2  # r1 and r2 did overlap
    assert [i.result for i in result.trace][2] == "wrote w1"


def test_calls_needing_approval_are_sequential_only_unless_they_say_otherwise() -> None:
    @tool(effect=Effect.IDEMPOTENT_WRITE, requires_approval=False)
    def put() -> str:
        return ""

    @tool(requires_approval=True)
    def risky() -> str:
        return ""

    @tool(effect=Effect.IDEMPOTENT_WRITE, concurrent=True)
    def put_anywhere() -> str:
        return ""

    @tool
    def get() -> str:
        return ""

    class Bare:  # a hand-written tool with no traits: read-only, so concurrent
        pass

    assert not runs_concurrently(put) and runs_concurrently(put_anywhere)
    assert not runs_concurrently(risky)
    assert runs_concurrently(get) and runs_concurrently(Bare())  # type: ignore[arg-type]


def test_a_turn_past_the_per_turn_limit_keeps_order_with_calls_running_concurrently() -> None:
    flight = InFlight()
    calls = [call("nap", {"label": f"n{i}", "seconds": 0.01 * (i % 3)}, f"c{i}") for i in range(33)]
    _, provider, _ = one_turn(calls, flight)
    assert len(flight.log) == 64  # 32 started and ended; the 33rd never ran
    tool_turns = [m for m in provider.requests[1].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_turns] == [c["id"] for c in calls]
    assert [m.is_error for m in tool_turns] == [False] * 32 + [True]
    assert "at most 32 tool calls" in tool_turns[-1].content


def test_max_concurrency_is_checked_and_kept_with_a_paused_run() -> None:
    for bad in (0, 33):
        with pytest.raises(ValueError, match="max_concurrency must be between 1 and 32"):
            RunOptions(max_concurrency=bad)
    options = RunOptions(max_concurrency=3)
    assert RunOptions.from_dict(options.to_dict()).max_concurrency == 3
    old = options.to_dict()
    del old["max_concurrency"]  # a state sealed before the setting existed
    assert RunOptions.from_dict(old).max_concurrency == 8


class Gate:
    """Lets a test wait until calls have started, and see which were cancelled."""

    def __init__(self, expected: int) -> None:
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.finished: list[str] = []
        self.expected = expected
        self.all_started = threading.Event()

    def registry(self) -> ToolRegistry:
        @tool(data_class="public")
        async def hang(label: str) -> str:
            self.started.append(label)
            if len(self.started) == self.expected:
                self.all_started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled.append(label)
                raise
            self.finished.append(label)
            return label

        return ToolRegistry([hang])


def test_cancelling_a_run_mid_turn_stops_every_call() -> None:
    gate = Gate(expected=4)
    runtime = Runtime(gate.registry())
    calls = [call("hang", {"label": f"h{i}"}) for i in range(6)]
    provider = RecordingProvider.of([{"tool_calls": calls}, {"content": "never"}])
    ids: list[str] = []

    def cancel_when_started() -> None:
        assert gate.all_started.wait(10)
        assert runtime.cancel(ids[0])

    threading.Thread(target=cancel_when_started).start()
    request = RunRequest.of("go", provider=provider, options=RunOptions(max_concurrency=4))
    outcome = asyncio.run(runtime.run(request, on_start=ids.append))
    assert outcome.status is RunStatus.CANCELLED
    assert sorted(gate.started) == ["h0", "h1", "h2", "h3"]  # the two waiting never started
    assert sorted(gate.cancelled) == sorted(gate.started) and gate.finished == []
    assert outcome.wall_ms < 10_000
    assert len(provider.requests) == 1


def test_a_cancel_from_the_store_stops_the_other_calls_of_the_turn() -> None:
    recorder = MemoryRecorder()
    gate = Gate(expected=4)
    registry = gate.registry()
    ids: list[str] = []

    @tool(data_class="public")
    def quick() -> str:  # in a worker thread, so it may wait for the others to start
        # Another process asks to cancel while the turn runs; the flag is read when this
        # call's step is recorded.
        assert gate.all_started.wait(10)
        recorder.request_cancel(ids[0])
        return "quick"

    registry.register(quick)
    calls = [call("quick")] + [call("hang", {"label": f"h{i}"}) for i in range(4)]
    provider = RecordingProvider.of([{"tool_calls": calls}, {"content": "never"}])
    runtime = Runtime(registry, recorder=recorder)
    started = time.perf_counter()
    outcome = asyncio.run(runtime.run(RunRequest.of("go", provider=provider), on_start=ids.append))
    assert outcome.status is RunStatus.CANCELLED
    assert time.perf_counter() - started < 10
    assert sorted(gate.cancelled) == ["h0", "h1", "h2", "h3"] and gate.finished == []
    tool_steps = [s for s in outcome.steps if isinstance(s, ToolStep)]
    assert [s.tool_name for s in tool_steps] == ["quick"]  # the step that met the cancel


def test_each_call_starts_when_it_ran_so_overlapping_calls_overlap_on_the_clock() -> None:
    flight = InFlight()
    trace = RunTrace()
    provider = RecordingProvider.of(
        [{"tool_calls": [call("nap", {"label": f"n{i}", "seconds": 0.2}) for i in range(3)]},
         {"tool_calls": [call("write", {"label": "w"})]}, {"content": "done"}]
    )  # fmt: skip
    before = time.time() * 1000
    ToolLoop(provider, sleepers(flight)).run_sync([ChatMessage.user("go")], trace=trace)
    after = time.time() * 1000
    naps = [s for s in trace.steps if isinstance(s, ToolStep) and s.tool_name == "nap"]
    starts = [s.start_ms or 0.0 for s in naps]
    assert max(starts) - min(starts) < 100  # side by side, not one after another
    assert all(s.duration_ms >= 190 for s in naps)
    ends = [(s.start_ms or 0.0) + s.duration_ms for s in trace.steps]
    assert all(before <= (s.start_ms or 0.0) <= after for s in trace.steps)
    # every step starts once the one before it started; sequential steps after it ended
    kinds = [s.kind for s in trace.steps]
    assert kinds == ["request", "llm", "tool", "tool", "tool", "request", "llm", "tool",
                     "request", "llm"]  # fmt: skip
    write_at = kinds.index("tool", 5)
    assert (trace.steps[write_at].start_ms or 0.0) >= max(ends[2:5]) - 1
    assert all((b.start_ms or 0.0) >= (a.start_ms or 0.0) - 1 for a, b in
               zip(trace.steps[5:], trace.steps[6:], strict=False))  # fmt: skip
