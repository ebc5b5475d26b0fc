"""The run trace: every step of a run, recorded in order and pushed to observers at once.

Observers are called synchronously, in subscription order, the moment a step is recorded; the
``request`` step is recorded before the provider call, so a live view sees it while the model is
still thinking. An observer that raises stops the run: that is how cancellation works.

Artifacts live here (``ToolStep.tool_artifacts``, ``ToolInvocation.artifacts``) and go on to the
live stream and the store's privacy filter; never to a provider.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

from toolwire.core import egress as _egress
from toolwire.core.egress import Sent
from toolwire.core.messages import ChatMessage, ToolCall
from toolwire.core.output import Checked
from toolwire.core.redact import redact
from toolwire.core.reprs import count, ident, shape, size, tagged
from toolwire.core.result import Artifact
from toolwire.core.text import storable
from toolwire.providers.base import (
    CompletionResponse,
    Delta,
    DeltaSink,
    FailedAttempt,
    FailureSink,
)

if TYPE_CHECKING:
    from toolwire.policy.egress import Ledger

Observer = Callable[["RunStep"], None]
DeltaObserver = Callable[[int, Delta], None]  # the round, and a piece of its streamed answer
log = logging.getLogger("toolwire.trace")
_new = tuple.__new__  # a step from its values in field order (see the steps below)
_floor = math.floor
_clock = time.perf_counter
S = TypeVar("S", "RequestStep", "LlmStep", "ToolStep", "DecisionStep", "ContextStep", "FailedStep")

# Output key order, so that stored and streamed steps read the same way everywhere. A field
# not listed here (``tool_registered``, ``registered_tool_names``) is a fact the privacy filter
# reads from the step itself: it is not part of the step's plain form.
_ORDER = (
    "kind", "round", "duration_ms", "start_ms", "messages_sent", "tool_specs", "tool_choice",
    "content", "thinking",
    "stop", "finish_reason", "refusal", "prompt_tokens", "completion_tokens", "total_tokens",
    "tokens_estimated", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "cost",
    "response_model", "response_id", "provider", "error_class", "error_status", "error",
    "next_provider", "output", "output_problem", "requested_tool_calls",
    "raw", "tool_call_id", "tool_name", "tool_arguments", "tool_result", "tool_result_bytes",
    "tool_is_error", "tool_refused", "tool_integrity", "tool_variables", "tool_received",
    "tool_held_values", "tool_artifacts", "refusals", "decision",
    "decided_by", "decision_reason", "turn_digest", "decided_at", "dropped_exchanges",
    "dropped_messages", "tokens_before", "tokens_after", "context_window", "reserved_tokens",
)  # fmt: skip

# Steps are NamedTuples rather than frozen dataclasses: just as immutable, and several times
# cheaper to build, which matters because a run records a step for every request, answer and
# tool call. Build them with keywords; the trace's own ``record_*`` methods, on every round's
# path, build theirs as plain tuples in field order (``_new``: a sixth of the keyword call's
# cost; tests/test_trace_steps.py holds each to the keyword form). ``kind`` is the tag of the
# union; sinks dispatch on the class with ``match`` and end with ``assert_never``, so mypy
# proves each handles every kind.


class RequestStep(NamedTuple):
    """What was about to be sent to the model, recorded before the call."""

    round: int
    messages_sent: tuple[ChatMessage, ...] = ()
    tool_specs: tuple[str, ...] = ()  # the names of the tools offered this round
    refusals: tuple[Mapping[str, str], ...] | None = None  # the gate's refusals, round 1 only
    tool_choice: str | None = None  # "none" when tools were sent but none may be called
    duration_ms: float = 0.0
    start_ms: float | None = None  # when it began: ms since the Unix epoch (see RunTrace)
    kind: Literal["request"] = "request"

    def to_dict(self) -> dict[str, Any]:
        return _plain(self, _REQUEST_KEYS)

    def __repr__(self) -> str:
        return tagged(
            "RequestStep",
            round=self.round,
            messages=count(self.messages_sent),
            tools=count(self.tool_specs),
            refusals=count(self.refusals),
            tool_choice=ident(self.tool_choice),
            duration_ms=_ms(self.duration_ms),
        )


class LlmStep(NamedTuple):
    """The model's answer to one request."""

    round: int
    duration_ms: float = 0.0
    content: str = ""
    thinking: str | None = None
    stop: str | None = None  # toolwire's word for how the turn ended (``Stop``)
    finish_reason: str | None = None  # the provider's own word
    refusal: str | None = None  # what the provider said when it refused or blocked
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    # True: the provider reported no usage for this turn; the counts are toolwire's estimate
    # (what budgets count), and every view says "tokens unknown".
    tokens_estimated: bool | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None  # US dollars, when the price is known
    requested_tool_calls: tuple[ToolCall, ...] | None = None
    raw: Mapping[str, Any] | None = None
    start_ms: float | None = None  # when it began: ms since the Unix epoch (see RunTrace)
    # The requested tools' names that name a registered tool (the operator's words); any other
    # name is the model's own. Not part of the plain form: see toolwire.policy.privacy.
    registered_tool_names: frozenset[str] = frozenset()
    response_model: str | None = None  # the model that answered, as the API names it
    response_id: str | None = None  # the API's id of the answer
    # A run that requires a shape of answer (toolwire.core.output): the final answer's JSON
    # value when it matches, else what does not (the schema's words only: metadata).
    output: Any = None
    output_problem: str | None = None
    # The provider of a fallback chain that gave this answer (None: the run's only provider).
    provider: str | None = None
    # What the request carried of tool output to the provider that answered (see
    # toolwire.policy.egress). Counts only; not part of the plain form: the store writes it
    # beside the step, at every privacy level.
    egress: Sent | None = None
    kind: Literal["llm"] = "llm"

    def to_dict(self) -> dict[str, Any]:
        return _plain(self, _LLM_KEYS)

    def __repr__(self) -> str:
        return tagged(
            "LlmStep",
            round=self.round,
            stop=ident(self.stop),
            finish_reason=ident(self.finish_reason),
            content_bytes=size(self.content),
            thinking_bytes=size(self.thinking),
            refusal_bytes=size(self.refusal),
            tool_calls=count(self.requested_tool_calls),
            total_tokens=self.total_tokens,
            cost=self.cost,
            raw=None if self.raw is None else shape(self.raw),
            duration_ms=_ms(self.duration_ms),
        )


