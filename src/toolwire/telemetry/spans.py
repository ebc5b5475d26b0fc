"""One segment of a run as OpenTelemetry spans, built from its recorded steps.

The segment is one ``invoke_agent`` span (kind INTERNAL; a direct tool call has none), named
``invoke_agent {name}`` with ``gen_ai.agent.name`` when the run has a name (its own, else its
workspace's: :attr:`toolwire.policy.options.RunOptions.name`); each
model call is a ``chat {model}`` span (CLIENT) and each tool call an ``execute_tool {tool}``
span (INTERNAL), both its children. The run's id is on every span; the provider and model on
the agent and model-call spans (a tool call's are its parent's).

Steps are recorded after the fact with their duration, so a child span is made whole when its
step arrives: it ends then and starts its duration earlier. The calls of one turn may run
concurrently but are recorded in the model's order, so a call that finished before an earlier
one shows ending when it was recorded (its duration is exact). A model call that never
answered (the provider failed, or the run was cancelled meanwhile) is closed when the segment
ends, from its request's time, with its error; a dry run's request was never sent, so it has
none.

A run suspended for a person and resumed is several segments, each its own ``invoke_agent``
span (its own trace), linked to the span of the segment before it (the link's
``toolwire.link`` is ``previous_segment``): the paused run keeps that span's ids in its sealed
state, so the link holds when another process carries it on. A segment's span carries its
own segment's tokens, cost and rounds (the GenAI usage
attributes, ``toolwire.cost_usd``, ``toolwire.rounds``), counted from the model calls it
recorded, so that a backend summing spans gets the run's totals once; the whole run's totals go
under ``toolwire.run.*`` when the segment knows them: it ended with a result (the run's state
carries them across segments), or it was told where the run stood when it began (a resumed
segment that failed or was cancelled adds its own to that).

Every gate decision a step records (see :mod:`toolwire.loop.governance`) is an event on the
segment's span, told when the segment ends, at the time of the first decision it stands for: a
call refused again for a reason it was refused for before (the same tool, the same actor) adds
to that event's ``toolwire.count``, as it adds to its row's count in the governance log.

A failed model or tool call's span has status ERROR and an ``exception`` event, both with a
bounded text with every secret shape masked: a run's stored error, or a tool's fixed reason
(``refused: <reason>``), or, where content may leave, the result the model read.

What any span carries is the step as
:func:`toolwire.policy.privacy.filter_for_export` lets it leave. A watch never raises into the
run: a failure is logged and the run goes on.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import server_attributes
from opentelemetry.trace import (
    Link,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
)

from toolwire.core.errors import ProviderError
from toolwire.loop.governance import (
    GateDecision,
    decider_of,
    decisions_of_outcome,
    decisions_of_step,
    repeat_key,
)
from toolwire.loop.run import RunOutcome
from toolwire.policy.charter import ProviderRef
from toolwire.policy.options import RunOptions
from toolwire.policy.privacy import PrivacyLevel, filter_for_export, filter_text
from toolwire.policy.trace import FailedStep, LlmStep, RequestStep, RunStep, ToolStep
from toolwire.telemetry import Carried, Segment, ToolSpecs
from toolwire.telemetry import genai as attrs
from toolwire.telemetry.metrics import Instruments

log = logging.getLogger("toolwire.telemetry")
CANCELLED = "cancelled"


class RunSpans:
    """The spans (and metrics) of one segment; a :class:`toolwire.telemetry.SegmentWatch`."""

    def __init__(
        self,
        tracer: Tracer,
        instruments: Instruments | None,
        level: PrivacyLevel,
        *,
        run_id: str,
        provider: ProviderRef,
        options: RunOptions,
        segment: Segment,
        before: Carried | None = None,
        tools: ToolSpecs | None = None,
    ) -> None:
        self.tracer = tracer
        self.tools = tools  # the specs of the tools a request offered, by name
        self.before = before  # the run's totals when this segment began (a resumed one)
        self.instruments = instruments
        self.level = level
        self.run_id = run_id
        self.provider = attrs.provider_name(provider.name, provider.script)
        self.model = provider.model
        self.base: attrs.Attributes = {
            gen_ai.GEN_AI_PROVIDER_NAME: self.provider,
            gen_ai.GEN_AI_CONVERSATION_ID: run_id,
            attrs.RUN_ID: run_id,
            **attrs.server(provider.base_url),
        }
        if self.model:
            self.base[gen_ai.GEN_AI_REQUEST_MODEL] = self.model
        self.requested: tuple[int, Mapping[str, Any]] | None = None  # a call not yet answered
        self.spent = SegmentUsage()  # what this segment's model calls used
        self.decider: str | None = None  # who decided this segment's paused turn
        # The segment's gate decisions, told when it ends: a call refused again for a reason
        # it was refused for before adds to the first one's count (one event, not fifteen).
        self.gates: dict[object, tuple[GateDecision, int]] = {}
        self.root: Span | None = None
        if segment != "call":
            self.root = self._start_root(options, segment)
        self.context: Context | None = None if self.root is None else trace.set_span_in_context(
            self.root
        )  # fmt: skip

    def _start_root(self, options: RunOptions, segment: Segment) -> Span:
        started: attrs.Attributes = {
            **self.base,
            gen_ai.GEN_AI_OPERATION_NAME: attrs.INVOKE_AGENT,
            attrs.SEGMENT: segment,
            attrs.PRIVACY_LEVEL: str(self.level),
        }
        if options.max_tokens is not None:
            started[gen_ai.GEN_AI_REQUEST_MAX_TOKENS] = options.max_tokens
        if options.temperature is not None:
            started[gen_ai.GEN_AI_REQUEST_TEMPERATURE] = options.temperature
        name = attrs.INVOKE_AGENT
        if options.name is not None:
            started[gen_ai.GEN_AI_AGENT_NAME] = options.name
            name = f"{attrs.INVOKE_AGENT} {options.name}"
        previous = None if self.before is None else _context_of(self.before.previous)
        links = [] if previous is None else [Link(previous, {attrs.LINK: attrs.PREVIOUS_SEGMENT})]
        return self.tracer.start_span(name, kind=SpanKind.INTERNAL, attributes=started,
                                      links=links)  # fmt: skip

    @property
    def span(self) -> str | None:
        """This segment's span as ``{trace id}-{span id}`` (hex), for the next segment's link;
        None without one (a direct call, or a tracer that records nothing)."""
        found = None if self.root is None else self.root.get_span_context()
        if found is None or not found.is_valid:
            return None
        return f"{found.trace_id:032x}-{found.span_id:016x}"

    # -- the watch ---------------------------------------------------------------------------

    def step(self, step: RunStep) -> None:
        try:
            self._step(step, filter_for_export(step, self.level))
        except Exception:
            log.exception("telemetry could not record a step; the run goes on")

    def end(self, outcome: RunOutcome | None, failure: BaseException | None) -> None:
        try:
            self._end(outcome, failure)
        except Exception:
            log.exception("telemetry could not end a run's span; the run goes on")

    # -- steps -------------------------------------------------------------------------------

    def _step(self, step: RunStep, shown: Mapping[str, Any]) -> None:
        now = time.time_ns()
        if isinstance(step, RequestStep):
            self.requested = (now, shown)
        elif isinstance(step, LlmStep):
            self._chat(step, shown, now)
        elif isinstance(step, ToolStep):
            self._tool(step, shown, now)
        sent = step.egress if isinstance(step, (LlmStep, FailedStep)) else None
        if sent is not None and self.instruments is not None:
            self.instruments.record_egress(sent)
        self.decider = decider_of(shown) or self.decider
        for decision in decisions_of_step(shown, self.decider):
            self._gate(decision, now)
        if self.root is not None and "decision_reason" in shown:
            self.root.set_attribute("toolwire.decision_reason", str(shown["decision_reason"]))

    def _chat(self, step: LlmStep, shown: Mapping[str, Any], now: int) -> None:
        self.spent.add(step)
        request = None if self.requested is None else self.requested[1]
        self.requested = None
        made = {**self.base, gen_ai.GEN_AI_OPERATION_NAME: attrs.CHAT, **attrs.chat(request, shown)}
        offered = made.get(attrs.TOOLS_OFFERED)
        if self.tools is not None and isinstance(offered, tuple) and offered:
            described = self._shown if self.level.keeps_content else None
            made[attrs.TOOL_DEFINITIONS] = attrs.definitions(self.tools(offered), described)
        span = self._child(self._chat_name(), SpanKind.CLIENT, now - _ns(step.duration_ms), made)
        span.end(end_time=now)
        if self.instruments is not None:
            tokens = (step.prompt_tokens, step.completion_tokens)
            answered = made.get(gen_ai.GEN_AI_RESPONSE_MODEL)
            measured = self._model_attributes()
            if answered is not None:
                measured[gen_ai.GEN_AI_RESPONSE_MODEL] = answered
            self.instruments.record_call(measured, step.duration_ms / 1000, tokens,
                                         step.cost)  # fmt: skip

    def _tool(self, step: ToolStep, shown: Mapping[str, Any], now: int) -> None:
        name = f"{attrs.EXECUTE_TOOL} {shown.get('tool_name', '')}"
        made = {gen_ai.GEN_AI_CONVERSATION_ID: self.run_id, attrs.RUN_ID: self.run_id,
                **attrs.tool(shown)}  # the provider and model are its parent's  # fmt: skip
        error = attrs.tool_error(shown)
        if error is not None:
            made[attrs.ERROR_TYPE] = error
        span = self._child(name, SpanKind.INTERNAL, now - _ns(step.duration_ms), made)
        if error is not None:  # a tool's own words only where its result may leave
            shown_error = attrs.tool_failure_text(shown, error)
            span.set_status(Status(StatusCode.ERROR, shown_error))
            span.add_event(attrs.EXCEPTION_EVENT, {attrs.EXCEPTION_TYPE: error,
                                                   attrs.EXCEPTION_MESSAGE: shown_error},
                           timestamp=now)  # fmt: skip
        span.end(end_time=now)
        if self.instruments is not None:
            self.instruments.record_tool(step.tool_name, step.tool_refused, step.tool_is_error,
                                         registered=step.tool_registered)  # fmt: skip

    # -- the end -----------------------------------------------------------------------------

    def _end(self, outcome: RunOutcome | None, failure: BaseException | None) -> None:
        now = time.time_ns()
        error = _error_type(outcome, failure)
        ended = outcome is not None and outcome.result is not None
        if self.requested is not None and not ended:  # a model call that never answered
            self._unanswered(now, error, outcome, failure)
        if outcome is not None and self.instruments is not None:
            self.instruments.record_run(str(outcome.status), self.provider)
        if self.root is None:
            return
        if outcome is not None:
            for decision in decisions_of_outcome(outcome):
                self._gate(decision, now)
            self.root.set_attributes(self._ending(outcome))
        for decision, at in self.gates.values():
            self._event(decision, at)
        if error is not None and error != CANCELLED:
            self.root.set_attribute(attrs.ERROR_TYPE, error)
            self._failed(self.root, error, outcome, failure)
        self.root.end(end_time=now)

    def _unanswered(
        self,
        now: int,
        error: str | None,
        outcome: RunOutcome | None,
        failure: BaseException | None,
    ) -> None:
        started, request = self.requested or (now, {})
        self.requested = None
        made = {**self.base, gen_ai.GEN_AI_OPERATION_NAME: attrs.CHAT,
                **attrs.chat(request, {"round": request.get("round")})}  # fmt: skip
        if error is not None:
            made[attrs.ERROR_TYPE] = error
        span = self._child(self._chat_name(), SpanKind.CLIENT, started, made)
        if error is not None and error != CANCELLED:
            self._failed(span, error, outcome, failure)
        span.end(end_time=now)
        if self.instruments is not None and error != CANCELLED:
            failed = {**self._model_attributes(), attrs.ERROR_TYPE: error or "_OTHER"}
            self.instruments.record_call(failed, (now - started) / 1e9, None, None)

    def _ending(self, outcome: RunOutcome) -> attrs.Attributes:
        out: attrs.Attributes = {attrs.STATUS: str(outcome.status)}
        pause = outcome.pause
        if pause is not None:  # a turn of calls, or a request past an egress limit
            out[attrs.PAUSE_KIND] = pause.kind
        result = outcome.result
        out |= self.spent.attributes(None if result is None else result.iterations)
        if result is None:
            return out | self.spent.carried_on(self.before)
        out |= {
            attrs.TERMINATION: str(result.reason),
            attrs.TRUNCATED: result.truncated,
            attrs.RUN_ROUNDS: result.iterations,
            attrs.RUN_INPUT_TOKENS: result.usage.prompt_tokens,
            attrs.RUN_OUTPUT_TOKENS: result.usage.completion_tokens,
            **attrs.cost(result.cost.shown, priced=result.cost.usd > 0,
                         complete=result.cost.complete, run=True),
        }  # fmt: skip
        finish = result.finish_reason or (None if result.stop is None else str(result.stop))
        answer = filter_text(result.final_content, self.level) if result.final_content else None
        if answer is not None:
            out[gen_ai.GEN_AI_OUTPUT_MESSAGES] = attrs.output_text(answer, finish)
        return out

    # -- pieces ------------------------------------------------------------------------------

    def _shown(self, text: str) -> str:
        """``text`` as this segment's level lets content leave (asked where it may)."""
        return filter_text(text, self.level) or ""

    @staticmethod
    def _failed(
        span: Span, error: str, outcome: RunOutcome | None, failure: BaseException | None
    ) -> None:
        """``span`` marked failed, with a description and an ``exception`` event a backend
        shows as the error. The text is the run's stored error (written to be shown: the key
        masked, no query or user info; here masked again and bounded) or the exception's class:
        never an exception's own message, which may quote a server's body or a tool's data."""
        shown = attrs.failure_text(outcome.error) if outcome is not None and outcome.error else None
        kind = type(failure).__qualname__ if failure is not None else error
        span.set_status(Status(StatusCode.ERROR, shown or kind))
        span.add_event(attrs.EXCEPTION_EVENT, {attrs.EXCEPTION_TYPE: kind,
                                               attrs.EXCEPTION_MESSAGE: shown or kind})  # fmt: skip

    def _child(self, name: str, kind: SpanKind, start: int, made: attrs.Attributes) -> Span:
        return self.tracer.start_span(name, context=self.context, kind=kind, attributes=made,
                                      start_time=start)  # fmt: skip

    def _chat_name(self) -> str:
        return f"{attrs.CHAT} {self.model}" if self.model else attrs.CHAT

    def _model_attributes(self) -> attrs.Attributes:
        keep = (gen_ai.GEN_AI_PROVIDER_NAME, gen_ai.GEN_AI_REQUEST_MODEL,
                server_attributes.SERVER_ADDRESS, server_attributes.SERVER_PORT)  # fmt: skip
        return {gen_ai.GEN_AI_OPERATION_NAME: attrs.CHAT,
                **{k: v for k, v in self.base.items() if k in keep}}  # fmt: skip

    def _gate(self, decision: GateDecision, now: int) -> None:
        """Keep ``decision`` for the segment's span, added to an earlier one it repeats."""
        if self.root is None:
            return
        key = repeat_key(decision)
        earlier = None if key is None else self.gates.get(key)
        if earlier is None:
            self.gates[len(self.gates) if key is None else key] = (decision, now)
        else:
            first, at = earlier
            counted = dataclasses.replace(first, count=first.count + decision.count)
            self.gates[key] = (counted, at)

    def _event(self, decision: GateDecision, at: int) -> None:
        if self.root is None:
            return
        shown: attrs.Attributes = {
            "toolwire.gate": str(decision.gate),
            "toolwire.reason": decision.reason,
            "toolwire.actor": decision.actor,
        }
        if decision.tool is not None:
            shown[gen_ai.GEN_AI_TOOL_NAME] = decision.tool
        if decision.round is not None:
            shown[attrs.ROUND] = decision.round
        if decision.detail is not None:
            shown["toolwire.detail"] = decision.detail
        if decision.count != 1:  # the decisions of one reason (and tool): one event, counted
            shown["toolwire.count"] = decision.count
        self.root.add_event(attrs.GATE_EVENT, shown, timestamp=at)


