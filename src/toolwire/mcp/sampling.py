"""A server's request for a completion by the run's model (``sampling/createMessage``).

Refused unless the server's table says ``sampling = true``: only then does toolwire declare
the ``sampling`` capability to it. When allowed, a request made during a call of one of the
server's tools goes to that run's own provider, under the run's charter: the server's data
class must be within the run's trust zone's ceiling (the gate's rule for offering its tools),
the messages are text only, no tool is offered, and at most ``MAX_SAMPLING_TOKENS`` are asked
for. The request and the answer are the run's steps (a request step and a model step, kept at
the run's privacy level), and the answer's tokens and cost count in the run's totals.

Every refusal is an MCP error whose message says why; the server reads it, never the model.
"""

from __future__ import annotations

import logging
import time

from mcp.client.session import ClientRequestContext
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    CreateMessageRequestParams,
    CreateMessageResult,
    ErrorData,
    TextContent,
)

from toolwire.core.errors import ConfigError
from toolwire.core.messages import ChatMessage
from toolwire.core.trust import DataClass, TrustZone
from toolwire.mcp.caller import Caller, InFlight
from toolwire.policy.pricing import cost_of, model_of, pricing_family
from toolwire.providers.base import CompletionRequest, CompletionResponse, Stop
from toolwire.tools.api import ToolContext
from toolwire.tools.disclosure import visible
from toolwire.workspace.mcp_servers import Launch

log = logging.getLogger("toolwire.mcp")
MAX_SAMPLING_TOKENS = 1_024  # a server's side question, not a second run
MAX_SAMPLING_MESSAGES = 50
MAX_SAMPLING_CHARS = 100_000  # every message's text together

NOT_A_RUN = "sampling is only for a call made by a toolwire run"
UNTIED = "toolwire cannot tell which call of this server asked"
WITH_TOOLS = "toolwire samples without tools"
TEXT_ONLY = "toolwire samples text messages only"
TOO_LONG = f"the messages are over {MAX_SAMPLING_MESSAGES} or {MAX_SAMPLING_CHARS} characters"
FAILED = "the run's model could not answer"


def above_ceiling(data_class: str, zone: TrustZone) -> str:
    return (f"the server's data class {data_class} is above what the run's provider may see "
            f"(the {zone} ceiling)")  # fmt: skip


class SamplingCallback:
    """The session's ``sampling_callback``, set only for a server allowed to sample."""

    def __init__(self, launch: Launch, inflight: InFlight) -> None:
        self.launch, self.inflight = launch, inflight

    async def __call__(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        caller = self.inflight.asking()
        if caller is None:
            return _refused(self.launch.name, UNTIED)
        return await sample(caller, params)


async def sample(
    caller: Caller, params: CreateMessageRequestParams
) -> CreateMessageResult | ErrorData:
    """The run's model's answer to ``params``, or the MCP error that says why not."""
    refused = _refusal(caller, params)
    if refused is not None:
        return _refused(caller.server, refused)
    messages = _messages(params, caller.turn.context if caller.turn is not None else None)
    request = CompletionRequest(messages=messages, temperature=params.temperature,
                                max_tokens=min(params.max_tokens, MAX_SAMPLING_TOKENS))  # fmt: skip
    try:
        return await caller.on_run_loop(_complete(caller, request))
    except Exception as exc:
        log.warning("MCP server %r: its sample failed: %s", caller.server, type(exc).__name__)
        return ErrorData(code=INTERNAL_ERROR, message=FAILED)


def _refusal(caller: Caller, params: CreateMessageRequestParams) -> str | None:
    turn = caller.turn
    if turn is None:
        return NOT_A_RUN
    zone = _zone(caller)
    data_class = DataClass.parse(caller.data_class)
    if data_class > zone.ceiling:
        return above_ceiling(data_class.name.lower(), zone)
    if params.tools:
        return WITH_TOOLS
    if not all(isinstance(m.content, TextContent) for m in params.messages):
        return TEXT_ONLY
    chars = sum(len(m.content.text) for m in params.messages if isinstance(m.content, TextContent))
    chars += len(params.system_prompt or "")
    if len(params.messages) > MAX_SAMPLING_MESSAGES or chars > MAX_SAMPLING_CHARS:
        return TOO_LONG
    return None


def _zone(caller: Caller) -> TrustZone:
    """The run's zone (its charter's); the least trusted when it cannot be read."""
    turn = caller.turn
    try:
        if turn is not None and turn.charter is not None:
            return TrustZone.parse(turn.charter.trust_zone)
        if turn is not None:
            return TrustZone.parse(turn.provider.trust_zone)
    except ConfigError:
        pass
    return TrustZone.parse(None)  # the least trusted


def _messages(
    params: CreateMessageRequestParams, context: ToolContext | None
) -> tuple[ChatMessage, ...]:
    """The sample's messages as the run's model may read them: a server's words, like a
    tool's output, with secrets masked and personal data as the run's zone reads it (masked
    where no context says the zone)."""
    shown = ToolContext() if context is None else context
    system = params.system_prompt
    said = [ChatMessage.system(visible(system, shown))] if system else []
    for message in params.messages:
        assert isinstance(message.content, TextContent)  # checked by _refusal
        text = visible(message.content.text, shown)
        user = message.role == "user"
        said.append(ChatMessage.user(text) if user else ChatMessage.assistant(text))
    return tuple(said)


async def _complete(caller: Caller, request: CompletionRequest) -> CreateMessageResult:
    """One call of the run's provider, on the run's loop, recorded in the run's steps."""
    turn = caller.turn
    assert turn is not None
    trace, provider = turn.trace, turn.provider
    if trace.keeps:
        trace.record_request(turn.round, request.messages, ())
    started = time.perf_counter()
    response: CompletionResponse = await provider.complete(request)
    elapsed_ms = (time.perf_counter() - started) * 1000
    cost = cost_of(pricing_family(provider), response.model or model_of(provider), response.usage)
    if trace.keeps:
        trace.record_llm(turn.round, elapsed_ms, response, cost)
    turn.sampled.append((response.usage, cost))
    stop = "maxTokens" if response.stop is Stop.MAX_TOKENS else "endTurn"
    answer = TextContent(type="text", text=response.content)
    return CreateMessageResult(role="assistant", content=answer,
                               model=response.model or model_of(provider) or provider.name,
                               stop_reason=stop)  # fmt: skip


def _refused(server: str, why: str) -> ErrorData:
    log.info("MCP server %r: its sampling request was refused: %s", server, why)
    return ErrorData(code=INVALID_REQUEST, message=f"sampling refused: {why}")
