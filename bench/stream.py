"""Benchmark: how fast the inspector's NDJSON stream carries steps to an HTTP client.

    PYTHONPATH=src python bench/stream.py

Measures, over real HTTP on loopback (uvicorn in a thread, an httpx streaming client):
- latency from a step being recorded to its line reaching the client (median, p99), using
  the ``request`` step, which the loop records immediately before it calls the provider: the
  provider stamps the time it is called, the client stamps the time the line arrives;
- throughput in steps per second for runs of 20 rounds with no model delay.
The reference is a bare NDJSON echo endpoint in the same process that pushes lines from a
thread the same way (``call_soon_threadsafe`` onto a queue, lines unpadded like ours) and is
measured with the same client. Ratios are inspector / reference.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.inspector_kit import AUTH, TOKEN, live_server

from toolwire import ScriptedProvider, ToolRegistry, tool
from toolwire.core.trust import TrustZone
from toolwire.inspector import InspectorSettings, create_app
from toolwire.providers.base import CompletionRequest, CompletionResponse, no_session

ROUNDS = 20  # a long run (20 was the round cap when this bench was written)
LATENCY_RUNS = 10
THROUGHPUT_RUNS = 10
MODEL_DELAY_MS = 2.0  # spaces the latency run's steps out, so lines do not queue


@tool(data_class="public")
def tick() -> str:
    return "ok"


class StampingProvider:
    """A scripted model that notes when each call starts (right after the request step)."""

    def __init__(self, delay_ms: float) -> None:
        turn = {"tool_calls": [{"name": "tick", "arguments": {}}], "delay_ms": delay_ms}
        self.inner = ScriptedProvider.from_turns([turn] * ROUNDS + [{"content": "end"}])
        self.stamps: list[float] = []
        self.name = "scripted"
        self.trust_zone = TrustZone.EXTERNAL_GLOBAL

    def session(self) -> AbstractAsyncContextManager[None]:
        return no_session()

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.stamps.append(time.perf_counter())
        return await self.inner.complete(request)


def read_stream(client: httpx.Client, url: str, body: Any) -> tuple[list[float], int, float]:
    """Arrival times of ``request`` steps, all step count, and first-to-last line seconds."""
    arrivals: list[float] = []
    steps, first, last = 0, 0.0, 0.0
    with client.stream("POST", url, json=body, headers=AUTH) as response:
        for line in response.iter_lines():
            now = time.perf_counter()
            if not line.strip():
                continue
            event = json.loads(line)
            first = first or now
            last = now
            if event["type"] == "step":
                steps += 1
                if event["step"]["kind"] == "request":
                    arrivals.append(now)
    return arrivals, steps, last - first


def echo_app(stamps: list[float]) -> Starlette:
    async def echo(request: Request) -> StreamingResponse:
        body = await request.json()
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

        def work() -> None:
            for i in range(body["lines"]):
                time.sleep(body["delay_ms"] / 1000)
                stamps.append(time.perf_counter())
                step = {"kind": "request", "round": i}
                loop.call_soon_threadsafe(queue.put_nowait, {"type": "step", "step": step})
            loop.call_soon_threadsafe(queue.put_nowait, {"type": "done"})

        async def lines() -> AsyncIterator[bytes]:
            while True:
                event = await queue.get()
                yield json.dumps(event).encode() + b"\n"
                if event["type"] == "done":
                    return

        threading.Thread(target=work, daemon=True).start()
        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return Starlette(routes=[Route("/echo", echo, methods=["POST"])])


def measure(url: str, bodies: list[Any], stamps_of: Any) -> tuple[list[float], float]:
    latencies: list[float] = []
    steps_total, seconds_total = 0, 0.0
    with httpx.Client(timeout=60) as client:
        for body in bodies:
            arrivals, steps, seconds = read_stream(client, url, body)
            stamps = stamps_of()
            latencies += [(a - s) * 1000 for a, s in zip(arrivals, stamps, strict=False)]
            steps_total += steps
            seconds_total += seconds
    return latencies, steps_total / seconds_total


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100)[98]


def main() -> None:
    providers: list[StampingProvider] = []

    def factory(name: str, model: str | None) -> StampingProvider:
        delay = MODEL_DELAY_MS if model == "latency" else 0.0
        providers.append(StampingProvider(delay))
        return providers[-1]

    settings = InspectorSettings(
        registry=ToolRegistry([tick]), provider_factory=factory, token=TOKEN
    )
    echo_stamps: list[float] = []

    def last_echo() -> list[float]:
        taken = list(echo_stamps)
        echo_stamps.clear()
        return taken

    run = {"prompt": "go", "max_rounds": ROUNDS}
    with live_server(create_app(settings)) as base, live_server(echo_app(echo_stamps)) as ref:
        ours, _ = measure(
            f"{base}/api/runs/stream", [{**run, "model": "latency"}] * LATENCY_RUNS,
            lambda: providers[-1].stamps,
        )  # fmt: skip
        _, our_rate = measure(f"{base}/api/runs/stream", [run] * THROUGHPUT_RUNS, lambda: [])
        lines = ROUNDS + 1
        theirs, _ = measure(
            f"{ref}/echo", [{"lines": lines, "delay_ms": MODEL_DELAY_MS}] * LATENCY_RUNS,
            last_echo,
        )  # fmt: skip
        _, ref_rate = measure(
            f"{ref}/echo", [{"lines": lines * 3, "delay_ms": 0}] * THROUGHPUT_RUNS, last_echo
        )
    print(f"step -> client latency, ms   median {statistics.median(ours):7.3f}   "
          f"p99 {p99(ours):7.3f}   ({len(ours)} steps)")  # fmt: skip
    print(f"reference echo latency, ms   median {statistics.median(theirs):7.3f}   "
          f"p99 {p99(theirs):7.3f}")  # fmt: skip
    print(f"latency ratio (ours / reference): median "
          f"{statistics.median(ours) / statistics.median(theirs):.2f}x, "
          f"p99 {p99(ours) / p99(theirs):.2f}x")  # fmt: skip
    print(f"throughput: {our_rate:,.0f} steps/s; reference {ref_rate:,.0f} lines/s; "
          f"ratio {our_rate / ref_rate:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
