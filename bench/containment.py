"""What containment costs per tool call: labels tracked and every turn checked, against a run
where there is nothing to check.

Both runs are bench/loop.py's: a scripted model asks for N calls (one a round up to 10 rounds,
then several a round) of a tool returning a prepared string, with a second tool offered and
never called. In the run *off*, the called tool is trusted and the other is declared not
consequential, so the loop labels each result and never checks a turn (a run offering no
consequential tool never does). In the run *on*, the called tool is untrusted and the other is
consequential, so every result enters the run's provenance and every turn is checked.

Run: python bench/containment.py     Prints µs per call for both and the overhead in percent.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Awaitable, Callable
from typing import Any

from bench.loop import CALL_COUNTS, SIZES, batch_us, plan, scripted, turn_for
from toolwire import ChatMessage, RunOptions, ToolLoop, ToolRegistry, tool

BATCHES = 9  # best of, interleaved: noise on a shared machine hits both runs alike
BATCH_SECONDS = 0.03


def registry(output: str, *, contained: bool) -> ToolRegistry:
    @tool(name="fetch", data_class="public", integrity="untrusted" if contained else "trusted")
    def fetch(key: str) -> str:
        return output

    @tool(data_class="public", integrity="trusted", consequential=contained)
    def send(text: str) -> str:
        return "sent"

    return ToolRegistry([fetch, send])


def make_run(output: str, n: int, *, contained: bool) -> Callable[[], Awaitable[Any]]:
    per_round = plan(n)
    provider = scripted(lambda done: turn_for(done, per_round))
    loop = ToolLoop(provider, registry(output, contained=contained))
    options = RunOptions(max_rounds=len(per_round) + 1)
    prompt = [ChatMessage.user("go")]
    return lambda: loop.run(prompt, options=options)


async def compare(off: Callable[[], Awaitable[Any]], on: Callable[[], Awaitable[Any]],
                  n: int) -> tuple[float, float]:  # fmt: skip
    await off()
    await on()
    off_best = on_best = float("inf")
    for _ in range(BATCHES):
        off_best = min(off_best, await batch_us(off, n, BATCH_SECONDS))
        on_best = min(on_best, await batch_us(on, n, BATCH_SECONDS))
    return off_best, on_best


async def main() -> None:
    print(f"{'output':>6} {'N':>4} {'off µs/call':>12} {'on µs/call':>11} {'overhead':>9}")
    overheads = []
    for label, output in SIZES.items():
        for n in CALL_COUNTS:
            off, on = await compare(make_run(output, n, contained=False),
                                    make_run(output, n, contained=True), n)  # fmt: skip
            overheads.append(on / off - 1)
            print(f"{label:>6} {n:>4} {off:>12.2f} {on:>11.2f} {(on / off - 1) * 100:>8.1f}%")
    print(f"median overhead of labels and checks: {statistics.median(overheads) * 100:.1f}%")


if __name__ == "__main__":
    asyncio.run(main())