class ToolStep(NamedTuple):
    """One call through the seam: its bounded result and artifacts."""

    round: int
    tool_name: str
    tool_result: str
    duration_ms: float = 0.0
    tool_call_id: str | None = None
    tool_arguments: Any = None
    tool_result_bytes: int | None = None  # what the tool returned, before the cap
    tool_is_error: bool = False
    tool_artifacts: tuple[Artifact, ...] | None = None
    tool_refused: str | None = None  # why the seam refused it (``toolwire.loop.seam.Refused``)
    start_ms: float | None = None  # when it began: ms since the Unix epoch (see RunTrace)
    # Whether ``tool_name`` names a registered tool (the operator's word) rather than one the
    # model made up; the seam's lookup says so. Not part of the plain form: see
    # toolwire.policy.privacy.
    tool_registered: bool = False
    # The integrity label of what this call put in the model's context: "trusted" or
    # "untrusted" (see toolwire.policy.containment); None: the runtime's own text.
    tool_integrity: str | None = None
    # Values the run holds for the model (see toolwire.policy.quarantine): those this call's
    # result made (handle, size, labels: metadata), the handles its arguments named, and the
    # values themselves (tool content: stored only where a level keeps tool content).
    tool_variables: tuple[dict[str, Any], ...] | None = None
    tool_received: tuple[str, ...] | None = None
    tool_held_values: tuple[dict[str, Any], ...] | None = None
    kind: Literal["tool"] = "tool"

    def to_dict(self) -> dict[str, Any]:
        return _plain(self, _TOOL_KEYS)

    def __repr__(self) -> str:
        """Names and sizes: ``result_bytes`` is what was kept, ``original_bytes`` what the
        tool returned when the cap cut it."""
        return tagged(
            "ToolStep",
            round=self.round,
            tool_name=ident(self.tool_name),
            tool_call_id=ident(self.tool_call_id),
            arguments=shape(self.tool_arguments),
            is_error=self.tool_is_error,
            refused=ident(self.tool_refused),
            result_bytes=size(self.tool_result),
            original_bytes=self.tool_result_bytes,
            artifacts=count(self.tool_artifacts),
            duration_ms=_ms(self.duration_ms),
        )


