"""How a run (or a segment of it) ends: the reasons, the turns that end it, and budgets.

A model turn without tool calls ends the run unless it is a paused turn (sent back to be
continued) or a tool call the API could not parse (the model is told and tries again). A cut
answer is ``truncated`` with its reason; a refusal or a safety block ends the run with its own
reason and the provider's words. Budgets are checked after each model turn, before any of its
calls run: the turn that crossed one is recorded, nothing after it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from toolwire.core.lifecycle import TerminationReason
from toolwire.core.messages import ChatMessage
from toolwire.core.output import Checked, OutputSchema
from toolwire.core.reprs import ident, size, tagged
from toolwire.loop.seam import answer_not_matching, malformed_call
from toolwire.loop.state import RunState
from toolwire.loop.window import Tally
from toolwire.policy.options import RunOptions
from toolwire.policy.pricing import Cost
from toolwire.policy.trace import ToolInvocation
from toolwire.providers.base import CompletionResponse, Stop, Usage


class Ending(NamedTuple):
    """How a turn without tool calls ends the run: why, and whether the answer is cut."""

    reason: TerminationReason
    truncated: bool


_ENDINGS: dict[Stop, Ending] = {
    Stop.END: Ending(TerminationReason.COMPLETED, False),
    Stop.TOOL_CALLS: Ending(TerminationReason.COMPLETED, False),  # asked for tools, sent none
    Stop.OTHER: Ending(TerminationReason.COMPLETED, False),
    Stop.MAX_TOKENS: Ending(TerminationReason.MAX_TOKENS, True),
    Stop.CONTEXT_WINDOW: Ending(TerminationReason.CONTEXT_WINDOW, True),
    Stop.REFUSAL: Ending(TerminationReason.REFUSED, False),
    Stop.BLOCKED: Ending(TerminationReason.BLOCKED, False),
}


_WHOLE = frozenset({Stop.END, Stop.TOOL_CALLS, Stop.OTHER})  # a turn whose answer is whole


def ending(response: CompletionResponse) -> Ending | None:
    """How a turn without tool calls ends the run; None when the run goes on (a paused turn,
    or a tool call the API could not parse)."""
    return _ENDINGS.get(response.stop)


def continuation(response: CompletionResponse) -> tuple[ChatMessage, ...]:
    """What goes into the conversation when a turn without tool calls does not end the run."""
    if response.stop is Stop.PAUSED:  # the API continues the turn it gets back, verbatim
        return (ChatMessage.assistant(response.content, (), response.provider_state),)
    return (ChatMessage.user(malformed_call()),)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopResult:
    final_content: str
    trace: tuple[ToolInvocation, ...]
    iterations: int
    truncated: bool
    reason: TerminationReason
    usage: Usage
    cost: Cost = field(default_factory=Cost)
    stop: Stop | None = None  # how the last model turn ended
    finish_reason: str | None = None  # the provider's own word for it
    refusal: str | None = None  # what the provider said when it refused or blocked
    suspended: RunState | None = None  # set exactly when ``reason`` is SUSPENDED
    # The answer's value, when the run required an output schema and the answer matched it
    # (the pydantic model it was asked as, or plain JSON); None otherwise.
    output: Any = None

    def __repr__(self) -> str:
        """How the run ended and its sizes. Cheap on purpose: ``asyncio.run`` formats it."""
        return tagged(
            "LoopResult",
            reason=self.reason,
            iterations=self.iterations,
            truncated=self.truncated,
            final_content_bytes=size(self.final_content),
            calls=len(self.trace),
            total_tokens=self.usage.total_tokens,
            cost_usd=self.cost.usd,
            stop=self.stop,
            finish_reason=ident(self.finish_reason),
            refusal_bytes=size(self.refusal),
            suspended=self.suspended,
        )


def result_of(
    state: RunState,
    content: str,
    truncated: bool,
    reason: TerminationReason,
    suspended: RunState | None = None,
    *,
    iterations: int | None = None,
    response: CompletionResponse | None = None,
    output: Any = None,
) -> LoopResult:
    return LoopResult(
        final_content=content,
        trace=state.invocations,
        iterations=state.rounds if iterations is None else iterations,
        truncated=truncated,
        reason=reason,
        usage=state.usage,
        cost=state.cost,
        stop=None if response is None else response.stop,
        finish_reason=None if response is None else response.finish_reason,
        refusal=None if response is None else response.refusal,
        suspended=suspended,
        output=output,
    )


def check_answer(output: OutputSchema, response: CompletionResponse) -> Checked | None:
    """A final answer checked against the run's output schema; None for a turn that is not a
    whole answer (cut, refused, blocked, paused): it ends or goes on for its own reason."""
    if response.stop not in _WHOLE:
        return None
    return output.check(response.content)


def ask_again(response: CompletionResponse, checked: Checked) -> tuple[ChatMessage, ...]:
    """The answer that did not match, and the turn that asks for one that does."""
    problem = checked.problem or "it does not match"
    answer = ChatMessage.assistant(response.content, (), response.provider_state)
    return answer, ChatMessage.user(answer_not_matching(problem))


def answered(
    state: RunState,
    response: CompletionResponse,
    ended: Ending,
    output: OutputSchema | None,
    checked: Checked | None,
) -> LoopResult:
    """The end of a run at a final answer: its value when the run required a schema and the
    answer matches, ``output_invalid`` when it does not."""
    if checked is None or output is None:
        return result_of(state, response.content, ended.truncated, ended.reason,
                         response=response)  # fmt: skip
    if checked.problem is not None:
        return result_of(state, response.content, True, TerminationReason.OUTPUT_INVALID,
                         response=response)  # fmt: skip
    return result_of(state, response.content, ended.truncated, ended.reason, response=response,
                     output=output.parse(checked.value))  # fmt: skip


def over_budget(state: RunState) -> bool:
    """Whether the run has spent its token or dollar budget (only checked between rounds)."""
    return past_budget(state.options, state.usage, state.cost)


def past_budget(options: RunOptions, usage: Usage, cost: Cost) -> bool:
    """Whether ``usage`` and ``cost`` are past the token or dollar budget of ``options``."""
    if options.max_total_tokens is not None and usage.total_tokens > options.max_total_tokens:
        return True
    return options.max_cost is not None and cost.shown > options.max_cost


class Spent(NamedTuple):
    """What a run stands at once a provider call is made: its rounds, usage, cost and the
    conversation's tally. The round's one new state takes them (:meth:`of`), with its
    messages, when the round ends."""

    rounds: int
    usage: Usage
    cost: Cost
    tally: Tally | None

    def of(self, state: RunState, messages: tuple[ChatMessage, ...] = ()) -> RunState:
        """``state`` having spent this, ``messages`` appended to its conversation."""
        kept = (*state.messages, *messages) if messages else state.messages
        return state.after_round(kept, state.invocations, self, state.remote_calls)

    def over_budget(self, options: RunOptions) -> bool:
        return past_budget(options, self.usage, self.cost)
