"""What telemetry costs a run, per tool call: off, installed but not configured, and on.

    python bench/otel.py

Every configuration runs the same runtime path (``Runtime.run``, no store) over the same
conversation: a scripted model asks for 100 calls over 10 rounds of a tool returning a short
string, then answers. The reference is the hand-written loop of ``bench/loop.py`` in the same
process and event loop; each configuration is reported as its ratio to that reference, from the
best of interleaved batches (reference, then each configuration, again and again), so a slow
moment of a shared machine hits every side alike.

- off: no ``OTEL_*`` variable; OpenTelemetry is never imported.
- installed, not configured: the SDK is imported and an ``OTEL_*`` variable that turns nothing
  on is set (``OTEL_SERVICE_NAME``); the runtime attaches nothing. Target: within 5% of off.
- SDK, no exporter: spans and metrics are made for a provider that sends them nowhere.
- in-memory exporter: every span and metric is made and kept (cleared between batches).

Nothing here is a timed assertion; the last line says whether the target holds.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loop import batch_us, make_hand_written, plan, scripted, turn_for
from toolwire import RunOptions, ToolRegistry, tool
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.telemetry import RunTelemetry

CALLS = 100
BATCHES = 15
BATCH_SECONDS = 0.05
TARGET = 0.05  # installed but not configured: within 5% of off
OUTPUT = "row 1 | 42 | ok"

Run = Callable[[], Awaitable[Any]]


def runtime_run(telemetry: RunTelemetry | None = None) -> Run:
    """One run of the conversation through a runtime (``telemetry`` None: as the environment
    says)."""
    per_round = plan(CALLS)

    @tool(data_class="public", blocking=False)
    def fetch(key: str) -> str:
        return OUTPUT

    runtime = Runtime(ToolRegistry([fetch]), telemetry=telemetry)
    request = RunRequest.of("go", provider=scripted(lambda done: turn_for(done, per_round)),
                            options=RunOptions(max_rounds=len(per_round) + 1))  # fmt: skip
    return lambda: runtime.run(request)


def configurations() -> dict[str, tuple[Run, Callable[[], None]]]:
    """Each configuration's run, and what to clear between its batches."""
    for name in [n for n in os.environ if n.startswith("OTEL_")]:
        del os.environ[name]
    off = runtime_run()
    assert "opentelemetry" not in sys.modules, "off must not import OpenTelemetry"

    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolwire.telemetry.otel import Telemetry

    os.environ["OTEL_SERVICE_NAME"] = "bench"  # an OTEL_* variable that turns nothing on
    unconfigured = runtime_run()
    del os.environ["OTEL_SERVICE_NAME"]
    nowhere = Telemetry(tracer_provider=TracerProvider(), meter_provider=MeterProvider())
    spans = InMemorySpanExporter()
    tracer = TracerProvider()
    tracer.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    kept = Telemetry(tracer_provider=tracer, meter_provider=MeterProvider(metric_readers=[reader]))

    def clear() -> None:
        spans.clear()
        reader.collect()

    return {
        "off": (off, lambda: None),
        "installed, not configured": (unconfigured, lambda: None),
        "SDK, no exporter": (runtime_run(nowhere), lambda: None),
        "in-memory exporter": (runtime_run(kept), clear),
    }


async def main() -> None:
    reference = make_hand_written(OUTPUT, CALLS)
    measured = configurations()
    best = dict.fromkeys(["reference", *measured], float("inf"))
    for run, _ in measured.values():  # warm up
        await run()
    for _ in range(BATCHES):
        best["reference"] = min(best["reference"], await batch_us(reference, CALLS, BATCH_SECONDS))
        for name, (run, clear) in measured.items():
            best[name] = min(best[name], await batch_us(run, CALLS, BATCH_SECONDS))
            clear()
    print(f"{'configuration':<28} {'µs/call':>9} {'ratio to reference':>19}")
    print(f"{'hand-written loop':<28} {best['reference']:>9.2f} {1:>19.2f}")
    ratios = {name: best[name] / best["reference"] for name in measured}
    for name in measured:
        print(f"{name:<28} {best[name]:>9.2f} {ratios[name]:>19.2f}")
    gap = ratios["installed, not configured"] / ratios["off"] - 1
    verdict = "holds" if abs(gap) <= TARGET else "does not hold"
    print(f"installed but not configured against off: {gap:+.1%} (target ±{TARGET:.0%}: {verdict})")
    on = ratios["in-memory exporter"] / ratios["off"] - 1
    print(f"with an in-memory exporter against off: {on:+.1%}")


if __name__ == "__main__":
    asyncio.run(main())