class DecisionStep(NamedTuple):
    """A person approved, denied or answered a paused turn. Never the input itself."""

    round: int
    decision: str  # approve, deny or input
    decided_by: str
    turn_digest: str
    decided_at: str  # ISO 8601, UTC
    decision_reason: str | None = None
    duration_ms: float = 0.0
    start_ms: float | None = None  # when it began: ms since the Unix epoch (see RunTrace)
    kind: Literal["decision"] = "decision"

    def to_dict(self) -> dict[str, Any]:
        return _plain(self, _DECISION_KEYS)

    def __repr__(self) -> str:
        return tagged(
            "DecisionStep",
            round=self.round,
            decision=ident(self.decision),
            decided_by=ident(self.decided_by),
            reason_bytes=size(self.decision_reason),
            turn_digest=ident(self.turn_digest),
            decided_at=ident(self.decided_at),
        )


class ContextStep(NamedTuple):
    """Old exchanges left the conversation so that the next request fits the model's window.

    Counts and token figures only (metadata): the dropped messages stay in the trace's earlier
    steps. Tokens are the provider's count of what it was last sent plus an estimate of what
    came since (see :mod:`toolwire.loop.window`)."""

    round: int  # the round whose request was made to fit
    dropped_exchanges: int
    dropped_messages: int
    tokens_before: int
    tokens_after: int
    context_window: int
    reserved_tokens: int  # kept free for the answer
    duration_ms: float = 0.0
    start_ms: float | None = None  # when it began: ms since the Unix epoch (see RunTrace)
    kind: Literal["context_truncated"] = "context_truncated"

    def to_dict(self) -> dict[str, Any]:
        return _plain(self, _CONTEXT_KEYS)


class FailedStep(NamedTuple):
    """A provider of a fallback chain failed one request (:mod:`toolwire.providers.fallback`):
    which one, the error's class, HTTP status and message (bounded and redacted: the text the
    run's own error would keep), and the provider asked next (None: the run fails with it)."""

    round: int
    provider: str
    error_class: str
    error: str
    error_status: int | None = None
    next_provider: str | None = None
    duration_ms: float = 0.0
    start_ms: float | None = None  # when it began: ms since the Unix epoch (see RunTrace)
    egress: Sent | None = None  # what the failed provider was sent (as ``LlmStep.egress``)
    kind: Literal["provider_failed"] = "provider_failed"

    def to_dict(self) -> dict[str, Any]:
        return _plain(self, _FAILED_KEYS)

    def __repr__(self) -> str:
        return tagged(
            "FailedStep",
            round=self.round,
            provider=ident(self.provider),
            error_class=ident(self.error_class),
            error_status=self.error_status,
            error_bytes=size(self.error),
            next_provider=ident(self.next_provider),
        )


RunStep = RequestStep | LlmStep | ToolStep | DecisionStep | ContextStep | FailedStep
StepKind = Literal["request", "llm", "tool", "decision", "context_truncated", "provider_failed"]
ERROR_CHARS = 500  # a failed attempt's message: the HTTP layer's line, not a body


def _sent_by_failed() -> Sent | None:
    """What the chain's attempt that just failed sent of the request under way."""
    outgoing = _egress.current()
    return None if outgoing is None else outgoing.taken()


def _ms(duration: float) -> float:
    """Milliseconds to 2 decimals, halves up: what every step shows. (Four times cheaper than
    ``round``, and a run records a start for every step.)"""
    return _floor(duration * 100 + 0.5) / 100


def _order(fields: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in _ORDER if name in fields)


_REQUEST_KEYS = _order(RequestStep._fields)
_LLM_KEYS = _order(LlmStep._fields)
_TOOL_KEYS = _order(ToolStep._fields)
_DECISION_KEYS = _order(DecisionStep._fields)
_CONTEXT_KEYS = _order(ContextStep._fields)
_FAILED_KEYS = _order(FailedStep._fields)
_CONVERTED = frozenset(
    {"duration_ms", "start_ms", "messages_sent", "requested_tool_calls", "tool_artifacts",
     "tool_specs", "refusals"}
)  # fmt: skip


def _plain(step: RunStep, keys: tuple[str, ...]) -> dict[str, Any]:
    """Plain data: absent fields dropped, 0 and false kept, duration to 2 decimals."""
    out: dict[str, Any] = {}
    for name in keys:
        value = getattr(step, name)
        if value is not None:
            out[name] = _convert(name, value) if name in _CONVERTED else value
    return out


def _convert(name: str, value: Any) -> Any:
    if name in {"duration_ms", "start_ms"}:
        return _ms(value)
    if name == "messages_sent":
        return [m.to_dict() for m in value]
    if name == "requested_tool_calls":
        return [c.to_dict() for c in value]
    if name == "tool_artifacts":
        return [a.to_dict() for a in value]
    return [dict(v) if isinstance(v, Mapping) else v for v in value]


