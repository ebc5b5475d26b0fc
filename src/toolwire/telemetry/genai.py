"""GenAI semantic-convention attributes, built from steps as they may leave the process.

Every function here reads the plain dict :func:`toolwire.policy.privacy.filter_for_export` made of a
step, never the step itself: a content attribute (``gen_ai.input.messages``,
``gen_ai.output.messages``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``) exists
only when the filter kept that content, and then holds exactly what it kept. Messages follow
the conventions' JSON schemas (``role`` and ``parts``), recorded as JSON strings, as the
conventions allow on spans. toolwire's own attributes carry the ``toolwire.`` prefix.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.util.types import AttributeValue

from toolwire.core.messages import ToolSpec
from toolwire.core.redact import mask_secrets

Attributes = dict[str, AttributeValue]

CHAT = gen_ai.GenAiOperationNameValues.CHAT.value
EXECUTE_TOOL = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
INVOKE_AGENT = gen_ai.GenAiOperationNameValues.INVOKE_AGENT.value
ERROR_TYPE = error_attributes.ERROR_TYPE
TOOL_ERROR = "tool_error"  # a tool ran and answered with an error (its own, or a failure)
# The conventions' names for the providers toolwire speaks to by name; any other (an
# OpenAI-compatible server, the scripted model) keeps the name toolwire knows it by.
PROVIDER_NAMES = {
    "openai": gen_ai.GenAiProviderNameValues.OPENAI.value,
    "openai-responses": gen_ai.GenAiProviderNameValues.OPENAI.value,
    "anthropic": gen_ai.GenAiProviderNameValues.ANTHROPIC.value,
    "gemini": gen_ai.GenAiProviderNameValues.GCP_GEMINI.value,
    "mistral": gen_ai.GenAiProviderNameValues.MISTRAL_AI.value,
    "groq": gen_ai.GenAiProviderNameValues.GROQ.value,
    "deepseek": gen_ai.GenAiProviderNameValues.DEEPSEEK.value,
    "xai": gen_ai.GenAiProviderNameValues.X_AI.value,
    "azure-openai": gen_ai.GenAiProviderNameValues.AZURE_AI_OPENAI.value,
    "azure-openai-responses": gen_ai.GenAiProviderNameValues.AZURE_AI_OPENAI.value,
    "vertex": gen_ai.GenAiProviderNameValues.GCP_VERTEX_AI.value,
    "vertex-anthropic": gen_ai.GenAiProviderNameValues.GCP_VERTEX_AI.value,
}

SCRIPTED = "scripted"
RUN_ID = "toolwire.run.id"
SEGMENT = "toolwire.segment"
PRIVACY_LEVEL = "toolwire.privacy_level"
ROUND = "toolwire.round"
STOP = "toolwire.stop"
COST = "toolwire.cost_usd"  # only where a call was priced: an unknown cost is no number
COST_COMPLETE = "toolwire.cost_complete"  # False: some call of the segment had no price
TOOLS_OFFERED = "toolwire.tools_offered"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"  # the offered tools as the model was told them
TOOL_CHOICE = "toolwire.tool_choice"
CONTENT_WITHHELD = "toolwire.content_withheld"
REFUSED = "toolwire.tool.refused"
RESULT_LENGTH = "toolwire.tool.result_length"
TRUNCATED_FROM = "toolwire.tool.original_bytes"  # the content was cut from this many bytes
ARTIFACTS = "toolwire.tool.artifacts_count"
ARTIFACT_TYPES = "toolwire.tool.artifact_types"
STATUS = "toolwire.run.status"
TERMINATION = "toolwire.termination_reason"
PAUSE_KIND = "toolwire.run.pause_kind"  # what a waiting segment waits on: "calls" or "egress"
TRUNCATED = "toolwire.truncated"
ROUNDS = "toolwire.rounds"
# The whole run's totals, over every segment, on a segment's span (whose GenAI usage
# attributes, cost and rounds are its own segment's, so that spans add up to the run).
RUN_INPUT_TOKENS = "toolwire.run.input_tokens"
RUN_OUTPUT_TOKENS = "toolwire.run.output_tokens"
RUN_COST = "toolwire.run.cost_usd"
RUN_COST_COMPLETE = "toolwire.run.cost_complete"
RUN_ROUNDS = "toolwire.run.rounds"
GATE_EVENT = "toolwire.gate_decision"
LINK = "toolwire.link"  # what a span link points to
PREVIOUS_SEGMENT = "previous_segment"  # the span of the run's segment before this one


EXCEPTION_EVENT = "exception"  # the conventions' event, which backends show as the error
EXCEPTION_TYPE = "exception.type"
EXCEPTION_MESSAGE = "exception.message"
MAX_DESCRIPTION = 512  # characters of a failure's text on a span: what a list shows, bounded
TOOL_FAILURES = {
    TOOL_ERROR: "the tool answered with an error",
}


def cost(usd: float, *, priced: bool, complete: bool, run: bool = False) -> Attributes:
    """Cost attributes: whether every call was priced, and the dollars where they are known:
    every call priced, or some (``priced``: then the sum is a floor). No call priced: no
    dollars, since an unknown cost is not 0."""
    names = (RUN_COST, RUN_COST_COMPLETE) if run else (COST, COST_COMPLETE)
    out: Attributes = {names[1]: complete}
    if priced or complete:
        out[names[0]] = usd
    return out


def definitions(specs: Sequence[ToolSpec], described: Callable[[str], str] | None) -> str:
    """``gen_ai.tool.definitions`` of ``specs``: each tool's name and parameter schema (the
    operator's vocabulary), and its description only where content may be exported, as
    ``described`` shows it (secrets masked at ``redacted``)."""
    shown = []
    for spec in specs:
        entry: dict[str, Any] = {"type": "function", "name": spec.name}
        if described is not None:
            entry["description"] = described(spec.description)
        entry["parameters"] = spec.parameters
        shown.append(entry)
    return _json(shown)


def tool_failure(error: str) -> str:
    """The status description of a failed tool span, from its fixed ``error.type``."""
    return TOOL_FAILURES.get(error, f"refused: {error}")


def bounded_text(text: str) -> str:
    """``text`` cut to ``MAX_DESCRIPTION`` characters, marked where it was cut."""
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def failure_text(text: str) -> str:
    """A failure's text as a span's status description and its ``exception.message``: every
    secret shape masked (:func:`toolwire.core.redact.mask_secrets`, at every level), then cut
    to ``MAX_DESCRIPTION``."""
    return bounded_text(mask_secrets(text))


def tool_failure_text(step: Mapping[str, Any], error: str) -> str:
    """What a failed tool span says of its failure: the result the model read, where content
    may leave (it is in ``step`` only then), else the fixed phrase of ``error``."""
    result = step.get("tool_result")
    return failure_text(result) if isinstance(result, str) and result else tool_failure(error)


def provider_name(name: str, script: str | None = None) -> str:
    """The conventions' name of a provider; a replayed script (whatever it calls itself) is
    the ``scripted`` model."""
    return SCRIPTED if script else PROVIDER_NAMES.get(name, name)


def server(base_url: str | None) -> Attributes:
    """``server.address`` and ``server.port`` of a provider's base URL, when it has one."""
    if not base_url:
        return {}
    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return {}
    if not parts.hostname:
        return {}
    return {server_attributes.SERVER_ADDRESS: parts.hostname, server_attributes.SERVER_PORT: port}


