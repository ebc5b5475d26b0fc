"""Following a run from the store, whichever process executes it: the live view's events.

The events are the ones a local run streams (see :mod:`toolwire.inspector.stream`): one
``context`` line, one ``step`` line per stored step in order (with the ``egress`` line of a step
that sent tool output after it, from the store's ledger), then exactly one ``end`` line
with the run's status. What a follower reads is the store's copy of each step, at the run's
privacy level (the unfiltered live view exists only in the process that runs it).

The store is read every ``POLL_SECONDS`` (one indexed query for the steps after the last one
seen): bounded polling, the same against SQLite and PostgreSQL, with nothing to keep open. The
events end once the run is waiting for a person or has ended (a run waiting on an MCP server's
live question is still carried on by its process: it is followed on); a run cancelled while running
ends once its worker has settled it, or ``SETTLE_WAIT_SECONDS`` after the cancel if no worker
does (it stopped).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime
from typing import Any

from toolwire.core.errors import DecisionError, StateError
from toolwire.core.lifecycle import CANCELLED_MESSAGE, RUN_FAILED, RunStatus
from toolwire.loop.state import Pause
from toolwire.store.records import RunSummary
from toolwire.store.runs import RunStore

Event = dict[str, Any]
POLL_SECONDS = 0.1  # how late a followed step may show; a step takes longer to make
SETTLE_WAIT_SECONDS = 5.0
_LIVE = frozenset({RunStatus.QUEUED.value, RunStatus.RUNNING.value})


async def follow(
    store: RunStore,
    run_id: str,
    *,
    after: int = 0,
    pending: Callable[[str], Pause] | None = None,
    poll: float = POLL_SECONDS,
) -> AsyncIterator[Event]:
    """The events of ``run_id`` as the store records them, from the step after sequence
    ``after``; none when there is no such run.

    ``pending`` opens a waiting run's pause (it needs the state key) for its end line."""
    progress = await asyncio.to_thread(store.progress, run_id, after)
    if progress is None:
        return
    yield context_event(progress.run)
    last, cancelled_at, llm = after, None, None
    while True:
        for step in progress.steps:
            yield {"type": "step", "step": step}
            last = int(step["sequence"])
            sent = progress.egress.get(last)
            if sent is not None:
                yield sent
            llm = step if step.get("kind") == "llm" else llm
        run = progress.run
        if run.status == RunStatus.CANCELLED.value and not progress.settled:
            cancelled_at = cancelled_at or time.monotonic()
        if _ended(run, progress.settled, cancelled_at) and not await _asking(store, run):
            pause = await asyncio.to_thread(_pause_of, run, pending)
            yield stored_end_event(run, pause, llm)
            return
        await asyncio.sleep(poll)
        found = await asyncio.to_thread(store.progress, run_id, last)
        if found is None:  # purged meanwhile
            yield {"type": "end", "status": RunStatus.FAILED.value, "run_id": run_id,
                   "message": "the run is no longer in the store"}  # fmt: skip
            return
        progress = found


async def _asking(store: RunStore, run: RunSummary) -> bool:
    """Whether ``run`` waits on a live question in its own process, which carries it on."""
    if run.status != RunStatus.AWAITING_INPUT.value:
        return False
    return await asyncio.to_thread(store.asking, run.id)


def _ended(run: RunSummary, settled: bool, cancelled_at: float | None) -> bool:
    if run.status in _LIVE:
        return False
    if run.status != RunStatus.CANCELLED.value or settled:
        return True
    return cancelled_at is not None and time.monotonic() - cancelled_at > SETTLE_WAIT_SECONDS


def _pause_of(run: RunSummary, pending: Callable[[str], Pause] | None) -> Pause | None:
    if pending is None or not RunStatus(run.status).waiting:
        return None
    try:
        return pending(run.id)
    except (DecisionError, StateError):
        return None


def context_event(run: RunSummary) -> Event:
    """The first line of a followed run: who runs it, and how it is kept."""
    return {
        "type": "context",
        "run_id": run.id,
        "provider": run.provider,
        "model": run.model,
        "privacy_level": run.privacy_level,
        "stored": True,
        "followed": True,
        "queued": run.queued,
        "status": run.status,
    }


def stored_end_event(
    run: RunSummary, pause: Pause | None, llm: Mapping[str, Any] | None = None
) -> Event:
    """The one terminal line of a followed run, from its stored row: the keys of a local run's
    ``end`` line (``final_content`` is the stored answer: empty when the privacy level keeps
    none, with ``answer_withheld``; ``stop`` and ``finish_reason`` from ``llm``, its last stored
    model call)."""
    base: Event = {"type": "end", "status": run.status, "run_id": run.id,
                   "wall_ms": _wall_ms(run)}  # fmt: skip
    status = RunStatus(run.status)
    if status in (RunStatus.COMPLETED, RunStatus.DRY_RUN):
        return base | _completed(run, llm or {})
    if status is RunStatus.REFUSED:
        return base | {"message": "the tool was not permitted; nothing ran"}
    if status.waiting:
        return base | {"pending": None if pause is None else pause.to_dict()}
    if status is RunStatus.CANCELLED:
        return base | {"message": CANCELLED_MESSAGE}
    return base | {"message": run.error or RUN_FAILED}


def _completed(run: RunSummary, llm: Mapping[str, Any]) -> Event:
    return {
        "final_content": run.final_answer or "",
        "answer_withheld": run.final_answer is None and bool(run.final_answer_length),
        "usage": {
            "prompt_tokens": run.prompt_tokens,
            "completion_tokens": run.completion_tokens,
            "total_tokens": run.prompt_tokens + run.completion_tokens,
            "tokens_known": run.tokens_known,  # False: the counts are toolwire's estimate
        },
        "iterations": run.rounds,
        "truncated": run.truncated,
        "reason": run.termination_reason,
        "stop": llm.get("stop"),
        "finish_reason": llm.get("finish_reason"),
        "refusal": llm.get("refusal"),
        "cost": run.cost,
        "cost_complete": run.cost_complete,
        "cost_estimated": run.cost_estimated,  # True: priced from estimated tokens
    }


def _wall_ms(run: RunSummary) -> float | None:
    if run.finished_at is None:
        return None
    elapsed = datetime.fromisoformat(run.finished_at) - datetime.fromisoformat(run.created_at)
    return round(elapsed.total_seconds() * 1000, 2)
