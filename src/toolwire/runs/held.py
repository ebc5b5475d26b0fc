"""A held call: a direct call that waits for a person while its caller waits for the answer.

A caller with no model (an MCP host calling through ``toolwire mcp``) may call a tool that
needs an operator's approval or input. Its one-step run then suspends like any run: status
``awaiting_approval`` (or ``awaiting_input``), the call's preview, the sealed state. Any
process sharing the store and the state key decides it (the inspector, ``toolwire runs
approve``, ``Runtime.resume``); the decider runs the call, with the caller's user and workspace
under the live gate, records it with its artifacts, and, since nobody else can carry the
answer to the caller, hands it over: the content and whether it is an error, sealed in the
run's row (never artifacts, which stay in the run's steps). The caller polls the store, takes
the answer (which erases it) and opens it.

- The caller waits for a decision for at most its timeout; a run still waiting then is
  claimed by the caller, like a decision would be, and ends cancelled: nothing ran, the call's
  step records it refused (``not_decided``, so the governance log has its row) with the fixed
  text the caller reads. A run a decider has claimed is already running: the caller waits for
  it to end.
- A caller that goes away cancels the run: a waiting run never resumes, a running one stops at
  its next step boundary.
- Every text the caller reads on a refusal comes from :mod:`toolwire.loop.seam`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from toolwire.core.errors import StateError
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey, require
from toolwire.loop import seam
from toolwire.policy.trace import ToolInvocation

if TYPE_CHECKING:
    from toolwire.loop.run import RunOutcome
    from toolwire.loop.state import Pause
    from toolwire.policy.trace import RunTrace
    from toolwire.runs.recorder import Recording

log = logging.getLogger("toolwire.held")

ANSWER = "held-answer"  # the sealing purpose of a handed-over answer
# How often a waiting caller looks at the store: a person decides in seconds, and one indexed
# read per poll is nothing to a database.
POLL_SECONDS = 0.1


@dataclass(frozen=True, slots=True, kw_only=True)
class CallAnswer:
    """What the caller of a direct call reads: the call's content, and whether it failed."""

    content: str
    is_error: bool

    @classmethod
    def error(cls, text: str) -> CallAnswer:
        return cls(content=text, is_error=True)


class AnswerBox(Protocol):
    """Where a held call's answer waits for its caller (the run store)."""

    def hand_over(self, run_id: str, sealed: str) -> None: ...
    def take_answer(self, run_id: str) -> tuple[RunStatus, str | None] | None: ...


def answer_of(outcome: RunOutcome, name: str) -> CallAnswer:
    """The caller's answer from how the call's one-step run ended."""
    result = outcome.result
    if result is not None and result.trace and outcome.status in _ANSWERED:
        invocation = result.trace[-1]
        return CallAnswer(content=invocation.result, is_error=invocation.is_error)
    if outcome.status is RunStatus.CANCELLED:
        return CallAnswer.error(seam.call_cancelled(name))
    return CallAnswer.error(seam.tool_failed(name))


_ANSWERED = frozenset({RunStatus.COMPLETED, RunStatus.REFUSED})


def hand_over(key: StateKey | None, run: Recording, outcome: RunOutcome, name: str) -> None:
    """Seal the held call's answer for its caller; a failure is logged, and the caller then
    reads that the answer was lost."""
    try:
        sealed = seal_answer(key, run.run_id, answer_of(outcome, name))
    except StateError:
        log.exception("run %s: the answer of a held call could not be sealed", run.run_id)
        return
    run.guard(lambda: run.recorder.hand_over(run.run_id, sealed), None)


def record_undecided(
    trace: RunTrace, pause: Pause, seconds: float, knows: Callable[[str], bool]
) -> None:
    """The steps of a held call nobody decided within ``seconds``: each call it waited to run,
    refused with the text its caller reads. ``knows`` says whether a name is a registered tool."""
    for call in pause.calls:
        arguments = call.decoded_arguments()
        invocation = ToolInvocation(
            name=call.name,
            arguments=call.arguments if arguments is None else arguments,
            result=seam.not_decided_in_time(call.name, seconds),
            is_error=True,
            call_id=call.id,
        )
        trace.record_tool(0, 0.0, invocation, refused=seam.Refused.NOT_DECIDED,
                          registered=knows(call.name))  # fmt: skip


def seal_answer(key: StateKey | None, run_id: str, answer: CallAnswer) -> str:
    body = json.dumps({"content": answer.content, "is_error": answer.is_error})
    return require(key).seal(run_id, body, purpose=ANSWER)


def open_answer(key: StateKey | None, run_id: str, sealed: str) -> CallAnswer:
    """The answer ``seal_answer`` sealed; ``StateError`` when it cannot be opened or read."""
    data = json.loads(require(key).open(run_id, sealed, purpose=ANSWER))
    if not isinstance(data, dict):
        raise StateError("a held call's answer does not have the expected shape")
    content, is_error = data.get("content"), data.get("is_error")
    if not isinstance(content, str) or not isinstance(is_error, bool):
        raise StateError("a held call's answer does not have the expected shape")
    return CallAnswer(content=content, is_error=is_error)


async def await_answer(
    box: AnswerBox,
    key: StateKey | None,
    run_id: str,
    name: str,
    *,
    decision_seconds: float,
    expire: Callable[[], Awaitable[bool]],
    poll: float = POLL_SECONDS,
) -> CallAnswer:
    """Wait for the held call ``run_id`` of tool ``name`` to be decided and run; its answer.

    A run still waiting for a decision after ``decision_seconds`` is ended by ``expire``
    (False: it was decided or cancelled meanwhile)."""
    deadline = time.monotonic() + decision_seconds
    while True:
        found = await asyncio.to_thread(box.take_answer, run_id)
        if found is None:
            return CallAnswer.error(seam.tool_failed(name))  # the run is gone (purged)
        status, sealed = found
        if status.terminal:
            return _ended(key, run_id, name, status, sealed)
        if status.waiting and time.monotonic() >= deadline:
            if await expire():
                return CallAnswer.error(seam.not_decided_in_time(name, decision_seconds))
            continue  # decided or cancelled meanwhile: look again
        await asyncio.sleep(poll)


def _ended(
    key: StateKey | None, run_id: str, name: str, status: RunStatus, sealed: str | None
) -> CallAnswer:
    if sealed is not None:
        try:
            return open_answer(key, run_id, sealed)
        except (StateError, ValueError):
            log.warning("the answer of held run %s could not be opened", run_id, exc_info=True)
            return CallAnswer.error(seam.answer_lost(name))
    if status is RunStatus.CANCELLED:
        return CallAnswer.error(seam.call_cancelled(name))
    if status is RunStatus.COMPLETED:
        return CallAnswer.error(seam.answer_lost(name))
    return CallAnswer.error(seam.tool_failed(name))