def chat(request: Mapping[str, Any] | None, answer: Mapping[str, Any]) -> Attributes:
    """A model call's attributes: its request (when it was recorded) and its answer."""
    out: Attributes = {ROUND: _int(answer.get("round"))}
    finish = answer.get("finish_reason") or answer.get("stop")
    if isinstance(finish, str):
        out[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] = (finish,)
    out |= _counts(answer)
    if isinstance(answer.get("stop"), str):
        out[STOP] = answer["stop"]
    for key, name in (("response_model", gen_ai.GEN_AI_RESPONSE_MODEL),
                      ("response_id", gen_ai.GEN_AI_RESPONSE_ID)):  # fmt: skip
        if isinstance(answer.get(key), str):
            out[name] = answer[key]
    if isinstance(answer.get("cost"), int | float):
        out[COST] = float(answer["cost"])
    if request is not None:
        out |= _request(request)
    if "content" in answer:
        out[gen_ai.GEN_AI_OUTPUT_MESSAGES] = _json([_output(answer, finish)])
    if answer.get("content_withheld"):
        out[CONTENT_WITHHELD] = True
    return out


def _request(request: Mapping[str, Any]) -> Attributes:
    out: Attributes = {}
    offered = request.get("tool_specs")
    if isinstance(offered, list):
        out[TOOLS_OFFERED] = tuple(str(name) for name in offered)
    if isinstance(request.get("tool_choice"), str):
        out[TOOL_CHOICE] = request["tool_choice"]
    messages = request.get("messages_sent")
    if isinstance(messages, list):
        out[gen_ai.GEN_AI_INPUT_MESSAGES] = _json([_message(m) for m in messages])
    return out


