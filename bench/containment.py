"""What containment costs per tool call: labels tracked and every turn checked, against a run
where there is nothing to check.

Both runs are bench/loop.py's: a scripted model asks for N calls (one a round up to 10 rounds,
then several a round) of a tool returning a prepared string, with a second tool offered and
never called. In the run *off*, the called tool is trusted and the other is declared not
consequential, so the loop labels each result and never checks a turn (a run offering no
consequential tool never does). In the run *on*, the called tool is untrusted and the other is
consequential, so every result enters the run's provenance and every turn is checked.

A last line measures quarantined values (see toolwire.policy.quarantine): the same run with the
called tool's output held by the run as a variable (so every result is held and the model
reads a handle), against the run *off*.

Times are the process's CPU time (on a shared machine, wall time mostly measures the others).

Run: python bench/containment.py     Prints µs per call for both and the overhead in percent.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.loop import CALL_COUNTS, SIZES, plan, scripted, turn_for
from toolwire import ChatMessage, RunOptions, ToolCall, ToolLoop, ToolRegistry, tool
from toolwire.core.trust import Integrity
from toolwire.policy.containment import Labels, Provenance

BATCHES = 15  # best of, interleaved: noise on a shared machine hits both runs alike
BATCH_SECONDS = 0.05  # of the process's own CPU time: a busy machine's other work is not counted


def registry(output: str, *, contained: bool, quarantine: bool = False) -> ToolRegistry:
    @tool(name="fetch", data_class="public", quarantine=quarantine,
          integrity="untrusted" if contained else "trusted")  # fmt: skip
    def fetch(key: str) -> str:
        return output

    @tool(data_class="public", integrity="trusted", consequential=contained)
    def send(text: str) -> str:
        return "sent"

    return ToolRegistry([fetch, send])


def make_run(
    output: str, n: int, *, contained: bool, quarantine: bool = False
) -> Callable[[], Awaitable[Any]]:
    per_round = plan(n)
    provider = scripted(lambda done: turn_for(done, per_round))
    loop = ToolLoop(provider, registry(output, contained=contained, quarantine=quarantine))
    options = RunOptions(max_rounds=len(per_round) + 1)
    prompt = [ChatMessage.user("go")]
    return lambda: loop.run(prompt, options=options)


async def batch_us(run: Callable[[], Awaitable[Any]], n: int, seconds: float) -> float:
    """CPU µs per call over a batch of repeated runs using about ``seconds`` of CPU. Each run
    has its event loop to itself, so its calls run on the loop's thread: the process's CPU
    time is the run's, whatever else the machine is doing."""
    reps, started = 0, time.process_time()
    while (elapsed := time.process_time() - started) < seconds or reps < 3:
        await run()
        reps += 1
    return elapsed / reps / n * 1e6


async def compare(off: Callable[[], Awaitable[Any]], on: Callable[[], Awaitable[Any]],
                  n: int) -> tuple[float, float]:  # fmt: skip
    await off()
    await on()
    off_best = on_best = float("inf")
    for _ in range(BATCHES):
        off_best = min(off_best, await batch_us(off, n, BATCH_SECONDS))
        on_best = min(on_best, await batch_us(on, n, BATCH_SECONDS))
    return off_best, on_best


def bookkeeping_us(repeats: int = 200_000) -> float:
    """CPU µs the run's containment adds to a round of one call when it is on, the call's tool
    one the run has read before (the common case): the turn checked against the provenance,
    the result labelled, and the provenance brought up to date. Measured on its own, where no
    other cost of the loop blurs it."""
    tools = registry("x", contained=True)
    labels = Labels.of(list(tools))
    calls = (ToolCall("c1", "fetch", '{"key":"k"}'),)
    provenance = labels.entered(Provenance(), 1, "fetch", Integrity.UNTRUSTED)
    started = time.process_time()
    for round_ in range(2, repeats + 2):
        labels.held(calls, provenance)
        integrity = labels.integrity("fetch", refused=False)
        provenance = labels.entered(provenance, round_, "fetch", integrity)
    return (time.process_time() - started) / repeats * 1e6


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
    first, second = await compare(make_run(SIZES["small"], 1, contained=False),
                                  make_run(SIZES["small"], 1, contained=False), 1)  # fmt: skip
    print(f"noise floor (off against off, N=1): {(second / first - 1) * 100:.1f}%")
    cost = bookkeeping_us()
    off_one_call = await compare(make_run(SIZES["small"], 10, contained=False),
                                 make_run(SIZES["small"], 10, contained=False), 10)  # fmt: skip
    base = min(off_one_call)
    print(
        f"containment's own work per round of one call: {cost:.2f} µs, "
        f"{cost / base * 100:.1f}% of the {base:.1f} µs such a call costs with it off"
    )
    off, held = await compare(make_run(SIZES["small"], 10, contained=False),
                              make_run(SIZES["small"], 10, contained=False, quarantine=True),
                              10)  # fmt: skip
    print(f"every result held as a variable (N=10): {held:.2f} µs/call against {off:.2f} off, "
          f"{(held / off - 1) * 100:.1f}%")  # fmt: skip


if __name__ == "__main__":
    asyncio.run(main())
