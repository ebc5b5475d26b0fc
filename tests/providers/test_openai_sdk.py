"""The `openai` SDK as the judge of our Chat Completions wire: request bodies validated against
its request-parameter types, response fixtures built from its response models.

``checked`` validates a body against ``CompletionCreateParamsNonStreaming`` (or ``...Streaming``)
strictly: wrong types and missing required keys fail validation, and a key the SDK's types do not
know (which pydantic drops from a TypedDict) fails the round-trip comparison.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.chat import completion_create_params as params
from pydantic import TypeAdapter, ValidationError

from toolwire import ChatMessage, CompletionRequest
from toolwire.providers.base import Reasoning
from toolwire.providers.openai import OpenAIProvider

from .conversation import PLAIN, REQUEST
from .servers import KEY

_WHOLE = TypeAdapter(params.CompletionCreateParamsNonStreaming)
_STREAMED = TypeAdapter(params.CompletionCreateParamsStreaming)
# Request fields some compatible servers document beyond OpenAI's own types.
EXTENSIONS = frozenset({"reasoning"})  # OpenRouter: {"effort"} or {"max_tokens"}


def checked(body: Mapping[str, Any], *, extensions: frozenset[str] = frozenset()) -> None:
    """Raise unless ``body`` is a request the SDK's types accept, key for key."""
    sdk_body = {k: v for k, v in body.items() if k not in extensions}
    adapter = _STREAMED if body.get("stream") is True else _WHOLE
    validated = _materialised(adapter.validate_python(sdk_body, strict=True))
    if validated != sdk_body:
        raise AssertionError(f"keys the SDK does not know: {validated} != {sdk_body}")


def _materialised(value: Any) -> Any:
    """Iterable fields validate lazily; reading them validates every item."""
    if isinstance(value, Mapping):
        return {k: _materialised(v) for k, v in value.items()}
    if isinstance(value, list | tuple | Iterator) or type(value).__name__ == "ValidatorIterator":
        return [_materialised(v) for v in value]
    return value


def completion(
    *,
    content: str | None = None,
    calls: Sequence[tuple[str, str, str]] = (),
    finish_reason: str = "stop",
    refusal: str | None = None,
    usage: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``chat.completion`` body built by the SDK's model; ``extra`` adds message fields a
    compatible server sends (``reasoning_content``, ``reasoning``)."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    model = ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1764590000,
            "model": "gpt-test-2025",
            "choices": [
                {
                    "index": 0,
                    "message": {**message, **(extra or {})},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": usage or {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    )
    return model.model_dump(mode="json", exclude_none=True)


def chunks(body: Mapping[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
    """The chunks a server streams for ``body``, each built by the SDK's chunk model: role,
    reasoning, text and refusal in ``pieces`` pieces, each call's id and name then its arguments
    in pieces, the finish reason, then the usage in a chunk with no choices."""
    choice = body["choices"][0]
    message = choice["message"]
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    for key in ("reasoning_content", "reasoning", "content", "refusal"):
        deltas += [{key: p} for p in _split(message.get(key) or "", pieces)]
    for n, call in enumerate(message.get("tool_calls") or ()):
        function = call["function"]
        first = {"index": n, "id": call["id"], "type": "function"}
        deltas.append({"tool_calls": [{**first, "function": {"name": function["name"]}}]})
        deltas += [
            {"tool_calls": [{"index": n, "function": {"arguments": p}}]}
            for p in _split(function["arguments"], pieces)
        ]
    head = {k: body[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    out = [head | {"choices": [{"index": 0, "delta": d}]} for d in deltas]
    out.append(
        head | {"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}
    )
    out.append(head | {"choices": [], "usage": body["usage"]})
    return [ChatCompletionChunk.model_validate(c).to_dict(exclude_none=True) for c in out]


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def provider(**kwargs: Any) -> OpenAIProvider:
    return OpenAIProvider(model="gpt-test", api_key=KEY, **kwargs)


# --- the judge can fail -------------------------------------------------------------------

GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    "body",
    [
        {**GOOD, "bogus": 1},  # an unknown top-level key
        {"model": "m", "messages": [{"role": "user", "content": "hi", "bogus": 1}]},
        {"model": "m", "messages": [{"role": "tool", "content": "x"}]},  # no tool_call_id
        {"messages": [{"role": "user", "content": "hi"}]},  # no model
        {**GOOD, "tool_choice": "never"},
        {**GOOD, "max_tokens": "512"},
        {**GOOD, "stream": False, "stream_options": {"include_usage": "yes"}},
        {**GOOD, "reasoning_effort": "extreme"},
        {
            "model": "m",
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}}
                    ],
                }
            ],
        },
    ],
)
def test_the_judge_refuses_unknown_keys_wrong_types_and_missing_keys(body: Any) -> None:
    with pytest.raises((ValidationError, AssertionError)):
        checked(body)


def test_the_judge_accepts_a_documented_body() -> None:
    checked(GOOD)
    checked({**GOOD, "stream": True, "stream_options": {"include_usage": True}})


# --- every body encode produces ------------------------------------------------------------

BODIES = {
    "conversation": REQUEST,
    "plain": PLAIN,
    "streamed": CompletionRequest(messages=REQUEST.messages, tools=REQUEST.tools, stream=True),
    "synthesis": CompletionRequest(
        messages=REQUEST.messages, tools=REQUEST.tools, tool_choice="none"
    ),
    "effort": CompletionRequest(messages=PLAIN.messages, reasoning=Reasoning("high")),
    "budget": CompletionRequest(messages=PLAIN.messages, reasoning=Reasoning(budget_tokens=900)),
    "no tools, choice none": CompletionRequest(
        messages=(ChatMessage.user("hi"),), tool_choice="none"
    ),
}


@pytest.mark.parametrize("name", BODIES)
@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_every_encoded_body_is_a_request_the_sdk_accepts(name: str, field: Any) -> None:
    checked(provider(max_tokens_field=field).encode(BODIES[name]))


OPENROUTER_REASONING = {"effort": {"effort": "high"}, "budget": {"max_tokens": 900}}


@pytest.mark.parametrize("name", BODIES)
def test_openrouter_bodies_are_sdk_requests_plus_its_reasoning_field(name: str) -> None:
    body = provider(reasoning_field="reasoning").encode(BODIES[name])
    checked(body, extensions=EXTENSIONS)
    assert body.get("reasoning") == OPENROUTER_REASONING.get(name)


def test_fixture_builders_round_trip_through_the_sdk() -> None:
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    body = completion(content="hi", usage=usage)
    assert ChatCompletion.model_validate(body).choices[0].message.content == "hi"
    streamed = chunks(body)
    assert [c["object"] for c in streamed] == ["chat.completion.chunk"] * len(streamed)
    assert streamed[-1] == {
        "id": "chatcmpl-1",
        "created": 1764590000,
        "model": "gpt-test-2025",
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
    }
