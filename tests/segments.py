"""A run of two segments whose model reports usage and has prices: it asks for a write that
needs approval (round 1), waits, is approved and resumed, and goes on (rounds 2 and 3). The
resumed segment can also fail at one of its model calls (a provider error) or be cancelled once
its first model call is recorded. Shared by the store's and the telemetry's tests of how
segments account."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from toolwire import RunOptions, ToolRegistry, tool
from toolwire.core.errors import ServerError
from toolwire.core.messages import ToolCall
from toolwire.core.sealing import StateKey
from toolwire.policy.trace import LlmStep, RunStep
from toolwire.providers.base import CompletionRequest, CompletionResponse, Stop, Usage
from toolwire.runs.runtime import OperatorDecision, RunOutcome, RunRecorder, RunRequest, Runtime
from toolwire.telemetry import RunTelemetry

from .fakes import PricedModel

Ending = Literal["completed", "failed", "cancelled"]
USAGES = (Usage(prompt_tokens=100, completion_tokens=10),
          Usage(prompt_tokens=150, completion_tokens=20),
          Usage(prompt_tokens=180, completion_tokens=28))  # fmt: skip
TURNS = (
    CompletionResponse(tool_calls=(ToolCall.of("c1", "mark", {"n": 1}),), stop=Stop.TOOL_CALLS,
                       usage=USAGES[0], model="gpt-4o-mini"),
    CompletionResponse(tool_calls=(ToolCall.of("c2", "note", {"n": 2}),), stop=Stop.TOOL_CALLS,
                       usage=USAGES[1], model="gpt-4o-mini"),
    CompletionResponse(content="all marked", usage=USAGES[2], model="gpt-4o-mini"),
)  # fmt: skip


@tool(data_class="public", requires_approval=True)
def mark(n: int) -> str:
    """Write a mark (needs approval)."""
    return f"marked {n}"


@tool(data_class="public")
def note(n: int) -> str:
    """Note a number."""
    return f"noted {n}"


class Failing(PricedModel):
    """Fails (HTTP 503) at the request numbered ``fail_at`` (1-based), answers the others."""

    def __init__(self, *responses: CompletionResponse, fail_at: int | None) -> None:
        super().__init__(*responses)
        self.fail_at = fail_at

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        if len(self.requests) + 1 == self.fail_at:
            self.requests.append(request)
            raise ServerError("upstream down", status=503)
        return await super().complete(request)


@dataclass(frozen=True, slots=True)
class TwoSegments:
    waiting: RunOutcome
    ended: RunOutcome

    @property
    def steps(self) -> Sequence[RunStep]:
        return (*self.waiting.steps, *self.ended.steps)

    @property
    def calls(self) -> list[LlmStep]:
        return [s for s in self.steps if isinstance(s, LlmStep)]


def two_segments(
    ending: Ending = "completed",
    *,
    recorder: RunRecorder | None = None,
    telemetry: RunTelemetry | None = None,
    fail_at: int = 3,
    name: str | None = None,
) -> TwoSegments:
    """Run, approve, resume: the resumed segment ends as ``ending`` says (a failed one at the
    model call numbered ``fail_at``: 2 is the resumed segment's first). ``name``: the run's."""
    provider = Failing(*TURNS, fail_at=fail_at if ending == "failed" else None)
    runtime = Runtime(ToolRegistry([mark, note]), recorder=recorder, telemetry=telemetry,
                      state_key=StateKey.generate())  # fmt: skip
    request = RunRequest.of("mark it", provider=provider, model="gpt-4o-mini",
                            options=RunOptions(max_rounds=5, name=name))  # fmt: skip
    waiting = runtime.run_sync(request)
    assert waiting.pause is not None, waiting

    def cancel_after_round_2(step: RunStep) -> None:
        if ending == "cancelled" and isinstance(step, LlmStep) and step.round == 2:
            runtime.cancel(waiting.run_id)

    decision = OperatorDecision(action="approve", digest=waiting.pause.digest, actor="ann")
    ended = runtime.resume_sync(waiting.run_id, decision, provider=provider,
                                observers=[cancel_after_round_2])  # fmt: skip
    assert ended.status == ending, ended
    return TwoSegments(waiting, ended)
