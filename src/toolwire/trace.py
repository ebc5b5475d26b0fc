"""The run trace: every step of a run, recorded in order and pushed to observers at once.

Observers are called synchronously, in subscription order, the moment a step is recorded; the
``request`` step is recorded before the provider call, so a live view sees it while the model is
still thinking. An observer that raises stops the run: that is how cancellation works.

Artifacts live here (``RunStep.tool_artifacts``, ``ToolInvocation.artifacts``) and go on to the
live stream and the store's privacy filter; never to a provider.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from toolwire.messages import ChatMessage, ToolCall
from toolwire.providers.base import CompletionResponse
from toolwire.result import Artifact

StepKind = Literal["request", "llm", "tool", "decision"]
Observer = Callable[["RunStep"], None]

# Output key order, so that stored and streamed steps read the same way everywhere.
_FIELDS = (
    "kind", "round", "duration_ms", "messages_sent", "tool_specs", "content", "thinking",
    "finish_reason", "prompt_tokens", "completion_tokens", "total_tokens", "requested_tool_calls",
    "raw", "tool_call_id", "tool_name", "tool_arguments", "tool_result", "tool_result_bytes",
    "tool_is_error", "tool_artifacts", "refusals", "decision", "decided_by", "decision_reason",
    "turn_digest",
)  # fmt: skip


class RunStep(NamedTuple):
    """One recorded step. Fields that do not apply to a kind stay ``None`` and are not emitted.

    A NamedTuple rather than a frozen dataclass: just as immutable, and five times cheaper to
    build (a frozen dataclass sets its 21 slots one call at a time), which matters because a run
    records a step for every request, answer and tool call. Build it with keywords.
    """

    kind: StepKind
    round: int
    duration_ms: float = 0.0
    # request
    messages_sent: tuple[ChatMessage, ...] | None = None
    tool_specs: tuple[str, ...] | None = None
    refusals: tuple[Mapping[str, str], ...] | None = None
    # llm
    content: str | None = None
    thinking: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    requested_tool_calls: tuple[ToolCall, ...] | None = None
    raw: Mapping[str, Any] | None = None
    # tool
    tool_call_id: str | None = None
    tool_name: str | None = None
    tool_arguments: Any = None
    tool_result: str | None = None
    tool_result_bytes: int | None = None  # what the tool returned, before the cap
    tool_is_error: bool | None = None
    tool_artifacts: tuple[Artifact, ...] | None = None
    # decision: a person approved, denied or answered a paused turn (never the input itself)
    decision: str | None = None
    decided_by: str | None = None
    decision_reason: str | None = None
    turn_digest: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data: absent fields dropped, 0 and false kept, duration to 2 decimals."""
        out: dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = _plain(name, value)
        return out


def _plain(name: str, value: Any) -> Any:
    if name == "duration_ms":
        return round(float(value), 2)
    if name == "messages_sent":
        return [m.to_dict() for m in value]
    if name == "requested_tool_calls":
        return [c.to_dict() for c in value]
    if name == "tool_artifacts":
        return [a.to_dict() for a in value]
    if name in ("tool_specs", "refusals"):
        return [dict(v) if isinstance(v, Mapping) else v for v in value]
    return value


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    """One executed call, as the loop's result lists it."""

    name: str
    arguments: Any
    result: str
    is_error: bool
    artifacts: tuple[Artifact, ...] = ()
    call_id: str = ""


class RunTrace:
    """Collects steps in recording order and notifies observers synchronously."""

    def __init__(self, *, capture_raw: bool = False, observers: Sequence[Observer] = ()) -> None:
        self.capture_raw = capture_raw
        self.steps: list[RunStep] = []
        self._observers: list[Observer] = list(observers)

    def subscribe(self, observer: Observer) -> None:
        self._observers.append(observer)

    def record(self, step: RunStep) -> RunStep:
        self.steps.append(step)
        for observer in self._observers:
            observer(step)
        return step

    def record_request(
        self,
        round: int,
        messages: Sequence[ChatMessage],
        tool_names: Sequence[str],
        refusals: Sequence[Mapping[str, str]] = (),
    ) -> RunStep:
        return self.record(
            RunStep(
                kind="request",
                round=round,
                messages_sent=tuple(messages),
                tool_specs=tuple(tool_names),
                refusals=tuple(refusals) or None,
            )
        )

    def record_llm(self, round: int, duration_ms: float, response: CompletionResponse) -> RunStep:
        usage = response.usage
        return self.record(
            RunStep(
                kind="llm",
                round=round,
                duration_ms=duration_ms,
                content=response.content,
                thinking=response.thinking or None,
                finish_reason=response.finish_reason,
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                total_tokens=usage.total_tokens,
                requested_tool_calls=response.tool_calls or None,
                raw=response.raw if self.capture_raw else None,
            )
        )

    def record_decision(
        self, round: int, decision: str, decided_by: str, reason: str | None, digest: str
    ) -> RunStep:
        return self.record(
            RunStep(
                kind="decision",
                round=round,
                decision=decision,
                decided_by=decided_by,
                decision_reason=reason,
                turn_digest=digest,
            )
        )

    def record_tool(
        self,
        round: int,
        duration_ms: float,
        invocation: ToolInvocation,
        original_bytes: int | None = None,
    ) -> RunStep:
        return self.record(
            RunStep(
                kind="tool",
                round=round,
                duration_ms=duration_ms,
                tool_call_id=invocation.call_id or None,
                tool_name=invocation.name,
                tool_arguments=invocation.arguments,
                tool_result=invocation.result,
                tool_result_bytes=original_bytes,
                tool_is_error=invocation.is_error,
                tool_artifacts=invocation.artifacts or None,
            )
        )
