"""The inspector's one event loop is shared by every run: a slow synchronous tool of one run
runs in the worker pool there, so another run's steps keep arriving while it works."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from toolwire import ToolRegistry, tool
from toolwire.core.jsonenc import loads
from toolwire.inspector import create_app

from ..inspector_kit import AUTH, MemoryStore, call, live_server, lookup, settings

NAP_S = 0.2  # the slow tool: a plain def that blocks, as a real one does on a slow database
QUICK_ROUNDS = 40  # the other run: many short rounds, a few ms apart, for longer than the nap
QUICK_DELAY_MS = 10
SETTLE_S = 0.02  # a step sent just before the nap began may still be read just after


class Nap:
    """A plain ``def`` tool with the default ``@tool`` that sleeps; it keeps when it slept and
    on which thread."""

    def __init__(self) -> None:
        self.slept: list[tuple[float, float]] = []
        self.threads: list[str] = []

    def tool(self) -> Any:
        @tool(data_class="public")
        def nap() -> str:
            """Sleep a while."""
            self.threads.append(threading.current_thread().name)
            began = time.monotonic()
            time.sleep(NAP_S)
            self.slept.append((began, time.monotonic()))
            return "rested"

        return nap


def stream(base: str, body: dict[str, Any], arrivals: list[tuple[str, float]]) -> None:
    """Read one streamed run to its end, keeping each event's kind and when it arrived."""
    with httpx.stream("POST", f"{base}/api/runs/stream", json=body, headers=AUTH,
                      timeout=30) as response:  # fmt: skip
        for line in response.iter_lines():
            if line.strip():
                event = loads(line)
                kind = event["step"]["kind"] if event["type"] == "step" else event["type"]
                arrivals.append((kind, time.monotonic()))


def test_a_slow_sync_tool_in_the_inspector_does_not_delay_another_runs_steps() -> None:
    nap = Nap()
    quick = [{"tool_calls": [call("lookup", {"customer": "Ada"})], "delay_ms": QUICK_DELAY_MS}]
    scripts = {
        "napping": [{"tool_calls": [call("nap")]}, {"content": "rested"}],
        "quick": quick * QUICK_ROUNDS + [{"content": "done", "delay_ms": QUICK_DELAY_MS}],
    }
    app = create_app(settings(store=MemoryStore(), registry=ToolRegistry([lookup, nap.tool()]),
                              scripts=scripts))  # fmt: skip
    with live_server(app) as base:
        other: list[tuple[str, float]] = []
        body = {"prompt": "x", "provider": "quick", "max_rounds": QUICK_ROUNDS + 1, "stream": False}
        reader = threading.Thread(target=stream, args=(base, body, other))
        reader.start()
        deadline = time.monotonic() + 10
        while len(other) < 3 and time.monotonic() < deadline:  # the other run is under way
            time.sleep(0.001)
        napping: list[tuple[str, float]] = []
        stream(base, {"prompt": "x", "provider": "napping", "stream": False}, napping)
        reader.join(30)
    assert [k for k, _ in napping] == ["context", "request", "llm", "tool", "request", "llm",
                                       "egress", "end"]  # fmt: skip
    # each round's steps, and the egress line of each request that carried a result
    assert other[-1][0] == "end" and len(other) == 2 + 4 * QUICK_ROUNDS + 2
    assert nap.threads[0].startswith("toolwire-tool")  # the seam's pool, not the loop's thread
    ((began, ended),) = nap.slept
    during = [at for kind, at in other if began + SETTLE_S < at < ended]
    # A nap on the loop's thread would let no step of the other run out while it sleeps.
    assert len(during) >= 3, (len(during), ended - began)