_TOKENS = {
    "prompt_tokens": gen_ai.GEN_AI_USAGE_INPUT_TOKENS,
    "completion_tokens": gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS,
    "cache_read_tokens": gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
    "cache_write_tokens": gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
    "reasoning_tokens": gen_ai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS,
}


def _counts(answer: Mapping[str, Any]) -> Attributes:
    return {name: answer[key] for key, name in _TOKENS.items() if _is_count(answer.get(key))}


def tool(step: Mapping[str, Any]) -> Attributes:
    """A tool call's attributes: name, call id, sizes; its arguments and result when kept."""
    out: Attributes = {
        gen_ai.GEN_AI_OPERATION_NAME: EXECUTE_TOOL,
        gen_ai.GEN_AI_TOOL_NAME: str(step.get("tool_name", "")),
        gen_ai.GEN_AI_TOOL_TYPE: "function",
        ROUND: _int(step.get("round")),
    }
    if isinstance(step.get("tool_call_id"), str):
        out[gen_ai.GEN_AI_TOOL_CALL_ID] = step["tool_call_id"]
    if isinstance(step.get("tool_refused"), str):
        out[REFUSED] = step["tool_refused"]
    length = step.get("tool_result_length")
    if isinstance(step.get("tool_result"), str):
        length = len(step["tool_result"])
        out[gen_ai.GEN_AI_TOOL_CALL_RESULT] = step["tool_result"]
    if _is_count(length):
        out[RESULT_LENGTH] = length
    if _is_count(step.get("tool_result_bytes")):
        out[TRUNCATED_FROM] = step["tool_result_bytes"]
    if "tool_arguments" in step:
        out[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS] = _json(_object(step["tool_arguments"]))
    if _is_count(step.get("tool_artifacts_count")):
        out[ARTIFACTS] = step["tool_artifacts_count"]
        out[ARTIFACT_TYPES] = tuple(str(t) for t in step.get("tool_artifact_types") or ())
    if step.get("content_withheld"):
        out[CONTENT_WITHHELD] = True
    return out


def tool_error(step: Mapping[str, Any]) -> str | None:
    """The ``error.type`` of a tool call: the refusal's reason, ``tool_error``, or None."""
    if isinstance(step.get("tool_refused"), str):
        return str(step["tool_refused"])
    return TOOL_ERROR if step.get("tool_is_error") is True else None


def output_text(text: str, finish: str | None) -> str:
    """A run's final answer as ``gen_ai.output.messages``."""
    return _json([{"role": "assistant", "parts": [{"type": "text", "content": text}],
                   "finish_reason": finish or "stop"}])  # fmt: skip


def _message(message: Any) -> dict[str, Any]:
    """A recorded chat message in the conventions' shape (provider state is not a part)."""
    if not isinstance(message, Mapping):
        return {"role": "user", "parts": []}
    role = str(message.get("role", "user"))
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"),
                      "response": content})  # fmt: skip
    elif isinstance(content, str) and content:
        parts.append({"type": "text", "content": content})
    parts += [_call(c) for c in _list(message.get("tool_calls"))]
    return {"role": role, "parts": parts}


def _output(answer: Mapping[str, Any], finish: Any) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if isinstance(answer.get("thinking"), str):
        parts.append({"type": "reasoning", "content": answer["thinking"]})
    if isinstance(answer.get("content"), str) and answer["content"]:
        parts.append({"type": "text", "content": answer["content"]})
    parts += [_call(c) for c in _list(answer.get("requested_tool_calls"))]
    return {"role": "assistant", "parts": parts,
            "finish_reason": finish if isinstance(finish, str) else "stop"}  # fmt: skip


def _call(call: Any) -> dict[str, Any]:
    found = call if isinstance(call, Mapping) else {}
    return {"type": "tool_call", "id": found.get("id"), "name": found.get("name"),
            "arguments": _object(found.get("arguments"))}  # fmt: skip


def _object(arguments: Any) -> Any:
    """Arguments as an object when their text is one (the conventions ask for objects)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
    return arguments


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _int(value: Any) -> int:
    return value if _is_count(value) else 0
