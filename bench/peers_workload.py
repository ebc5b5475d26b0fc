"""The peers' workload: one call per turn, N turns, measured the way the other frameworks are.

An instant fake model asks for one call of ``add`` per turn for N turns, then answers. The tool
is what a user writes first: a plain ``def add(a: int, b: int) -> str`` with the default
``@tool`` (no ``blocking=False``). Each run is one ``asyncio.run`` (or the public sync entry
that makes one). Beside it, in the same process and interleaved with it, a hand-written loop
does only what any loop must: append the turns, decode the arguments, call the function.

Rows (each for a small output and a 200 KB one):
- ``hand-written``: the reference;
- ``asyncio.run(loop.run)``: ``ToolLoop.run`` in a fresh ``asyncio.run`` per run, the default
  ``@tool`` (the headline row, checked against the targets);
- ``ToolLoop.run_sync``: the blocking entry the README shows, same tool;
- ``Runtime.run_sync``: the runtime's entry with what it does by default: a run row in the
  default recorder (``MemoryRecorder``), the trace's observers (recorder, cancel check), the
  charter, settling; no store file, no telemetry (none is configured here);
- ``blocking=False`` and ``async def``: the same loop with the tool declared for the loop;
- ``langchain-core``, only when ``langchain_core`` imports (never a dependency): the same
  hand-written loop with langchain-core's messages and tool invocation (``ainvoke`` of a tool
  call, as the peers measure it; and ``invoke``).

Per row: the marginal µs per call from N=10 to N=100 (``(t(100) - t(10)) / 90``: what one more
turn costs, setup excluded), the µs per call at N=100 (setup included), and both as ratios to
the hand-written loop. Every time is the best of many runs, interleaved row by row, so a slow
moment of the shared machine hits every row alike. Targets (the headline row): marginal ≤ 5x
the hand loop, per-call at N=100 ≤ 6x, and the 200 KB figures within 2x of the small ones.

Run: python bench/peers_workload.py [--quick] [--cpu]
(``--cpu`` times the process's CPU, worker threads included, rather than the wall clock: on a
machine other work loads, a long run is far likelier to be preempted than a short one.)
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from toolwire import (
    ChatMessage,
    CompletionRequest,
    CompletionResponse,
    RunOptions,
    RunRequest,
    Runtime,
    ToolCall,
    ToolLoop,
    ToolRegistry,
    TrustZone,
    tool,
)
from toolwire.providers.base import no_session

SMALL_N, LARGE_N = 10, 100
BIG = "x" * 200_000  # the 200 KB output, prepared once: the hand loop pays nothing for it
ARGUMENTS = '{"a": 1, "b": 2}'
Run = Callable[[], Any]


def turn_of(messages_sent: int) -> int:
    """Turns answered so far, from the conversation's length alone (prompt, then two messages
    a turn): the fake model is instant and keeps no state, in both loops."""
    return (messages_sent - 1) // 2


class InstantModel:
    """A provider that answers at once: a call of ``add`` for the first ``n`` turns, then text."""

    name = "instant"
    trust_zone = TrustZone.LOCAL

    def __init__(self, n: int) -> None:
        self.n = n

    def session(self) -> AbstractAsyncContextManager[None]:
        return no_session()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        turn = turn_of(len(request.messages))
        if turn < self.n:
            return CompletionResponse(tool_calls=(ToolCall(f"c{turn}", "add", ARGUMENTS),))
        return CompletionResponse(content="done")


def add_returning(output: str | None) -> Callable[[int, int], str]:
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        return str(a + b) if output is None else output

    return add


def hand_written(n: int, output: str | None) -> Run:
    """What any loop must do, run in its own ``asyncio.run``."""
    tools: dict[str, Callable[..., str]] = {"add": add_returning(output)}

    async def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        turn = turn_of(len(messages))
        if turn < n:
            return {"content": "", "tool_calls": [{"id": f"c{turn}", "name": "add",
                                                   "arguments": ARGUMENTS}]}  # fmt: skip
        return {"content": "done", "tool_calls": []}

    async def run() -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        while True:
            reply = await model(messages)
            if not reply["tool_calls"]:
                return str(reply["content"])
            messages.append({"role": "assistant", "content": "", "tool_calls": reply["tool_calls"]})
            for call in reply["tool_calls"]:
                result = tools[call["name"]](**json.loads(call["arguments"]))
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})

    return lambda: asyncio.run(run())


def toolwire_tool(output: str | None, kind: str) -> Any:
    """``add`` as a user writes it: the default ``@tool``, or declared for the loop."""
    if kind == "async":

        @tool(data_class="public")
        async def add(a: int, b: int) -> str:
            """Add two numbers."""
            return str(a + b) if output is None else output

        return add
    if kind == "inline":
        return tool(data_class="public", blocking=False)(add_returning(output))
    return tool(data_class="public")(add_returning(output))


def toolwire_loop(n: int, output: str | None, kind: str = "default") -> ToolLoop:
    return ToolLoop(InstantModel(n), ToolRegistry([toolwire_tool(output, kind)]))


def via_asyncio_run(n: int, output: str | None, kind: str = "default") -> Run:
    loop = toolwire_loop(n, output, kind)
    prompt, options = [ChatMessage.user("go")], RunOptions(max_rounds=n + 1)
    return lambda: asyncio.run(loop.run(prompt, options=options))


def via_run_sync(n: int, output: str | None) -> Run:
    loop = toolwire_loop(n, output)
    prompt, options = [ChatMessage.user("go")], RunOptions(max_rounds=n + 1)
    return lambda: loop.run_sync(prompt, options=options)


def via_runtime(n: int, output: str | None) -> Run:
    runtime = Runtime(ToolRegistry([toolwire_tool(output, "default")]))
    request = RunRequest.of("go", provider=InstantModel(n), options=RunOptions(max_rounds=n + 1))
    return lambda: runtime.run_sync(request)


def langchain_rows() -> dict[str, Callable[[int, str | None], Run]]:
    """The langchain-core rows, when it is installed (it is never a dependency)."""
    try:
        messages = importlib.import_module("langchain_core.messages")
        lc_tool = importlib.import_module("langchain_core.tools").tool
    except ImportError:
        return {}
    AIMessage, HumanMessage = messages.AIMessage, messages.HumanMessage

    def make(asynchronous: bool) -> Callable[[int, str | None], Run]:
        def build(n: int, output: str | None) -> Run:
            add = lc_tool(add_returning(output))

            async def model(messages: Sequence[Any]) -> Any:
                turn = turn_of(len(messages))
                if turn < n:
                    call = {"id": f"c{turn}", "name": "add", "args": json.loads(ARGUMENTS)}
                    return AIMessage(content="", tool_calls=[call])
                return AIMessage(content="done")

            async def run() -> str:
                messages: list[Any] = [HumanMessage(content="go")]
                while True:
                    reply = await model(messages)
                    messages.append(reply)
                    if not reply.tool_calls:
                        return str(reply.content)
                    for call in reply.tool_calls:
                        called = {**call, "type": "tool_call"}
                        answer = await add.ainvoke(called) if asynchronous else add.invoke(called)
                        messages.append(answer)

            return lambda: asyncio.run(run())

        return build

    return {"langchain-core ainvoke": make(True), "langchain-core invoke": make(False)}


def rows() -> dict[str, Callable[[int, str | None], Run]]:
    return {
        "hand-written": hand_written,
        "asyncio.run(loop.run)": via_asyncio_run,
        "ToolLoop.run_sync": via_run_sync,
        "Runtime.run_sync": via_runtime,
        "blocking=False": lambda n, o: via_asyncio_run(n, o, "inline"),
        "async def": lambda n, o: via_asyncio_run(n, o, "async"),
        **langchain_rows(),
    }


def once_us(run: Run, clock: Callable[[], float] = time.perf_counter) -> float:
    started = clock()
    run()
    return (clock() - started) * 1e6


def measure(
    rounds: int, clock: Callable[[], float] = time.perf_counter
) -> dict[tuple[str, str, int], float]:
    """µs per run of every row, size and N: the best of ``rounds`` runs each, interleaved (every
    row runs once per round), so a slow moment of the shared machine hits every row alike."""
    made = {(row, size, n): build(n, None if size == "small" else BIG)
            for row, build in rows().items() for size in ("small", "200KB")
            for n in (SMALL_N, LARGE_N)}  # fmt: skip
    best = dict.fromkeys(made, float("inf"))
    for run in made.values():
        run()  # warm: imports, pydantic's first validation, the worker threads
    for _ in range(rounds):
        for key, run in made.items():
            best[key] = min(best[key], once_us(run, clock))
    return best


def report(best: dict[tuple[str, str, int], float]) -> None:
    def marginal(row: str, size: str) -> float:
        return (best[row, size, LARGE_N] - best[row, size, SMALL_N]) / (LARGE_N - SMALL_N)

    def per_call(row: str, size: str) -> float:
        return best[row, size, LARGE_N] / LARGE_N

    print(f"{'':24} {'marginal µs/call':>17} {'x hand':>7} {'µs/call N=100':>14} {'x hand':>7}")
    for size in ("small", "200KB"):
        print(f"-- {size} output")
        hand_m, hand_p = marginal("hand-written", size), per_call("hand-written", size)
        for row in dict.fromkeys(r for r, _, _ in best):
            m, p = marginal(row, size), per_call(row, size)
            print(f"{row:24} {m:>17.1f} {m / hand_m:>7.1f} {p:>14.1f} {p / hand_p:>7.1f}")
    head = "asyncio.run(loop.run)"
    checks = []
    for size in ("small", "200KB"):
        m = marginal(head, size) / marginal("hand-written", size)
        p = per_call(head, size) / per_call("hand-written", size)
        checks.append((f"{size}: marginal ≤ 5x the hand loop ({m:.1f}x)", m <= 5))
        checks.append((f"{size}: per-call at N=100 ≤ 6x ({p:.1f}x)", p <= 6))
    sized_m = marginal(head, "200KB") / marginal(head, "small")
    sized_p = per_call(head, "200KB") / per_call(head, "small")
    checks.append((f"200 KB marginal within 2x of small ({sized_m:.2f}x)", sized_m <= 2))
    checks.append((f"200 KB per-call within 2x of small ({sized_p:.2f}x)", sized_p <= 2))
    for label, ok in checks:
        print(f"{label}: {'holds' if ok else 'MISSED'}")


def main() -> None:
    # --cpu: a run preempted by another process's work is not charged for it
    clock = time.process_time if "--cpu" in sys.argv else time.perf_counter
    report(measure(rounds=20 if "--quick" in sys.argv else 100, clock=clock))


if __name__ == "__main__":
    main()