class Held(NamedTuple):
    """What a call's step records of held values: see :class:`ToolStep`."""

    variables: tuple[dict[str, Any], ...] | None
    received: tuple[str, ...] | None
    values: tuple[dict[str, Any], ...] | None


_NOT_HELD = Held(None, None, None)


class ToolInvocation(NamedTuple):
    """One executed call, as the loop's result lists it. (A NamedTuple, like the steps: as
    immutable as a frozen dataclass, and built on every call at a fraction of its cost.)"""

    name: str
    arguments: Any
    result: str
    is_error: bool
    artifacts: tuple[Artifact, ...] = ()
    call_id: str = ""

    def __repr__(self) -> str:
        return tagged(
            "ToolInvocation",
            name=ident(self.name),
            call_id=ident(self.call_id or None),
            arguments=shape(self.arguments),
            is_error=self.is_error,
            result_bytes=size(self.result),
            artifacts=len(self.artifacts),
        )


class RunTrace:
    """Collects steps in recording order and notifies observers synchronously.

    Every recorded step carries ``start_ms``, when it began on the wall clock (milliseconds
    since the Unix epoch), so a timeline can place it: the calls of one turn may overlap, and
    a run resumed in another process goes on where it stopped. Readings are taken on the
    monotonic clock and anchored to the wall clock once per trace. A step recorded without a
    start began ``duration_ms`` before it was recorded (true of every step but a concurrent
    call, whose start the loop passes).

    ``keeps`` is False for the trace the loop makes for a run given none: nobody can read it,
    so the loop records no request, model or tool step in it (the run's result is the same).
    """

    def __init__(
        self,
        *,
        capture_raw: bool = False,
        observers: Sequence[Observer] = (),
        delta_observers: Sequence[DeltaObserver] = (),
        keeps: bool = True,
    ) -> None:
        self.capture_raw = capture_raw
        self.keeps = keeps
        self.steps: list[RunStep] = []
        self._observers: list[Observer] = list(observers)
        self._delta_observers: list[DeltaObserver] = list(delta_observers)
        # The run's measure of tool output sent (toolwire.policy.egress), made by the loop;
        # ``egress_spent``: the bytes earlier segments of the run sent (the runtime says).
        self.egress: Ledger | None = None
        self.egress_spent = 0
        # The calls earlier segments' stored steps say the runtime answered (by stored id).
        self.egress_refused: frozenset[str] = frozenset()
        # What the other runs of the run's workspace sent within a window of so many seconds
        # (the runtime's read of its store; None: no store to ask).
        self.egress_others: Callable[[float], Awaitable[int]] | None = None
        # Whether the run may wait for a person at an egress limit (the runtime can store it)
        self.egress_can_wait = True
        self._wall_origin = time.time() * 1000
        self._perf_origin = time.perf_counter()

    def wall_ms(self, perf: float | None = None) -> float:
        """A ``time.perf_counter()`` reading (now, by default) as ms since the Unix epoch."""
        reading = time.perf_counter() if perf is None else perf
        return self._wall_origin + (reading - self._perf_origin) * 1000

    def subscribe_deltas(self, observer: DeltaObserver) -> None:
        self._delta_observers.append(observer)

    def delta_sink(self, round: int) -> DeltaSink | None:
        """Where a streaming provider hands the pieces of round ``round``'s answer; None when
        nobody watches, so a provider need not stream for nobody. Never raises into it."""
        if not self._delta_observers:
            return None
        observers = tuple(self._delta_observers)

        def sink(delta: Delta) -> None:
            for observer in observers:
                try:
                    observer(round, delta)
                except Exception:
                    log.exception("a delta observer failed; the answer goes on")

        return sink

    def subscribe(self, observer: Observer) -> None:
        self._observers.append(observer)

    def record(self, step: S) -> S:
        """Keep ``step`` (with its start) and tell every observer; return the kept step."""
        if step.start_ms is None:
            step = step._replace(start_ms=_ms(self.wall_ms() - step.duration_ms))
        return self._keep(step)

    def _keep(self, step: S) -> S:
        """Keep ``step``, which has its start, and tell every observer."""
        self.steps.append(step)
        for observer in self._observers:
            observer(step)
        return step

    def _began(self, duration_ms: float) -> float:
        """``start_ms`` of a step recorded now that took ``duration_ms``."""
        # ``_ms`` of it, written out: this runs for every step
        return _floor((self._wall_origin + (_clock() - self._perf_origin) * 1000 - duration_ms)
                      * 100 + 0.5) / 100  # fmt: skip

    def _start(self, perf: float) -> float:
        """``start_ms`` of a step that began at ``perf`` (a ``time.perf_counter()`` reading)."""
        return _floor((self._wall_origin + (perf - self._perf_origin) * 1000) * 100 + 0.5) / 100

    def of_kind(self, kind: type[S]) -> list[S]:
        """The recorded steps of one kind, typed: ``trace.of_kind(ToolStep)``."""
        return [step for step in self.steps if isinstance(step, kind)]

    def record_request(
        self,
        round: int,
        messages: Sequence[ChatMessage],
        tool_names: Sequence[str],
        refusals: Sequence[Mapping[str, str]] = (),
        *,
        tool_choice: str | None = None,
    ) -> RequestStep:
        step = _new(RequestStep, (round, tuple(messages), tuple(tool_names),
                                  tuple(refusals) if refusals else None, tool_choice, 0.0,
                                  self._began(0.0), "request"))  # fmt: skip
        return self._keep(step)

    def record_llm(
        self,
        round: int,
        duration_ms: float,
        response: CompletionResponse,
        cost: Decimal | None = None,
        *,
        registered: frozenset[str] = frozenset(),
        checked: Checked | None = None,
        egress: Sent | None = None,
    ) -> LlmStep:
        """``registered``: the requested tools' names that name a registered tool;
        ``checked``: the answer checked against the run's output schema, when it has one;
        ``egress``: what the request carried of tool output."""
        usage = response.usage
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        step = _new(LlmStep, (
            round,
            duration_ms,
            response.content,
            response.thinking or None,
            response.stop._value_,  # the plain string (``.value`` is a slow descriptor)
            response.finish_reason,
            response.refusal,
            prompt,
            completion,
            prompt + completion,
            None if usage.known else True,
            usage.cache_read_tokens or None,
            usage.cache_write_tokens or None,
            usage.reasoning_tokens or None,
            None if cost is None else float(cost),
            response.tool_calls or None,
            response.raw if self.capture_raw else None,
            self._began(duration_ms),
            registered,
            response.model,
            response.response_id,
            None if checked is None else checked.value,
            None if checked is None else checked.problem,
            response.provider,
            egress,
            "llm",
        ))  # fmt: skip
        return self._keep(step)

    def failure_sink(self, round: int) -> FailureSink:
        """Where a fallback chain reports each failed attempt of round ``round``: recorded as
        a :class:`FailedStep` at once, so a live view sees the switch while it happens."""

        def sink(attempt: FailedAttempt) -> None:
            self.record_failure(round, attempt)

        return sink

    def record_failure(self, round: int, attempt: FailedAttempt) -> FailedStep:
        error = attempt.error
        text = redact(storable(str(error)))
        if len(text) > ERROR_CHARS:
            text = text[: ERROR_CHARS - 1] + "…"
        step = FailedStep(round=round, provider=attempt.provider,
                          error_class=type(error).__name__, error=text,
                          error_status=error.status, next_provider=attempt.next,
                          duration_ms=attempt.duration_ms,
                          egress=_sent_by_failed())  # fmt: skip
        return self.record(step)

    def record_decision(
        self, round: int, decision: str, decided_by: str, reason: str | None, digest: str
    ) -> DecisionStep:
        step = DecisionStep(
            round=round,
            decision=decision,
            decided_by=decided_by,
            decision_reason=reason,
            turn_digest=digest,
            decided_at=datetime.now(UTC).isoformat(),
        )
        return self.record(step)

    def record_tool(
        self,
        round: int,
        duration_ms: float,
        invocation: ToolInvocation,
        original_bytes: int | None = None,
        refused: str | None = None,
        *,
        started: float | None = None,
        registered: bool = False,
        integrity: str | None = None,
        held: Held | None = None,
    ) -> ToolStep:
        """``started`` is the call's ``time.perf_counter()`` at its start, when known;
        ``registered`` whether the call names a registered tool; ``integrity`` the label of
        its result; ``held`` the values it made and received (a run that holds none: None)."""
        start = self._began(duration_ms) if started is None else self._start(started)
        step = _new(ToolStep, (
            round,
            invocation.name,
            invocation.result,
            duration_ms,
            invocation.call_id or None,
            invocation.arguments,
            original_bytes,
            invocation.is_error,
            invocation.artifacts or None,
            None if refused is None else str(refused),
            start,
            registered,
            integrity,
            *(_NOT_HELD if held is None else held),
            "tool",
        ))  # fmt: skip
        return self._keep(step)
