"""A turn's calls as the loop runs them: through the seam (and the checkpoint, when there is one),
with held values replaced and questions about them asked (:mod:`toolwire.loop.holding`), each
call's step recorded and its result labelled as it enters the conversation.

Invariants:
- The only tool output a call adds to the conversation is its bounded ``ToolResult.content``,
  through ``tool_message``; artifacts go to the trace only.
- A call is recorded (and its step kept) in the model's order, whichever finished first
  (:func:`toolwire.loop.turn.run_turn`).
- A run that holds no values, and offers no quarantining tool, takes none of the holding path.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from toolwire.core.messages import ChatMessage, ToolCall, ToolSpec, tool_message
from toolwire.core.output import Checked, OutputSchema
from toolwire.core.trust import Integrity
from toolwire.loop.endings import Spent
from toolwire.loop.holding import Holding, ready
from toolwire.loop.offer import Offer
from toolwire.loop.seam import Invoked, Seam
from toolwire.loop.state import RunState
from toolwire.loop.turn import Job, run_turn
from toolwire.policy.containment import Provenance
from toolwire.policy.quarantine import ASK_ABOUT, Vault
from toolwire.policy.trace import Held, RunTrace, ToolInvocation
from toolwire.providers.base import CompletionResponse
from toolwire.tools.api import ToolContext

__all__ = ["Checkpoint", "Complete", "recorded", "run_calls"]

_new = tuple.__new__  # a NamedTuple from its fields in order, without its ``__new__``'s frame


class Checkpoint(Protocol):
    """Where a queued run keeps its progress, so another worker can carry it on.

    ``invoke`` wraps each call of a turn: ``run`` executes it through the seam. (A worker's
    checkpoint marks a write started before it runs and keeps its result after, and answers a
    call already recorded without running it.) ``round_done`` gets the state after each
    completed round.
    """

    def invoke(self, job: Job, run: Callable[[], Awaitable[Invoked]]) -> Awaitable[Invoked]: ...

    async def round_done(self, state: RunState) -> None: ...


class Complete(Protocol):
    """The loop's provider call (``ToolLoop._complete``), as a question about a held value
    makes it: no tools offered, the answer checked against ``output``."""

    def __call__(
        self,
        state: RunState,
        trace: RunTrace,
        round_: int,
        specs: tuple[ToolSpec, ...],
        *,
        count: bool = ...,
        output: OutputSchema | None,
    ) -> Awaitable[tuple[CompletionResponse, Spent, Checked | None]]: ...


async def run_calls(
    jobs: Sequence[Job],
    trace: RunTrace,
    round_: int,
    state: RunState,
    *,
    context: ToolContext,
    offer: Offer,
    messages: list[ChatMessage],
    invocations: list[ToolInvocation],
    seam: Seam,
    checkpoint: Checkpoint | None,
    complete: Complete,
) -> tuple[Provenance, Vault | None, list[Spent]]:
    """A turn's calls through :func:`run_turn`, each through the checkpoint if there is one,
    their messages and invocations appended to ``messages`` and ``invocations``; what the run's
    context holds once their results entered it, the run's vault after them (None: the turn
    held nothing), and what its questions about held values spent."""
    concurrency = state.options.max_concurrency
    # Whether a call may have another call of its turn beside it (see the seam's rule).
    several = concurrency > 1 and sum(job.refused is None for job in jobs) > 1
    offered, gate = state.offered, offer.gate
    labels, entered = offer.labels, [state.provenance]
    holding = (
        Holding(state.vault, labels, round_) if offer.vaulting or state.vault.variables
        else None
    )  # fmt: skip
    asked: list[Spent] = []

    def invoke(job: Job) -> Awaitable[Invoked]:
        inline = offer.inline(job.call.name, overlapping=several and not job.alone)
        arguments = job.arguments
        if holding is not None:
            if job.call.name == ASK_ABOUT and offer.asks:

                def question() -> Awaitable[Invoked]:
                    return holding.ask(job, gate, ask)

                return question() if checkpoint is None else checkpoint.invoke(job, question)
            given = holding.arguments(job)
            if isinstance(given, Invoked):
                return ready(given)
            arguments = given

        def run() -> Awaitable[Invoked]:
            return seam.invoke(job.call, offered, context, arguments, gate, inline=inline)

        return run() if checkpoint is None else checkpoint.invoke(job, run)

    async def ask(
        messages: tuple[ChatMessage, ...], schema: OutputSchema
    ) -> tuple[str, Checked | None]:
        asking = RunState(messages=messages, rounds=round_ - 1,
                          options=replace(state.options, stream=False))  # fmt: skip
        response, spent, checked = await complete(
            asking, trace, round_, (), count=False, output=schema
        )
        asked.append(spent)
        return response.content, checked

    def record(job: Job, invoked: Invoked, elapsed_ms: float, started: float | None) -> None:
        name = job.call.name
        integrity = labels.integrity(name, refused=invoked.refused is not None)
        if holding is None:
            held = None
            entered[0] = labels.entered(entered[0], round_, name, integrity)
        else:
            invoked, integrity, entered[0], held = holding.recorded(job, invoked, integrity,
                                                                    entered[0])  # fmt: skip
        message, invocation = recorded(trace, seam, round_, elapsed_ms, job.call, invoked,
                                       arguments=job.arguments, started=started,
                                       integrity=integrity, held=held)  # fmt: skip
        messages.append(message)
        invocations.append(invocation)

    await run_turn(jobs, invoke, record, concurrency=concurrency)
    return entered[0], None if holding is None else holding.vault, asked


def recorded(  # noqa: PLR0917 (the loop's own call, in the order it has them)
    trace: RunTrace,
    seam: Seam,
    round_: int,
    elapsed_ms: float,
    call: ToolCall,
    invoked: Invoked,
    *,
    arguments: dict[str, Any] | None,
    started: float | None,
    integrity: Integrity | None = None,
    held: Held | None = None,
) -> tuple[ChatMessage, ToolInvocation]:
    """A call's step recorded, with the label of what it put in the context; the
    conversation's message and the result's entry for it."""
    result = invoked.result
    content, is_error = result.content, result.is_error
    message = tool_message(call.id, content, is_error)  # a tool_result
    if invoked.refused is not None and trace.egress is not None:
        trace.egress.refused(call.id)
    if arguments is None:
        arguments = call.decoded_arguments()
    given = call.arguments if arguments is None else arguments
    fields = (call.name, given, content, is_error, result.artifacts, call.id)
    invocation = _new(ToolInvocation, fields)  # in order, without ``__new__``'s frame
    if trace.keeps:
        trace.record_tool(round_, elapsed_ms, invocation, invoked.original_bytes,
                          invoked.refused, started=started, registered=seam.knows(call.name),
                          integrity=None if integrity is None else integrity.value,
                          held=held)  # fmt: skip
    return message, invocation