class SegmentUsage:
    """The tokens, cost and rounds of one segment's model calls, as they are recorded."""

    __slots__ = ("cost", "input_tokens", "output_tokens", "priced", "rounds", "unpriced")

    def __init__(self) -> None:
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost = 0.0  # of the priced calls
        self.priced = 0  # calls with a price
        self.unpriced = 0  # calls without one
        self.rounds: set[int] = set()

    def add(self, step: LlmStep) -> None:
        self.input_tokens += step.prompt_tokens
        self.output_tokens += step.completion_tokens
        if step.cost is None:
            self.unpriced += 1
        else:
            self.cost += step.cost
            self.priced += 1
        self.rounds.add(step.round)

    def carried_on(self, before: Carried | None) -> attrs.Attributes:
        """The whole run's totals, from what it had spent before this segment and what this
        segment spent; nothing when the segment does not know where the run stood."""
        if before is None:
            return {}
        return {
            attrs.RUN_ROUNDS: max([before.rounds, *self.rounds]),
            attrs.RUN_INPUT_TOKENS: before.input_tokens + self.input_tokens,
            attrs.RUN_OUTPUT_TOKENS: before.output_tokens + self.output_tokens,
            **attrs.cost(before.cost + self.cost, priced=before.cost > 0 or self.priced > 0,
                         complete=before.cost_complete and not self.unpriced, run=True),
        }  # fmt: skip

    def attributes(self, run_rounds: int | None) -> attrs.Attributes:
        """As span attributes. ``run_rounds`` is the run's count when known: the call made
        at the round cap, where no tool may be called, is past it and is not a round."""
        rounds = [r for r in self.rounds if run_rounds is None or r <= run_rounds]
        return {
            attrs.ROUNDS: len(rounds),
            gen_ai.GEN_AI_USAGE_INPUT_TOKENS: self.input_tokens,
            gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: self.output_tokens,
            **attrs.cost(self.cost, priced=self.priced > 0, complete=not self.unpriced),
        }


def _context_of(span: str | None) -> SpanContext | None:
    """The span context ``RunSpans.span`` wrote, as a remote one; None for anything else."""
    trace_id, _, span_id = (span or "").partition("-")
    try:
        found = SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True,
                            trace_flags=TraceFlags(TraceFlags.SAMPLED))  # fmt: skip
    except ValueError:
        return None
    return found if found.is_valid else None


def _ns(duration_ms: float) -> int:
    return int(duration_ms * 1_000_000)


def _error_type(outcome: RunOutcome | None, failure: BaseException | None) -> str | None:
    """How the segment failed, as a low-cardinality ``error.type``: the provider's HTTP status,
    the exception's class, or ``cancelled``; None when it did not fail."""
    if isinstance(failure, ProviderError) and failure.status:
        return str(failure.status)
    if failure is not None:
        return type(failure).__qualname__
    if outcome is None or str(outcome.status) == CANCELLED:
        return CANCELLED
    return None
