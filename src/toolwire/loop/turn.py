"""One turn's calls: run concurrently, recorded in the order the model asked for them.

At most ``concurrency`` calls of a turn are in flight at once, each through the seam. A
sequential-only tool (:func:`toolwire.tools.api.runs_concurrently`) runs alone: it waits for
every earlier call of its turn, and later calls wait for it, so a read asked for after a write
sees the write. Each result is recorded as soon as it and every earlier call have finished.

Whatever stops the turn (its task cancelled, or an observer raising on a recorded step, which
is how a cancel from another process arrives) cancels every call still in flight, and no call
still waiting for a slot starts. A synchronous tool already running in a worker thread cannot
be interrupted; it finishes there and its result is dropped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

from toolwire.core.messages import ToolCall
from toolwire.loop.seam import Invoked

__all__ = ["Job", "run_turn"]


class Job(NamedTuple):
    """One call of a turn: run it with ``arguments``, or answer ``refused`` without running.
    (A NamedTuple: as immutable as a frozen dataclass, and half its cost on every call.)"""

    call: ToolCall
    arguments: dict[str, Any] | None
    refused: Invoked | None = None  # a fixed refusal (see :func:`toolwire.loop.seam.refusal`)
    alone: bool = False  # sequential-only: nothing else of the turn overlaps it

    def __repr__(self) -> str:
        return f"<Job {self.call.id!r} {self.call.name!r} refused={self.refused is not None}>"


Invoke = Callable[[Job], Awaitable[Invoked]]
# The job, its outcome, how long it took (ms) and when it started (``time.perf_counter()``;
# None for a refusal, which never ran).
Record = Callable[[Job, Invoked, float, float | None], None]
_Timed = tuple[Invoked, float, float | None]
_Entry = tuple[Job, "asyncio.Task[_Timed] | None"]


async def run_turn(
    jobs: Sequence[Job], invoke: Invoke, record: Record, *, concurrency: int
) -> None:
    """Run ``jobs``; ``record(job, invoked, elapsed_ms, started)`` in their order."""
    if concurrency == 1 or len(jobs) < 2:  # one after another: no task, no slot
        for job in jobs:
            if job.refused is not None:
                record(job, job.refused, 0.0, None)
                continue
            started = time.perf_counter()
            invoked = await invoke(job)
            record(job, invoked, (time.perf_counter() - started) * 1000, started)
        return
    slots = asyncio.Semaphore(concurrency)
    pending: list[_Entry] = []
    try:
        for job in jobs:
            if job.refused is not None:
                pending.append((job, None))
            elif job.alone:
                await _drain(pending, record)
                record(job, *await _timed(invoke, job))
            else:
                task = asyncio.ensure_future(_bounded(slots, invoke, job))
                pending.append((job, task))
        await _drain(pending, record)
    finally:
        await _stop([task for _, task in pending if task is not None])


async def _timed(invoke: Invoke, job: Job) -> _Timed:
    if job.refused is not None:
        return _refused(job)
    started = time.perf_counter()
    invoked = await invoke(job)
    return invoked, (time.perf_counter() - started) * 1000, started


def _refused(job: Job) -> _Timed:
    assert job.refused is not None  # a job without a task is a refused one
    return job.refused, 0.0, None


async def _bounded(slots: asyncio.Semaphore, invoke: Invoke, job: Job) -> _Timed:
    async with slots:  # the call's time counts from its slot, not from its place in the queue
        return await _timed(invoke, job)


async def _drain(pending: list[_Entry], record: Record) -> None:
    """Record every pending call in order, waiting for each; ``pending`` ends empty."""
    while pending:
        job, task = pending[0]
        # Shielded: a cancel of this turn must not reach one call before the others, or a call
        # waiting for a slot could take the slot that call frees; ``_stop`` cancels them all.
        outcome = _refused(job) if task is None else await asyncio.shield(task)
        del pending[0]
        record(job, *outcome)


async def _stop(tasks: list[asyncio.Task[_Timed]]) -> None:
    """Cancel the calls still in flight and wait until each has stopped."""
    running = [task for task in tasks if not task.done()]
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running)
