"""A live run as a sequence of events, carried from its worker thread to an HTTP response.

Each run executes in a worker thread with its own event loop, so a tool that blocks never
stalls the server. Events cross to the server's loop through ``RunChannel`` (thread-safe:
``call_soon_threadsafe`` onto an ``asyncio.Queue``). The order is fixed:

1. exactly one ``context`` event (run id, provider, model, replay label, offered tools,
   privacy level), before any step;
2. one ``step`` event per recorded step, pushed the moment the trace records it;
3. exactly one terminal event: ``done``, ``awaiting_approval``, ``awaiting_input``,
   ``cancelled`` or ``error`` (a short, safe message; never exception text).

A reader that goes away does not stop the run: pushes to a closed channel are dropped, the
run goes on in its thread and settles in the store as usual.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, assert_never

from toolwire.jsonenc import sink_dumps_bytes
from toolwire.lifecycle import RunStatus
from toolwire.runtime import RunOutcome, RunRequest, Runtime
from toolwire.trace import RunStep

log = logging.getLogger("toolwire.inspector")

TERMINAL_TYPES = frozenset({"done", "awaiting_approval", "awaiting_input", "cancelled", "error"})
# Some proxies hold back small chunks; a line of at least 4 KiB is passed on at once.
STREAM_LINE_MIN_BYTES = 4096
RUN_FAILED = "the run failed; see the server log"
SHUTDOWN_GRACE_SECONDS = 5.0  # a cancelled run stops at its next step; a tool may take a while
CANCELLED_MESSAGE = "The run was cancelled."
NDJSON = "application/x-ndjson; charset=utf-8"
STREAM_HEADERS = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}

Event = dict[str, Any]


class RunChannel:
    """Events of one run: pushed from any thread, read in order on the server's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._open = True

    def push(self, event: Event) -> None:
        """Never raises: a run must not fail because nobody is listening any more."""
        if not self._open:
            return
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:  # the server's loop has closed
            self._open = False

    async def events(self) -> AsyncIterator[Event]:
        """Every event up to and including the terminal one."""
        while True:
            event = await self._queue.get()
            yield event
            if event["type"] in TERMINAL_TYPES:
                return


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveRun:
    """A request ready to run, with its context event (the run id is filled in at start)."""

    request: RunRequest
    context: Event


class RunThreads:
    """The worker threads of live runs, so that a server shutting down can settle them.

    On shutdown every running run is cancelled (it stops at its next step boundary, and an
    in-flight provider call is aborted) and given ``SHUTDOWN_GRACE_SECONDS`` to settle in the
    store as ``cancelled``; a run that overruns is marked ``interrupted`` at the next open.
    """

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()

    def start(self, run: LiveRun, channel: RunChannel) -> None:
        """Run ``run`` in a new worker thread, pushing its events to ``channel``."""
        thread = threading.Thread(
            target=self._work, args=(run, channel), name="toolwire-run", daemon=True
        )
        with self._lock:
            self._threads.add(thread)
        thread.start()

    def _work(self, run: LiveRun, channel: RunChannel) -> None:
        try:
            _work(self.runtime, run, channel)
        finally:
            with self._lock:
                self._threads.discard(threading.current_thread())

    def stop(self, grace_seconds: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Cancel every running run and wait, up to ``grace_seconds`` in all, for them to end."""
        for run_id in self.runtime.running():
            self.runtime.cancel(run_id)
        with self._lock:
            threads = list(self._threads)
        deadline = time.monotonic() + grace_seconds
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def _work(runtime: Runtime, run: LiveRun, channel: RunChannel) -> None:
    sent_context = False

    def on_start(run_id: str) -> None:
        nonlocal sent_context
        sent_context = True
        channel.push({**run.context, "run_id": run_id})

    def on_step(step: RunStep) -> None:
        channel.push({"type": "step", "step": step.to_dict()})

    try:
        outcome = asyncio.run(runtime.run(run.request, observers=[on_step], on_start=on_start))
        event = terminal_event(outcome)
    except Exception:
        log.exception("the run's worker failed")
        event = {"type": "error", "status": "failed", "message": RUN_FAILED}
    if not sent_context:
        channel.push({**run.context, "run_id": None})
    channel.push(event)


def terminal_event(outcome: RunOutcome) -> Event:
    """The one terminal event for how ``outcome`` ended; ``type`` comes first."""
    event = _terminal(outcome)
    return {"type": event["type"], **event}


def _terminal(outcome: RunOutcome) -> Event:
    base: Event = {"run_id": outcome.run_id, "wall_ms": round(outcome.wall_ms, 2)}
    if outcome.store_error:
        base["store_error"] = outcome.store_error
    status = outcome.status
    if status is RunStatus.COMPLETED:
        return {**base, **_done(outcome)}
    if status is RunStatus.AWAITING_APPROVAL or status is RunStatus.AWAITING_INPUT:
        return {**base, "type": str(status), "status": str(status)}
    if status is RunStatus.CANCELLED:
        return {**base, "type": "cancelled", "status": "cancelled", "message": CANCELLED_MESSAGE}
    if status is RunStatus.FAILED or status is RunStatus.INTERRUPTED:
        return {**base, "type": "error", "status": "failed", "message": outcome.error or RUN_FAILED}
    if status is RunStatus.RUNNING:  # a settled outcome is never running; say so safely
        return {**base, "type": "error", "status": "failed", "message": RUN_FAILED}
    assert_never(status)


def _done(outcome: RunOutcome) -> Event:
    result = outcome.result
    if result is None:
        return {"type": "error", "status": "failed", "message": RUN_FAILED}
    usage = result.usage
    return {
        "type": "done",
        "status": "completed",
        "final_content": result.final_content,
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
        "iterations": result.iterations,
        "truncated": result.truncated,
        "reason": str(result.reason),
    }


def encode_line(event: Event, *, pad: bool = True) -> bytes:
    """One NDJSON line: canonical JSON (valid UTF-8 always), padded, newline-terminated."""
    body = sink_dumps_bytes(event)  # a NaN in a raw body must not cost the line
    if pad and len(body) < STREAM_LINE_MIN_BYTES:
        body += b" " * (STREAM_LINE_MIN_BYTES - len(body))
    return body + b"\n"


async def ndjson(channel: RunChannel) -> AsyncIterator[bytes]:
    """The response body: one flushed line per event."""
    async for event in channel.events():
        yield encode_line(event)
