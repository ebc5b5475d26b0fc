"""The tool loop and the invoke seam.

Layers, each with one concern: ``run`` (offer tools, choose the path) -> ``_rounds`` (the round
cap and synthesis) -> one provider call -> ``_dispatch`` (a turn's calls, in order) -> ``invoke``
(THE seam: lookup, offered-set check, arguments, execute, catch, bound both channels).

Egress invariant: the only tool output appended to the conversation is the bounded
``ToolResult.content``, through ``ChatMessage.tool_result``. Artifacts go to the trace only.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolwire.bounding import bound_artifacts, bound_content
from toolwire.errors import ToolArgumentError
from toolwire.messages import ChatMessage, ToolCall, ToolSpec
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    Usage,
    session_of,
)
from toolwire.result import ToolResult
from toolwire.tools.api import ToolContext, as_result
from toolwire.tools.policy import Grant, ToolPolicy, TrustZone
from toolwire.tools.registry import ToolRegistry
from toolwire.trace import RunTrace, ToolInvocation

log = logging.getLogger("toolwire.loop")

DEFAULT_MAX_ROUNDS = 5  # enough for look-up, refine, answer; each round is a paid provider call
MAX_ROUNDS = 20  # hard cap: a model still calling tools after 20 rounds is looping
_NAME_IN_ERROR_CHARS = 200  # a hostile model can send a megabyte "name"; echo a bounded one


class TerminationReason(StrEnum):
    """Why a run ended. ``truncated`` on the result says whether the answer is incomplete."""

    COMPLETED = "completed"
    MAX_ITERATIONS = "max_iterations"
    DRY_RUN = "dry_run"
    CANCELLED = "cancelled"
    PROVIDER_FAILED = "provider_failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """Per-run settings. ``allowed_tools`` is a request (None: every enabled tool; []: none)."""

    max_rounds: int = DEFAULT_MAX_ROUNDS
    allowed_tools: Sequence[str] | None = None
    grant: Grant = field(default_factory=Grant)
    trust_zone: str | None = None  # None: the provider's own zone; unknown: the strictest
    temperature: float | None = None
    max_tokens: int | None = None
    capture_raw: bool = False
    dry_run: bool = False  # record what would be sent, call no provider and no tool

    def __post_init__(self) -> None:
        if not 1 <= self.max_rounds <= MAX_ROUNDS:
            raise ValueError(f"max_rounds must be between 1 and {MAX_ROUNDS}")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopResult:
    final_content: str
    trace: tuple[ToolInvocation, ...]
    iterations: int
    truncated: bool
    reason: TerminationReason
    usage: Usage


def tool_failed(name: str) -> str:
    return f'Error: tool "{_clip(name)}" failed.'


def approval_refused(name: str) -> str:
    # Runs cannot be suspended for an operator's approval yet, so such a call is never executed.
    return (
        f'Error: tool "{_clip(name)}" requires an operator\'s approval, which this run cannot '
        "ask for; it was not executed."
    )


def _clip(name: str) -> str:
    return name if len(name) <= _NAME_IN_ERROR_CHARS else name[:_NAME_IN_ERROR_CHARS] + "…"


class ToolLoop:
    """Runs a conversation against a provider, executing tool calls through the seam."""

    def __init__(
        self, provider: Provider, registry: ToolRegistry, *, policy: ToolPolicy | None = None
    ) -> None:
        self.provider = provider
        self.registry = registry
        self.policy = policy or ToolPolicy(registry)

    def run_sync(
        self,
        messages: Sequence[ChatMessage],
        *,
        context: ToolContext | None = None,
        options: RunOptions | None = None,
        trace: RunTrace | None = None,
    ) -> LoopResult:
        """Blocking facade over :meth:`run`, for scripts and the command line."""
        return asyncio.run(self.run(messages, context=context, options=options, trace=trace))

    async def run(
        self,
        messages: Sequence[ChatMessage],
        *,
        context: ToolContext | None = None,
        options: RunOptions | None = None,
        trace: RunTrace | None = None,
    ) -> LoopResult:
        context = context or ToolContext()
        options = options or RunOptions()
        trace = trace if trace is not None else RunTrace(capture_raw=options.capture_raw)
        zone = TrustZone.parse(options.trust_zone or getattr(self.provider, "trust_zone", None))
        offered, refused = self.policy.offered(
            options.allowed_tools, context=context, grant=options.grant, zone=zone
        )
        refusals = [d.to_dict() for d in refused]
        for decision in refused:
            log.info("tool %r not offered: %s", decision.name, decision.reason)
        state = _RunState(list(messages), trace, options, context, frozenset(offered))
        if options.dry_run:
            trace.record_request(1, state.messages, offered, refusals)
            return state.result("", 0, False, TerminationReason.DRY_RUN)
        async with session_of(self.provider):
            if not offered:
                return await self._plain(state, refusals)
            return await self._rounds(state, offered, refusals)

    async def _plain(self, state: _RunState, refusals: list[dict[str, str]]) -> LoopResult:
        state.trace.record_request(1, state.messages, [], refusals)
        response = await self._complete(state, 1, ())
        return state.result(response.content, 1, False, TerminationReason.COMPLETED)

    async def _rounds(
        self, state: _RunState, offered: list[str], refusals: list[dict[str, str]]
    ) -> LoopResult:
        specs = tuple(self.registry.specs(offered))
        for round_ in range(1, state.options.max_rounds + 1):
            state.trace.record_request(
                round_, state.messages, offered, refusals if round_ == 1 else ()
            )
            response = await self._complete(state, round_, specs)
            if not response.tool_calls:
                return state.result(response.content, round_, False, TerminationReason.COMPLETED)
            state.messages.append(ChatMessage.assistant(response.content, response.tool_calls))
            await self._dispatch(state, round_, response.tool_calls)
        last = state.options.max_rounds
        state.trace.record_request(last + 1, state.messages, [])
        final = await self._complete(state, last + 1, ())
        return state.result(final.content, last, True, TerminationReason.MAX_ITERATIONS)

    async def _complete(
        self, state: _RunState, round_: int, specs: tuple[ToolSpec, ...]
    ) -> CompletionResponse:
        request = CompletionRequest(
            messages=tuple(state.messages),
            tools=specs,
            temperature=state.options.temperature,
            max_tokens=state.options.max_tokens,
            capture_raw=state.options.capture_raw,
        )
        started = time.perf_counter()
        response = await self.provider.complete(request)
        state.trace.record_llm(round_, (time.perf_counter() - started) * 1000, response)
        state.usage += response.usage
        return response

    async def _dispatch(self, state: _RunState, round_: int, calls: Sequence[ToolCall]) -> None:
        for call in calls:
            started = time.perf_counter()
            arguments = call.decoded_arguments()
            result, original_bytes = await self._invoke(
                call, arguments, state.offered, state.context
            )
            elapsed = (time.perf_counter() - started) * 1000
            state.messages.append(
                ChatMessage.tool_result(call.id, result.content, is_error=result.is_error)
            )
            invocation = ToolInvocation(
                name=call.name,
                arguments=call.arguments if arguments is None else arguments,
                result=result.content,
                is_error=result.is_error,
                artifacts=result.artifacts,
                call_id=call.id,
            )
            state.invocations.append(invocation)
            state.trace.record_tool(round_, elapsed, invocation, original_bytes)

    async def invoke(
        self, call: ToolCall, offered: frozenset[str], context: ToolContext
    ) -> tuple[ToolResult, int | None]:
        """THE seam. Every executed call passes here; both channels leave it bounded.

        Returns the result and, when it was cut, the byte size the tool actually returned.
        """
        return await self._invoke(call, call.decoded_arguments(), offered, context)

    async def _invoke(
        self,
        call: ToolCall,
        arguments: dict[str, Any] | None,
        offered: frozenset[str],
        context: ToolContext,
    ) -> tuple[ToolResult, int | None]:
        tool = self.registry.get(call.name)
        if tool is None:
            return ToolResult.error(f'Error: unknown tool "{_clip(call.name)}"'), None
        if call.name not in offered:
            return ToolResult.error(f'Error: tool "{_clip(call.name)}" not permitted'), None
        if tool.requires_approval:
            return ToolResult.error(approval_refused(call.name)), None
        if arguments is None:
            return ToolResult.error(
                f'Error: arguments for tool "{call.name}" must be a JSON object; '
                "the text sent was not one."
            ), None
        try:
            outcome = tool.execute(arguments, context)
            raw = as_result(await outcome if inspect.isawaitable(outcome) else outcome)
        except ToolArgumentError as exc:
            raw = ToolResult.error(str(exc))
        except Exception:
            log.exception('Tool "%s" failed.', call.name)
            return ToolResult.error(tool_failed(call.name)), None
        content = bound_content(raw.content)
        original = content.original_bytes if content.truncated else None
        if raw.is_error:
            return ToolResult.error(content.text), original
        return ToolResult.text(content.text, *bound_artifacts(raw.artifacts)), original


@dataclass(slots=True)
class _RunState:
    messages: list[ChatMessage]
    trace: RunTrace
    options: RunOptions
    context: ToolContext
    offered: frozenset[str]
    usage: Usage = field(default_factory=Usage)
    invocations: list[ToolInvocation] = field(default_factory=list)

    def result(
        self, content: str, iterations: int, truncated: bool, reason: TerminationReason
    ) -> LoopResult:
        return LoopResult(
            final_content=content,
            trace=tuple(self.invocations),
            iterations=iterations,
            truncated=truncated,
            reason=reason,
            usage=self.usage,
        )
