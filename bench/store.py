"""Store benchmark: steps persisted per second, and what recording costs a tool round.

    python bench/store.py            # SQLite; PostgreSQL too when $TOOLWIRE_TEST_PG_URL is set

Each figure is measured against a reference run in this same process: persisting is compared
with filtering and encoding alone, and a loop recorded to a SQLite store with the same loop
recorded nowhere (both on the scripted provider). Target: at most 250 µs per tool round.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from toolwire import (
    Artifact,
    ChatMessage,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    ToolResult,
    tool,
)
from toolwire.core.jsonenc import dumps
from toolwire.policy.privacy import PrivacyLevel, filter_step
from toolwire.policy.trace import LlmStep, RequestStep, ToolStep
from toolwire.runs.runtime import RunRecorder, RunRequest, Runtime
from toolwire.store import RunStore

STEPS = 3_000
ROUNDS = 20  # tool rounds per run: the hard maximum, so per-run costs spread thin
RUNS = 100
TARGET_US_PER_ROUND = 250
ALONE = "the rate of filtering and encoding alone"

MESSAGES = tuple(ChatMessage.user(f"message {n} " * 20) for n in range(8))
SAMPLE_STEPS = (
    RequestStep(round=1, messages_sent=MESSAGES, tool_specs=("lookup",)),
    LlmStep(
        round=1, duration_ms=120.0, content="checking", prompt_tokens=300,
        completion_tokens=20, total_tokens=320,
        requested_tool_calls=(ToolCall.of("c1", "lookup", {"query": "orders"}),),
    ),
    ToolStep(
        round=1, duration_ms=2.5, tool_name="lookup",
        tool_arguments={"query": "orders"}, tool_result="found 3 rows " * 30,
        tool_is_error=False,
        tool_artifacts=(Artifact.table("rows", ["a", "b"], [["1", "2"]] * 20),),
    ),
)  # fmt: skip


@tool(data_class="public")
def lookup(query: str) -> ToolResult:
    """Look something up."""
    return ToolResult.text(f"found {query}", Artifact.table("hits", ["q"], [[query]]))


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def steps_per_second(url: str) -> tuple[float, float]:
    """(persisted steps per second, filter-and-encode-only steps per second)."""
    with RunStore.open(url, privacy=PrivacyLevel.METADATA) as store:
        run_id = store.begin(RunRequest.of("bench", provider=script(1)))

        def persist() -> None:
            for n in range(STEPS):
                store.record_step(run_id, n + 1, SAMPLE_STEPS[n % 3])
            store.flush()  # steps are written behind the run: count them once committed

        def encode_only() -> None:
            for n in range(STEPS):
                dumps(filter_step(SAMPLE_STEPS[n % 3].to_dict(), PrivacyLevel.METADATA))

        return STEPS / timed(persist), STEPS / timed(encode_only)


def script(rounds: int) -> ScriptedProvider:
    call = {"tool_calls": [{"name": "lookup", "arguments": {"query": "orders"}}]}
    return ScriptedProvider.from_turns([call] * rounds + [{"content": "done"}])


def loop_seconds(recorder: RunRecorder | None) -> float:
    """The median wall time of one run of ``ROUNDS`` tool rounds."""
    runtime = Runtime(ToolRegistry([lookup]), recorder=recorder)
    options = RunOptions(max_rounds=ROUNDS)
    # One event loop for every run: asyncio.run() alone costs milliseconds per call (it installs
    # a SIGINT handler whose removal formats the repr of the whole request), which would drown
    # the per-round figures in both the reference and the measured run.
    loop = asyncio.new_event_loop()

    def one_run() -> None:
        request = RunRequest.of("go", provider=script(ROUNDS), options=options)
        loop.run_until_complete(runtime.run(request))

    try:
        return statistics.median(timed(one_run) for _ in range(RUNS))
    finally:
        loop.close()


@contextmanager
def scratch_schema(base: str) -> Iterator[str]:
    """A PostgreSQL schema of its own for the benchmark, dropped afterwards."""
    name = f"tw_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {name}"))
    try:
        url = make_url(base).update_query_dict({"options": f"-csearch_path={name}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {name} CASCADE"))
        admin.dispose()


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        sqlite = str(Path(folder) / "bench.db")
        persisted, encoded = steps_per_second(sqlite)
        print(f"SQLite     {persisted:9,.0f} steps/s  ({persisted / encoded:.2f}x {ALONE})")
        pg_url = os.environ.get("TOOLWIRE_TEST_PG_URL")
        if pg_url:
            with scratch_schema(pg_url) as url:
                persisted, encoded = steps_per_second(url)
            print(f"PostgreSQL {persisted:9,.0f} steps/s  ({persisted / encoded:.2f}x {ALONE})")
        else:
            print("PostgreSQL skipped: set $TOOLWIRE_TEST_PG_URL")
        loop_seconds(None)  # warm up imports and caches
        bare = loop_seconds(None)
        with RunStore.open(sqlite) as store:
            stored = loop_seconds(store)
    overhead_us = (stored - bare) / ROUNDS * 1e6
    met = "met" if overhead_us <= TARGET_US_PER_ROUND else "MISSED"
    print(
        f"tool round: {bare / ROUNDS * 1e6:.0f} µs bare, {stored / ROUNDS * 1e6:.0f} µs with the "
        f"SQLite store ({stored / bare:.2f}x); overhead {overhead_us:.0f} µs per round "
        f"(target ≤ {TARGET_US_PER_ROUND} µs: {met})"
    )
    return 0  # a benchmark reports; a noisy machine must not turn it into a failing test


if __name__ == "__main__":
    sys.exit(main())
