"""Long and wide runs: the peers' workload through ``run_sync``, and one wide turn.

1. The workload the popular frameworks are measured on: an instant scripted model asks for one
   call per turn, N turns (N = 1, 10, 100), of a tool returning a prepared string, small or
   200 KB. ``ToolLoop.run_sync`` (one ``asyncio.run`` per run) against a hand-written loop run
   the same way, interleaved in the same process. The tool is what users write: a plain ``def``
   with the default ``@tool`` (its run has the loop to itself and a turn makes one call, so it
   runs on the loop's thread); rows beside it declare it ``blocking=False`` or write it
   ``async def``. Targets: toolwire within 10x of the hand loop at every N and size; per-call
   time flat in N (N=100 within 1.2x of N=10); 200 KB rows within 2x of the small rows.
   (``bench/peers_workload.py`` measures the same workload as the peers report it: marginal
   µs per call.)
   A third set of rows ("fresh") has the tool build its 200 KB output on every call, as a real
   tool does, in both loops: the prepared string costs the hand loop nothing per call, while
   toolwire must make a bounded copy (50 kB, held by the conversation) every call.
2. One turn asking for ten calls of a tool that sleeps 50 ms, against one such call. Target: at
   most 1.5x one call (the calls overlap).

Run: python bench/long_runs.py     Prints µs per call, the ratios, and whether each target holds.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loop import CALL_COUNTS, SIZES, Turns, hand_loop, scripted
from toolwire import ChatMessage, RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool

FRESH = 200_000  # a tool that builds its 200 KB output on each call, as real tools do
SLEEP = 0.05
ARGS = '{"key":"k"}'


def one_call_a_turn(n: int) -> Turns:
    """N turns of one call each."""
    return lambda done: ((f"c{done}", "fetch", ARGS),) if done < n else ()


KINDS = ("default", "blocking=False", "async def")


def fetch_tool(output: str, kind: str, fresh: bool) -> Any:
    """The tool as users write it (``default``: a plain def), or declared for the loop."""

    def fetch(key: str) -> str:
        return "x" * FRESH if fresh else output

    if kind == "async def":

        async def fetch_async(key: str) -> str:
            return fetch(key)

        fetch_async.__name__ = "fetch"
        return tool(data_class="public")(fetch_async)
    if kind == "blocking=False":
        return tool(data_class="public", blocking=False)(fetch)
    return tool(data_class="public")(fetch)


def toolwire_run(
    output: str, n: int, *, fresh: bool = False, kind: str = "default"
) -> Callable[[], Any]:
    """N turns of one call each, through ``run_sync``."""
    loop = ToolLoop(scripted(one_call_a_turn(n)), ToolRegistry([fetch_tool(output, kind, fresh)]))
    options = RunOptions(max_rounds=n + 1)
    prompt = [ChatMessage.user("go")]
    return lambda: loop.run_sync(prompt, options=options)


def hand_run(output: str, n: int, *, fresh: bool = False) -> Callable[[], Any]:
    """The hand-written loop of ``bench/loop.py``, one ``asyncio.run`` per run like run_sync."""

    def fetch(key: str) -> str:
        return "x" * FRESH if fresh else output

    run = hand_loop(fetch, one_call_a_turn(n))
    return lambda: asyncio.run(run())


def batch_us(run: Callable[[], Any], n: int, seconds: float) -> float:
    """µs per call over repeated runs lasting about ``seconds``."""
    reps, started = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds or reps < 3:
        run()
        reps += 1
    return elapsed / reps / n * 1e6


def compare(hand: Callable[[], Any], ours: Callable[[], Any], n: int) -> tuple[float, float]:
    """Best of 9 interleaved batches each: noise on a shared machine hits both alike."""
    hand()
    ours()
    hand_best = ours_best = float("inf")
    for _ in range(9):
        hand_best = min(hand_best, batch_us(hand, n, 0.05))
        ours_best = min(ours_best, batch_us(ours, n, 0.05))
    return hand_best, ours_best


def wide_turn(calls: int) -> float:
    """Seconds for a run whose one turn makes ``calls`` calls of a 50 ms tool."""

    @tool(data_class="public")
    async def nap() -> str:
        await asyncio.sleep(SLEEP)
        return "ok"

    turn = [{"id": f"c{i}", "name": "nap", "arguments": {}} for i in range(calls)]
    provider = ScriptedProvider.from_turns([{"tool_calls": turn}, {"content": "done"}])
    loop = ToolLoop(provider, ToolRegistry([nap]))
    started = time.perf_counter()
    loop.run_sync([ChatMessage.user("go")], options=RunOptions(max_concurrency=calls))
    return time.perf_counter() - started


def check(label: str, ok: bool) -> str:
    return f"{label}: {'holds' if ok else 'MISSED'}"


def main() -> None:
    print(f"{'output':>6} {'N':>4} {'tool':>15} {'hand µs/call':>13} {'toolwire µs/call':>17} "
          f"{'ratio':>6}")  # fmt: skip
    ours: dict[tuple[str, int], float] = {}
    ratios: list[float] = []
    for label, output in SIZES.items():
        for n in CALL_COUNTS:
            for kind in KINDS:
                hand, mine = compare(hand_run(output, n), toolwire_run(output, n, kind=kind), n)
                if kind == "default":  # the targets are the default's
                    ours[label, n] = mine
                    ratios.append(mine / hand)
                print(f"{label:>6} {n:>4} {kind:>15} {hand:>13.1f} {mine:>17.1f} "
                      f"{mine / hand:>6.1f}")  # fmt: skip
    for n in CALL_COUNTS:
        hand, mine = compare(hand_run("", n, fresh=True), toolwire_run("", n, fresh=True), n)
        print(f"{'fresh':>6} {n:>4} {'default':>15} {hand:>13.1f} {mine:>17.1f} "
              f"{mine / hand:>6.1f}")  # fmt: skip
    flat = {label: ours[label, 100] / ours[label, 10] for label in SIZES}
    sized = {n: ours["200KB", n] / ours["small", n] for n in CALL_COUNTS}
    print(", ".join(f"{k}: N=100 / N=10 = {v:.2f}" for k, v in flat.items()))
    print(", ".join(f"N={k}: 200KB / small = {v:.2f}" for k, v in sized.items()))
    one = min(wide_turn(1) for _ in range(5))
    ten = min(wide_turn(10) for _ in range(5))
    print(f"one 50 ms call: {one * 1e3:.1f} ms; ten in one turn: {ten * 1e3:.1f} ms "
          f"({ten / one:.2f}x)")  # fmt: skip
    print(check("within 10x of the hand loop", max(ratios) <= 10))
    print(check("flat in N (N=100 within 1.2x of N=10)", max(flat.values()) <= 1.2))
    print(check("200 KB within 2x of small", max(sized.values()) <= 2))
    print(check("ten 50 ms calls within 1.5x of one", ten / one <= 1.5))


if __name__ == "__main__":
    main()
