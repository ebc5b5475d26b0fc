"""A live run as a sequence of events, carried from its asyncio task to an HTTP response.

Each run (or resumed segment of one) executes as an asyncio task on the server's own event
loop: the seam runs synchronous tools in a worker thread and the runtime runs its blocking
store calls through ``asyncio.to_thread``, so nothing stalls the server. Events reach the
response through a ``RunChannel``. The order is fixed:

1. exactly one ``{"type": "context", ...}`` line (run id, provider, model, replay label,
   offered tools, privacy level), before any step;
2. one ``{"type": "step", "step": {...}}`` line per recorded step, pushed the moment the trace
   records it; between them, while a model answers, ``{"type": "delta", "round": n, "kind":
   "content" | "thinking", "text": "..."}`` lines with the pieces of its answer as they stream
   (the ``llm`` step of that round then carries the whole of it). A ``request`` step after the
   stream's first carries only what is new since the previous one (see ``RequestDeltas``);
3. exactly one ``{"type": "end", "status": <RunStatus>, ...}`` line. ``completed`` carries the
   answer, usage (its ``tokens_known`` false when a call's usage was not reported, so the
   counts are estimates), iterations, truncated, reason, how the last turn stopped (``stop``,
   ``finish_reason``), the provider's ``refusal`` text and the cost (``cost`` in US dollars,
   ``cost_complete``, ``cost_estimated`` true when priced from estimated tokens); ``failed``
   and ``cancelled`` a short, safe ``message``;
   ``awaiting_approval`` and ``awaiting_input`` carry ``pending`` (the pause).

Each line is typed by ``type``; a reader skips a type it does not know (the page does), so a
new type, like a new key, keeps every reader working: ``egress`` lines came after the others.

A reader that goes away does not stop the run: the task goes on and settles in the store.

Lines are not padded: each is one chunk of the chunked response, written the moment it is made
(the ASGI server does not buffer a streamed body, and ``fetch`` hands the page each chunk as it
arrives). What could hold lines back on the way is told not to by the headers:
``X-Accel-Buffering: no`` for a buffering proxy, ``no-transform`` for one that would compress.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, assert_never

from toolwire.core.jsonenc import sink_dumps_bytes
from toolwire.core.lifecycle import CANCELLED_MESSAGE, RUN_FAILED, RunStatus
from toolwire.loop.run import RunOutcome
from toolwire.mcp.asks import attending
from toolwire.policy.trace import DeltaObserver, FailedStep, LlmStep, Observer, RunStep
from toolwire.providers.base import Delta
from toolwire.store.egress import ledger_lines

log = logging.getLogger("toolwire.inspector")

SHUTDOWN_GRACE_SECONDS = 5.0  # a cancelled run stops at its next step; a tool may take a while
NDJSON = "application/x-ndjson; charset=utf-8"
STREAM_HEADERS = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}

Event = dict[str, Any]
# A segment: given the step observer, the start callback and the delta observer, run and
# return the outcome.
Segment = Callable[[Observer, Callable[[str], None], DeltaObserver], Awaitable[RunOutcome]]


class RunChannel:
    """Events of one run, in order. Pushing never blocks and never fails.

    Pieces of a streamed answer that queued up behind a slow reader go out as one ``delta``
    line (same round, same kind, texts joined): a reader that keeps up sees every piece, and
    one that lags is not sent a line per token.
    """

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()

    def push(self, event: Event) -> None:
        self._queue.put_nowait(event)

    def close(self) -> None:
        """End the events without a terminal line (a segment refused before it started)."""
        self._queue.put_nowait(None)

    async def events(self) -> AsyncIterator[Event]:
        """Every event up to and including the terminal one."""
        held: Event | _Nothing | None = NOTHING
        while True:
            event = await self._queue.get() if held is NOTHING else held
            held = NOTHING
            if event is None or isinstance(event, _Nothing):
                return
            if event["type"] == "delta":
                event, held = self._joined(event)
            yield event
            if event["type"] == "end":
                return

    def _joined(self, delta: Event) -> tuple[Event, Event | _Nothing | None]:
        """``delta`` with the queued pieces that continue it, and the first event that does not."""
        while not self._queue.empty():
            following = self._queue.get_nowait()
            if not _continues(delta, following):
                return delta, following
            assert following is not None
            delta = {**delta, "text": delta["text"] + following["text"]}
        return delta, NOTHING


class _Nothing:
    """No event held back (``None`` already means: the events end)."""


NOTHING = _Nothing()


def _continues(delta: Event, following: Event | None) -> bool:
    return (
        following is not None
        and following["type"] == "delta"
        and (following["round"], following["kind"]) == (delta["round"], delta["kind"])
    )


class RunTasks:
    """The tasks of live runs, so that a server shutting down can settle them.

    On shutdown every running run is cancelled (it stops at its next step boundary, and an
    in-flight provider call is aborted) and given ``SHUTDOWN_GRACE_SECONDS`` to settle in the
    store as ``cancelled``; a run that overruns is marked ``interrupted`` at the next open.
    A waiting run is not running: it stays waiting, to be resumed later.
    """

    def __init__(self, cancel: Callable[[str], bool], running: Callable[[], list[str]]) -> None:
        self._cancel = cancel
        self._running = running
        self._tasks: set[asyncio.Task[None]] = set()

    def start(
        self, segment: Segment, context: Event, channel: RunChannel, *, refusable: bool = False
    ) -> asyncio.Future[str]:
        """Run ``segment`` as a task, pushing its events to ``channel``.

        The returned future gets the run id once the segment has started. With ``refusable``,
        an exception raised before the start is set on the future instead (nothing is
        streamed: the caller answers with an error); otherwise it becomes a ``failed`` end.
        """
        started: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._work(segment, context, channel, started, refusable))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return started

    async def _work(
        self,
        segment: Segment,
        context: Event,
        channel: RunChannel,
        started: asyncio.Future[str],
        refusable: bool,
    ) -> None:
        def on_start(run_id: str) -> None:
            channel.push({**context, "run_id": run_id})
            if not started.done():
                started.set_result(run_id)

        def on_step(step: RunStep) -> None:
            channel.push({"type": "step", "step": step.to_dict()})
            sent = egress_event(step)
            if sent is not None:
                channel.push(sent)

        def on_delta(round: int, delta: Delta) -> None:
            channel.push({"type": "delta", "round": round, "kind": delta.kind, "text": delta.text})

        try:
            with attending():  # a person at this page can answer a server's questions
                event = end_event(await segment(on_step, on_start, on_delta))
        except Exception as exc:
            if not started.done() and refusable:
                started.set_exception(exc)
                channel.close()
                return
            log.exception("the run failed outside the runtime")
            event = {"type": "end", "status": str(RunStatus.FAILED), "message": RUN_FAILED}
        if not started.done():
            channel.push({**context, "run_id": None})
            started.set_result("")
        channel.push(event)

    async def stop(self, grace_seconds: float = SHUTDOWN_GRACE_SECONDS) -> None:
        """Cancel every running run and wait, up to ``grace_seconds`` in all, for them to end."""
        for run_id in self._running():
            self._cancel(run_id)
        tasks = list(self._tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=grace_seconds)


def egress_event(step: RunStep) -> Event | None:
    """The ``egress`` line after ``step``: what its request sent of tool output (None: nothing)."""
    sent = step.egress if isinstance(step, (LlmStep, FailedStep)) else None
    if sent is None:
        return None
    provider, lines = ledger_lines(sent)
    return {"type": "egress", "round": step.round, "provider": provider, "copies": sent.copies,
            "lines": lines}  # fmt: skip


def end_event(outcome: RunOutcome) -> Event:
    """The one terminal line for how ``outcome`` ended."""
    base: Event = {"type": "end", "status": str(outcome.status), "run_id": outcome.run_id,
                   "wall_ms": round(outcome.wall_ms, 2)}  # fmt: skip
    if outcome.store_error:
        base["store_error"] = outcome.store_error
    status = outcome.status
    if status is RunStatus.COMPLETED or status is RunStatus.DRY_RUN:
        return {**base, **_completed(outcome)}
    if status is RunStatus.REFUSED:
        return {**base, "message": "the tool was not permitted; nothing ran"}
    if status is RunStatus.AWAITING_APPROVAL or status is RunStatus.AWAITING_INPUT:
        pause = outcome.pause
        return {**base, "pending": None if pause is None else pause.to_dict()}
    if status is RunStatus.CANCELLED:
        return {**base, "message": CANCELLED_MESSAGE}
    if status is RunStatus.FAILED or status is RunStatus.INTERRUPTED:
        return {**base, "message": outcome.error or RUN_FAILED}
    if status is RunStatus.RUNNING or status is RunStatus.QUEUED:  # never, once settled
        return {**base, "status": str(RunStatus.FAILED), "message": RUN_FAILED}
    assert_never(status)


def _completed(outcome: RunOutcome) -> Event:
    result = outcome.result
    if result is None:
        return {"status": str(RunStatus.FAILED), "message": RUN_FAILED}
    usage = result.usage
    return {
        "final_content": result.final_content,
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "tokens_known": usage.known,  # False: the counts are toolwire's estimate
        },
        "iterations": result.iterations,
        "truncated": result.truncated,
        "reason": str(result.reason),
        "stop": None if result.stop is None else str(result.stop),
        "finish_reason": result.finish_reason,
        "refusal": result.refusal,
        "cost": float(result.cost.usd),
        "cost_complete": result.cost.complete,
        "cost_estimated": result.cost.estimated,  # True: priced from estimated tokens
    }


class RequestDeltas:
    """Request steps as one stream sends them: after its first, only what is new.

    A run's conversation grows by a turn each round, and each request sends all of it again,
    so whole requests make a stream grow with the square of the run's length (14 MB for a
    1,000-step run). A request whose messages begin with some of the previous request's
    carries instead ``messages_kept`` (how many of those, from the start) and ``messages_new``
    (the messages after them), in the place of ``messages_sent``; the page rebuilds the whole
    list (``static/js/conversation.js``). The stream's first request, one that repeats
    nothing, and a step without messages (a privacy level that keeps none) go as they are.
    One per stream: every stream starts with a whole request. The store, the batch answer
    and an export keep whole requests; ``GET /api/runs/{id}?requests=delta`` is a stored run
    in this form (what the page asks for: a long run's requests would repeat it all).
    """

    def __init__(self) -> None:
        self._last: list[Any] | None = None  # the previous request's messages

    def encode(self, event: Event) -> Event:
        step = event.get("step") if event.get("type") == "step" else None
        if not isinstance(step, dict) or step.get("kind") != "request":
            return event
        messages = step.get("messages_sent")
        last, self._last = self._last, messages if isinstance(messages, list) else None
        if last is None or not isinstance(messages, list):
            return event
        kept = _kept(last, messages)
        return {**event, "step": _delta(step, kept)} if kept else event


def delta_steps(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A stored run's steps with each request after the first as the stream sends it."""
    deltas = RequestDeltas()
    return [deltas.encode({"type": "step", "step": step})["step"] for step in steps]


def _kept(last: list[Any], messages: list[Any]) -> int:
    """How many messages, from the start, ``messages`` repeats of ``last``."""
    if len(messages) >= len(last) and messages[: len(last)] == last:
        return len(last)  # the common case: the conversation only grew
    kept = 0
    for before, now in zip(last, messages, strict=False):
        if before != now:
            break
        kept += 1
    return kept


def _delta(step: dict[str, Any], kept: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in step.items():
        if key == "messages_sent":
            out["messages_kept"] = kept
            out["messages_new"] = value[kept:]
        else:
            out[key] = value
    return out


def encode_line(event: Event) -> bytes:
    """One NDJSON line: canonical JSON (valid UTF-8 always), newline-terminated."""
    return sink_dumps_bytes(event) + b"\n"  # a NaN in a raw body must not cost the line


async def ndjson(channel: RunChannel) -> AsyncIterator[bytes]:
    """The response body: one flushed line per event."""
    deltas = RequestDeltas()
    async for event in channel.events():
        yield encode_line(deltas.encode(event))
