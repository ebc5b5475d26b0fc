"""The Responses API adapter: request bodies judged by the `openai` SDK's ``ResponseCreateParams``
(strictly, unknown keys refused), answers built by its ``Response`` and stream event models and
served over loopback HTTP, whole and streamed, through the adapter, the loop and the CLI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from openai.types.responses import response_create_params as params
from pydantic import TypeAdapter, ValidationError
from typer.testing import CliRunner

from toolwire import ChatMessage, CompletionRequest, ToolLoop, ToolRegistry, ToolSpec, tool
from toolwire.cli import app
from toolwire.core.errors import (
    AuthenticationError,
    ConfigError,
    MalformedResponse,
    ProviderError,
    RateLimitError,
)
from toolwire.core.messages import ProviderState, ToolCall
from toolwire.core.output import OutputSchema
from toolwire.demo import prepare_demo
from toolwire.loop.loop import TerminationReason
from toolwire.policy.options import RunOptions
from toolwire.providers.base import Delta, Reasoning, Stop
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.responses import ResponsesProvider
from toolwire.providers.select import create_provider
from toolwire.providers.sse import MAX_EVENT_BYTES
from toolwire.telemetry.genai import provider_name

from ..documented import blocks, page
from ..test_cli_run_options import tw
from . import test_egress as egress
from .conversation import PLAIN, REQUEST
from .responses_server import (
    ENCRYPTED,
    USAGE,
    Reply,
    ResponsesModel,
    events,
    reasoning_item,
    response,
    responses_loopback,
    sse,
)
from .servers import KEY, Captured, loopback, no_sleep
from .test_openai_sdk import _materialised

_WHOLE = TypeAdapter(params.ResponseCreateParamsNonStreaming)
_STREAMED = TypeAdapter(params.ResponseCreateParamsStreaming)
FAMILY = "openai-responses"


def checked(body: Mapping[str, Any]) -> None:
    """Raise unless ``body`` is a request the SDK's types accept, key for key."""
    adapter = _STREAMED if body.get("stream") is True else _WHOLE
    validated = _materialised(adapter.validate_python(dict(body), strict=True))
    if validated != body:
        raise AssertionError(f"keys the SDK does not know: {validated} != {body}")


def provider(base: str = "https://api.openai.com/v1", **kwargs: Any) -> ResponsesProvider:
    http = HttpSettings(sleep=no_sleep, timeout=10, max_attempts=1)
    return ResponsesProvider(model=kwargs.pop("model", "gpt-5"), api_key=KEY, base_url=base,
                             http=http, **kwargs)  # fmt: skip


def complete(adapter: ResponsesProvider, request: CompletionRequest) -> Any:
    return asyncio.run(adapter.complete(request))


def ask(stream: bool, **fields: Any) -> CompletionRequest:
    return CompletionRequest(messages=(ChatMessage.user("hi"),), stream=stream, **fields)


STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])

# --- the judge can fail -------------------------------------------------------------------

GOOD: dict[str, Any] = {"model": "m", "input": [{"type": "message", "role": "user",
                        "content": [{"type": "input_text", "text": "hi"}]}]}  # fmt: skip


@pytest.mark.parametrize(
    "body",
    [
        {**GOOD, "bogus": 1},
        {**GOOD, "input": [{"type": "message", "role": "user", "content": "hi", "bogus": 1}]},
        {**GOOD, "tool_choice": "never"},
        {**GOOD, "max_output_tokens": "512"},
        {**GOOD, "reasoning": {"effort": "extreme"}},
        {**GOOD, "tools": [{"type": "function", "name": "f", "parameters": {}}]},  # no strict
        {
            **GOOD,
            "input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}],
        },
        # the output_text part belongs to an output message, which needs its id and status
        {
            **GOOD,
            "input": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "x"}],
                }
            ],
        },
        {**GOOD, "input": [{"type": "reasoning", "encrypted_content": "x", "summary": []}]},
        {**GOOD, "text": {"format": {"type": "json_schema", "schema": {}}}},  # no name
    ],
)
def test_the_judge_refuses_unknown_keys_wrong_types_and_missing_keys(body: Any) -> None:
    with pytest.raises((ValidationError, AssertionError)):
        checked(body)


def test_the_judge_accepts_a_documented_body() -> None:
    checked(GOOD)
    checked({**GOOD, "stream": True, "store": False, "include": ["reasoning.encrypted_content"]})


# --- every body encode produces -------------------------------------------------------------

REPLAYED = ChatMessage.assistant(
    "Looking.",
    (ToolCall.of("call_a", "weather", {"city": "Oslo"}), ToolCall.of("call_b", "add", "{bad")),
    ProviderState(FAMILY, {"items": [reasoning_item(0),
                                     {"type": "message", "id": "msg_0", "phase": "commentary"},
                                     {"type": "function_call", "call_id": "call_a", "id": "fc_a"},
                                     reasoning_item(1),
                                     {"type": "function_call", "call_id": "call_b"}]}),
)  # fmt: skip
HISTORY = (
    ChatMessage.system("Be brief."),
    ChatMessage.user("Weather?"),
    REPLAYED,
    ChatMessage.tool_result("call_a", "3°C"),
    ChatMessage.tool_result("call_b", "bad arguments", is_error=True),
)
BODIES = {
    "conversation": REQUEST,
    "plain": PLAIN,
    "streamed": CompletionRequest(messages=REQUEST.messages, tools=REQUEST.tools, stream=True),
    "synthesis": CompletionRequest(
        messages=REQUEST.messages, tools=REQUEST.tools, tool_choice="none"
    ),
    "required": CompletionRequest(
        messages=REQUEST.messages, tools=REQUEST.tools, tool_choice="required"
    ),
    "named": CompletionRequest(
        messages=REQUEST.messages, tools=REQUEST.tools, tool_choice=REQUEST.tools[0].name
    ),
    "effort": CompletionRequest(messages=PLAIN.messages, reasoning=Reasoning("high")),
    "budget": CompletionRequest(messages=PLAIN.messages, reasoning=Reasoning(budget_tokens=900)),
    "capped": CompletionRequest(messages=PLAIN.messages, max_tokens=64, temperature=0.2),
    "schema": CompletionRequest(
        messages=PLAIN.messages, output=OutputSchema({"type": "object"}, "verdict", strict=True)
    ),
    "replayed": CompletionRequest(messages=HISTORY, tools=REQUEST.tools),
}


@pytest.mark.parametrize("model", ["gpt-5", "gpt-4.1"])
@pytest.mark.parametrize("name", BODIES)
def test_every_encoded_body_is_a_request_the_sdk_accepts(name: str, model: str) -> None:
    checked(provider(model=model).encode(BODIES[name]))


def test_the_wire_shape_of_a_replayed_conversation() -> None:
    body = provider().encode(BODIES["replayed"])
    assert body["instructions"] == "Be brief."
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["tool_choice"] == "auto"
    assert body["tools"][0] == {"type": "function", "name": REQUEST.tools[0].name,
                                "description": REQUEST.tools[0].description,
                                "parameters": dict(REQUEST.tools[0].parameters),
                                "strict": False}  # fmt: skip
    assert body["input"] == [
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Weather?"}]},
        reasoning_item(0),
        {"type": "message", "id": "msg_0", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
         "phase": "commentary"},
        {"type": "function_call", "call_id": "call_a", "name": "weather",
         "arguments": '{"city":"Oslo"}', "id": "fc_a"},
        reasoning_item(1),
        {"type": "function_call", "call_id": "call_b", "name": "add", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "3°C"},
        {"type": "function_call_output", "call_id": "call_b", "output": "bad arguments"},
    ]  # fmt: skip


def test_the_named_choice_cap_effort_and_schema_go_as_the_api_names_them() -> None:
    adapter = provider()
    assert adapter.encode(BODIES["named"])["tool_choice"] == {
        "type": "function", "name": REQUEST.tools[0].name}  # fmt: skip
    assert adapter.encode(BODIES["budget"])["reasoning"] == {"effort": "low"}
    assert adapter.encode(BODIES["effort"])["reasoning"] == {"effort": "high"}
    assert adapter.encode(BODIES["capped"])["max_output_tokens"] == 64
    assert adapter.encode(BODIES["schema"])["text"] == {
        "format": {
            "type": "json_schema",
            "name": "verdict",
            "schema": {"type": "object"},
            "strict": True,
        }
    }
    assert "tools" not in adapter.encode(PLAIN) and "tool_choice" not in adapter.encode(PLAIN)


@pytest.mark.parametrize(
    ("model", "request_reasoning", "asked"),
    [("gpt-5", None, True), ("o4-mini", None, True), ("gpt-5-chat-latest", None, False),
     ("gpt-4.1", None, False), ("gpt-4.1", Reasoning("low"), True)],
)  # fmt: skip
def test_encrypted_reasoning_is_asked_of_reasoning_models_and_reasoning_requests(
    model: str, request_reasoning: Reasoning | None, asked: bool
) -> None:
    body = provider(model=model).encode(ask(False, reasoning=request_reasoning))
    assert ("include" in body) is asked
    assert body["store"] is False
    forced = provider(model="gpt-4.1", encrypted_reasoning=True).encode(ask(False))
    assert forced["include"] == ["reasoning.encrypted_content"]
    assert "include" not in provider(encrypted_reasoning=False).encode(ask(False))


@pytest.mark.parametrize("other", ["openai", "anthropic", "azure-openai-responses"])
def test_another_family_s_state_never_goes_on_this_wire(other: str) -> None:
    moved = ChatMessage.assistant("Looking.", REPLAYED.tool_calls,
                                  ProviderState(other, REPLAYED.provider_state.data))  # type: ignore[union-attr]  # fmt: skip
    body = provider().encode(CompletionRequest(messages=(*HISTORY[:2], moved, *HISTORY[3:])))
    sent = json.dumps(body)
    assert ENCRYPTED.format(0) not in sent
    assert '"fc_a"' not in sent and '"msg_0"' not in sent  # an id never goes without its reasoning
    assert [i["type"] for i in body["input"]][1:4] == ["message", "function_call", "function_call"]


def test_this_family_s_reasoning_never_goes_to_chat_completions_or_another_family() -> None:
    chat = OpenAIProvider(model="gpt-test", api_key=KEY).encode(CompletionRequest(messages=HISTORY))
    assert ENCRYPTED.format(0) not in json.dumps(chat)
    azure = provider(family="azure-openai-responses").encode(CompletionRequest(messages=HISTORY))
    assert ENCRYPTED.format(0) not in json.dumps(azure)


# --- answers over loopback, whole and streamed ---------------------------------------------


def served(*turns: Reply | str | list[tuple[str, dict[str, Any]]]) -> ResponsesModel:
    return ResponsesModel(list(turns))


@STREAMS
def test_text_calls_thinking_usage_and_state_of_one_answer(stream: bool) -> None:
    model = served(Reply(text="Let me check.", calls=[("weather", {"city": "Oslo"})]))
    deltas: list[Delta] = []
    with responses_loopback(model) as base:
        answer = complete(provider(base), ask(stream, on_delta=deltas.append))
    assert answer.content == "Let me check."
    assert [(c.id, c.name, c.decoded_arguments()) for c in answer.tool_calls] == [
        ("call_0_0", "weather", {"city": "Oslo"})]  # fmt: skip
    assert answer.stop is Stop.TOOL_CALLS and answer.finish_reason == "completed"
    assert answer.thinking == "Thinking about step 0."
    assert answer.model == "gpt-5-2025" and answer.response_id == "resp_0"
    assert answer.usage.prompt_tokens == 11 and answer.usage.completion_tokens == 7
    assert answer.provider_state == ProviderState(FAMILY, {"items": [
        reasoning_item(0), {"type": "message", "id": "msg_0"},
        {"type": "function_call", "id": "fc_0_0", "call_id": "call_0_0"}]})  # fmt: skip
    expected = [Delta("thinking", "Thinking ab"), Delta("thinking", "out step 0."),
                Delta("content", "Let me"), Delta("content", " check.")]  # fmt: skip
    assert deltas == (expected if stream else [])
    sent = model.captured[0].json()
    assert model.captured[0].path == "/v1/responses"
    assert (sent.get("stream") is True) is stream
    assert model.captured[0].headers["authorization"] == f"Bearer {KEY}"


@STREAMS
def test_a_streamed_and_a_whole_answer_are_the_same_response(stream: bool) -> None:
    turn = Reply(text="Both.", calls=[("add", {"a": 1, "b": 2}), ("weather", {"city": "Rome"})])
    with responses_loopback(served(turn)) as base:
        whole = complete(provider(base), ask(False))
    with responses_loopback(served(turn)) as base:
        again = complete(provider(base), ask(stream))
    assert again == whole


@pytest.mark.parametrize(
    ("turn", "stop", "finish_reason"),
    [
        (Reply(text="Done."), Stop.END, "completed"),
        (Reply(calls=[("add", {"a": 1})]), Stop.TOOL_CALLS, "completed"),
        (Reply(text="Cut", status="incomplete", reason="max_output_tokens"), Stop.MAX_TOKENS,
         "max_output_tokens"),
        (Reply(text="", status="incomplete", reason="max_output_tokens"), Stop.MAX_TOKENS,
         "max_output_tokens"),
        (Reply(text="Filt", status="incomplete", reason="content_filter"), Stop.BLOCKED,
         "content_filter"),
        (Reply(text="Steered", status="incomplete", reason="steered"), Stop.OTHER, "steered"),
        (Reply(text="Many", status="incomplete", reason="max_messages"), Stop.OTHER,
         "max_messages"),
    ],
)  # fmt: skip
@STREAMS
def test_every_status_and_incomplete_reason_is_a_stop(
    turn: Reply, stop: Stop, finish_reason: str, stream: bool
) -> None:
    with responses_loopback(served(turn)) as base:
        answer = complete(provider(base), ask(stream))
    assert (answer.stop, answer.finish_reason) == (stop, finish_reason)
    assert answer.content == turn.text


@pytest.mark.parametrize("status", ["cancelled", "in_progress", "queued"])
def test_any_other_status_is_another_stop_with_its_word(status: str) -> None:
    body = response(0, "gpt-5", Reply(text="Half"))
    answer = provider().decode({**body, "status": status})
    assert (answer.stop, answer.finish_reason, answer.content) == (Stop.OTHER, status, "Half")


def test_raw_reasoning_text_and_refusal_deltas_are_assembled_and_only_reasoning_shown() -> None:
    deltas: list[Delta] = []
    assembly = provider().assembly(deltas.append)
    item = {"type": "reasoning", "id": "rs_1", "summary": []}
    message = {"type": "message", "id": "m", "role": "assistant", "status": "in_progress",
               "content": []}  # fmt: skip
    for event in [
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-oss"}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0,
         "delta": "Hmm, "},
        {"type": "response.reasoning_text.delta", "output_index": 0, "content_index": 0,
         "delta": "no."},
        {"type": "response.output_item.added", "output_index": 1, "item": message},
        {"type": "response.refusal.delta", "output_index": 1, "content_index": 0,
         "delta": "I won't."},
        {"type": "response.output_text.delta", "output_index": 7, "delta": "lost"},
        {"type": "response.unknown.event", "output_index": 1, "delta": "x"},
        {"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
                                                    "output": []}},
    ]:  # fmt: skip
        assembly.feed("", event)
    assert assembly.finished
    answer = provider().decode(assembly.body())
    assert answer.thinking == "Hmm, no."
    assert (answer.stop, answer.refusal, answer.content) == (Stop.REFUSAL, "I won't.", "")
    assert answer.provider_state is None  # no encrypted content: nothing to replay
    assert deltas == [Delta("thinking", "Hmm, "), Delta("thinking", "no.")]
    assert message["content"] == []  # the event's own data is never written into


@STREAMS
def test_a_refusal_is_the_refusal_outcome(stream: bool) -> None:
    with responses_loopback(served(Reply(refusal="I can't help with that."))) as base:
        answer = complete(provider(base), ask(stream))
    assert answer.stop is Stop.REFUSAL
    assert answer.refusal == "I can't help with that."
    assert answer.content == ""


@STREAMS
def test_usage_with_cached_and_reasoning_tokens(stream: bool) -> None:
    usage = {"input_tokens": 2000, "output_tokens": 900, "total_tokens": 2900,
             "input_tokens_details": {"cached_tokens": 1536, "cache_write_tokens": 64},
             "output_tokens_details": {"reasoning_tokens": 640}}  # fmt: skip
    with responses_loopback(served(Reply(text="Sum.", usage=usage))) as base:
        answer = complete(provider(base), ask(stream))
    got = answer.usage
    assert (got.prompt_tokens, got.completion_tokens, got.cache_read_tokens,
            got.cache_write_tokens, got.reasoning_tokens, got.known) == (
        2000, 900, 1536, 64, 640, True)  # fmt: skip


def test_an_answer_without_usage_has_unknown_tokens() -> None:
    body = response(0, "gpt-5", Reply(text="Hi"))
    body.pop("usage")
    assert provider().decode(body).usage.known is False


FAILED = Reply(status="failed", reasoning=False,
               error={"code": "rate_limit_exceeded", "message": f"Slow down, {KEY}"})  # fmt: skip


@STREAMS
def test_a_failed_response_is_the_typed_error_of_its_error_object(stream: bool) -> None:
    with responses_loopback(served(FAILED)) as base, pytest.raises(RateLimitError) as caught:
        complete(provider(base), ask(stream))
    error = caught.value
    assert error.code == "rate_limit_exceeded"
    assert "Slow down" in str(error) and f"{base}/responses" in str(error)
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in error.body


class _Canned:
    """A loopback model answering every request with one fixed status, body and type."""

    def __init__(self, status: int, out: bytes, kind: str) -> None:
        self.status, self.out, self.kind = status, out, kind
        self.captured: list[Captured] = []
        self.connections = 0

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, bytes, str]:
        self.captured.append(Captured(path, headers, raw))
        return self.status, self.out, self.kind


def canned(status: int, out: bytes, kind: str = "application/json") -> Any:
    from .responses_server import _Handler

    return loopback(_Canned(status, out, kind), _Handler)  # type: ignore[arg-type]


def _stream_of(*items: Mapping[str, Any]) -> bytes:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in items).encode()


ERROR_EVENT = {"type": "error", "code": "server_error", "message": "The server had an error.",
               "param": None, "sequence_number": 1}  # fmt: skip


@pytest.mark.parametrize("named", [True, False], ids=["event-named", "data-only"])
def test_an_error_event_is_a_typed_provider_error(named: bool) -> None:
    created = events(response(0, "gpt-5", Reply(text="x")))[0]
    stream = sse([created, ERROR_EVENT]) if named else _stream_of(created, ERROR_EVENT)
    with canned(200, stream, "text/event-stream") as base, pytest.raises(ProviderError) as caught:
        complete(provider(f"{base}/v1"), ask(True))
    error = caught.value
    assert error.code == "server_error"
    assert "The server had an error." in str(error)
    assert f"{base}/v1/responses" in str(error)


def test_a_stream_cut_before_its_final_event_is_malformed() -> None:
    cut = events(response(0, "gpt-5", Reply(text="Half an answer")))[:-1]
    with (
        canned(200, sse(cut), "text/event-stream") as base,
        pytest.raises(
            MalformedResponse, match=r"stream ended before response\.completed"
        ) as caught,
    ):
        complete(provider(f"{base}/v1"), ask(True))
    assert f"{base}/v1/responses" in str(caught.value)


@pytest.mark.parametrize(
    ("out", "said"),
    [
        (b'{"id": "resp_1", "object": "response", "status": "completed"}', "has no output items"),
        (b'{"output": "text", "status": "completed"}', "has no output items"),
        (b'{"output": [1, 2], "status": "completed"}', "an output item that is not an object"),
        (b'{"output": [], "status": "failed"}', "failed without an error object"),
        (b'{"output": [], "status": "completed"}', "the model's answer was empty"),
        (b"<html>oops</html>", "not JSON"),
    ],
)
def test_a_malformed_body_is_a_clear_provider_error(out: bytes, said: str) -> None:
    with canned(200, out) as base, pytest.raises(ProviderError, match=said) as caught:
        complete(provider(f"{base}/v1"), ask(False))
    assert f"{base}/v1/responses" in str(caught.value)
    assert caught.value.__cause__ is None


@pytest.mark.parametrize(
    ("stream", "said"),
    [
        (b"data: {not json}\n\n", "not JSON"),
        (
            _stream_of(
                {"type": "response.created", "response": "nope"},
                cast(Any, [1, 2]),
                {"type": "response.output_text.delta", "output_index": "x", "delta": 5},
            ),
            "stream ended before response.completed",
        ),
        (
            _stream_of({"type": "response.completed", "response": {"status": "completed"}}),
            "has no output items|the model's answer was empty",
        ),
        (b"", "without a single event"),
    ],
)
def test_malformed_events_are_a_clear_provider_error(stream: bytes, said: str) -> None:
    with (
        canned(200, stream, "text/event-stream") as base,
        pytest.raises(ProviderError, match=said) as caught,
    ):
        complete(provider(f"{base}/v1"), ask(True))
    assert f"{base}/v1/responses" in str(caught.value)


def test_a_refused_key_is_masked_and_the_error_names_the_endpoint() -> None:
    body = json.dumps(
        {
            "error": {
                "message": f"Incorrect API key provided: {KEY}.",
                "type": "invalid_request_error",
                "code": "invalid_api_key",
            }
        }
    )
    with canned(401, body.encode()) as base, pytest.raises(AuthenticationError) as caught:
        complete(provider(f"{base}/v1"), ask(False))
    error = caught.value
    assert str(error).startswith(f"openai-responses: HTTP 401 credentials refused ({base}/v1/")
    for shown in (str(error), repr(error), error.body):
        assert KEY not in shown
    assert error.__cause__ is None


# --- the loop: three rounds, reasoning replayed --------------------------------------------


@tool(group="demo", data_class="public")
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 3°C, rain"


@tool(group="demo", data_class="public")
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


SCRIPT: list[Any] = [
    [("weather", {"city": "Oslo"})],
    [("add", {"a": 2, "b": 2}), ("weather", {"city": "Bergen"})],
    "Oslo is rainy and 2+2=4.",
]


@STREAMS
def test_a_three_round_run_replays_each_reasoning_item_verbatim(stream: bool) -> None:
    model = ResponsesModel(SCRIPT)
    with responses_loopback(model) as base:
        loop = ToolLoop(provider(base), ToolRegistry([weather, add]))
        result = loop.run_sync([ChatMessage.system("Be brief."), ChatMessage.user("Weather?")],
                               options=RunOptions(stream=stream))  # fmt: skip
    assert model.problems == []
    assert result.reason is TerminationReason.COMPLETED
    assert result.final_content == "Oslo is rainy and 2+2=4."
    assert [i.result for i in result.trace] == ["Oslo: 3°C, rain", "4", "Bergen: 3°C, rain"]
    assert result.usage.prompt_tokens == 33 and result.usage.completion_tokens == 21
    last = model.captured[2].json()
    replayed = [i for i in last["input"] if i["type"] == "reasoning"]
    assert replayed == [reasoning_item(0), reasoning_item(1)]  # verbatim, as the server sent
    assert [i["type"] for i in last["input"]] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert all(c.json()["instructions"] == "Be brief." for c in model.captured)
    assert [c.json().get("stream", False) for c in model.captured] == [stream] * 3


def test_the_server_s_check_fails_a_request_missing_its_reasoning() -> None:
    """The loopback server's replay check can fail: a history whose reasoning was dropped."""
    model = ResponsesModel(SCRIPT)
    with responses_loopback(model) as base:
        adapter = provider(base)
        first = complete(adapter, ask(False))
        bare = ChatMessage.assistant("", first.tool_calls)  # the state left behind
        history = (ChatMessage.user("hi"), bare, ChatMessage.tool_result("call_0_0", "3°C"))
        with pytest.raises(ProviderError, match="HTTP 400"):
            complete(adapter, CompletionRequest(messages=history))
    assert model.problems and "reasoning items [] are not" in model.problems[0]


def test_the_server_s_check_fails_a_call_replayed_beside_its_reasoning_without_its_id() -> None:
    model = ResponsesModel(SCRIPT)
    with responses_loopback(model) as base:
        adapter = provider(base)
        first = complete(adapter, ask(False))
        assert first.provider_state is not None
        items = [{k: v for k, v in i.items() if k != "id" or i["type"] == "reasoning"}
                 for i in first.provider_state.data["items"]]  # fmt: skip
        bare = ChatMessage.assistant("", first.tool_calls, ProviderState(FAMILY, {"items": items}))
        history = (ChatMessage.user("hi"), bare, ChatMessage.tool_result("call_0_0", "3°C"))
        with pytest.raises(ProviderError, match="HTTP 400"):
            complete(adapter, CompletionRequest(messages=history))
    assert model.problems == ["turn 0: function_call item without its id"]


def test_an_answer_schema_is_asked_as_the_text_format_over_the_loop() -> None:
    model = ResponsesModel(['{"verdict": "ok"}'])
    schema = {"type": "object", "properties": {"verdict": {"type": "string"}},
              "required": ["verdict"]}  # fmt: skip
    with responses_loopback(model) as base:
        result = ToolLoop(provider(base), ToolRegistry([])).run_sync(
            [ChatMessage.user("Verdict?")], options=RunOptions(output=schema)
        )
    assert result.final_content == '{"verdict": "ok"}'
    sent = model.captured[0].json()
    assert sent["text"] == {"format": {"type": "json_schema", "name": "answer", "schema": schema,
                                       "strict": False}}  # fmt: skip
    checked(sent)


# --- selection and the CLI -----------------------------------------------------------------


def test_the_provider_is_chosen_by_name_with_openai_s_key_and_price_table() -> None:
    chosen = create_provider("openai-responses", model="gpt-5", environ={"OPENAI_API_KEY": KEY})
    assert isinstance(chosen, ResponsesProvider)
    assert chosen.url() == "https://api.openai.com/v1/responses"
    assert chosen.pricing_family == "openai"
    assert str(chosen.trust_zone) == "external_global"
    assert KEY not in repr(chosen)
    elsewhere = create_provider("openai-responses", model="m", base_url="http://127.0.0.1:9/v1",
                                environ={})  # fmt: skip
    assert isinstance(elsewhere, ResponsesProvider) and elsewhere.pricing_family is None
    assert elsewhere.headers("") == {}  # a local server: no key, no header
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY") as caught:
        create_provider("openai-responses", model="gpt-5", environ={})
    assert KEY not in str(caught.value)
    assert provider_name("openai-responses") == "openai"


def test_another_path_and_the_api_key_header_drive_the_same_adapter() -> None:
    model = ResponsesModel(["hi"])
    with responses_loopback(model) as base:
        root = base.removesuffix("/v1")
        adapter = ResponsesProvider(model="gpt-5", api_key=KEY, base_url=f"{root}/openai",
                                    path="/v1/responses", auth="api-key",
                                    http=HttpSettings(sleep=no_sleep))  # fmt: skip
        assert complete(adapter, ask(False)).content == "hi"
    (captured,) = model.captured
    assert captured.path == "/openai/v1/responses"
    assert captured.headers["api-key"] == KEY and "authorization" not in captured.headers
    bads: tuple[dict[str, Any], ...] = (
        {"path": "responses"},
        {"path": "/r?x=1"},
        {"auth": "basic"},
    )
    for bad in bads:
        with pytest.raises(ConfigError):
            ResponsesProvider(model="m", api_key=KEY, **bad)


DEMO_SCRIPT: list[Any] = [
    [("list_tables", {})],
    [("get_system_status", {}), ("get_relations", {})],
    "Four tables, a healthy server.",
]


@pytest.mark.parametrize("whole", [False, True], ids=["streamed", "whole"])
def test_the_cli_runs_three_rounds_against_the_responses_api(tmp_path: Path, whole: bool) -> None:
    workspace = str(prepare_demo(tmp_path / "shop").root / "workspace.toml")
    model = ResponsesModel(DEMO_SCRIPT)
    with responses_loopback(model) as base:
        args = ["run", "What is in the shop?", "--provider", "openai-responses", "--model",
                "gpt-5", "--base-url", base, "--workspace", workspace, "--trust-zone", "local",
                *(["--no-stream"] if whole else [])]  # fmt: skip
        result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": KEY})
    assert result.exit_code == 0, result.output
    assert "Four tables, a healthy server." in result.output
    assert KEY not in result.output
    assert model.problems == []
    assert len(model.captured) == 3
    bodies = [c.json() for c in model.captured]
    assert [b.get("stream", False) for b in bodies] == [not whole] * 3
    assert [i for i in bodies[2]["input"] if i["type"] == "reasoning"] == [
        reasoning_item(0), reasoning_item(1)]  # fmt: skip
    outputs = [i["call_id"] for i in bodies[2]["input"] if i["type"] == "function_call_output"]
    assert outputs == ["call_0_0", "call_1_0", "call_1_1"]
    for body in bodies:
        checked(body)
    assert all(c.headers["authorization"] == f"Bearer {KEY}" for c in model.captured)


def test_the_cli_help_lists_the_responses_provider_next_to_openai() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "400"})
    assert result.exit_code == 0
    assert "openai, openai-responses," in " ".join(result.output.split())


def test_a_plain_tool_spec_is_sent_whole_with_strict_false() -> None:
    spec = ToolSpec("lookup", "x" * 2000, {"type": "object", "properties": {}})
    body = provider().encode(CompletionRequest(messages=PLAIN.messages, tools=(spec,)))
    assert body["tools"][0]["strict"] is False
    assert len(body["tools"][0]["description"]) == 1024  # OpenAI's cap, cut with an ellipsis


def test_usage_constant_is_what_the_server_sends() -> None:
    assert response(0, "m", Reply(text="x"))["usage"] == USAGE


def test_the_docs_example_prints_what_its_comments_say(capsys: pytest.CaptureFixture[str]) -> None:
    (block,) = [b for b in blocks("python") if "ResponsesProvider(" in b.code]
    assert block.page == page("providers.md")
    exec(compile(block.code, str(block.page), "exec"), {})  # the page's own text
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        "https://api.openai.com/v1/responses False ['reasoning.encrypted_content'] Be brief.",
        "https://gateway.example/openai/v1/responses ['api-key']",
    ]
    assert all(f"# {line}" in block.code for line in printed)


@pytest.mark.parametrize(
    ("turn", "reason"),
    [
        (Reply(text="Cut sh", status="incomplete", reason="max_output_tokens"),
         TerminationReason.MAX_TOKENS),
        (Reply(text="", status="incomplete", reason="content_filter"), TerminationReason.BLOCKED),
        (Reply(refusal="I can't help with that."), TerminationReason.REFUSED),
    ],
)  # fmt: skip
@STREAMS
def test_each_ending_ends_the_run_as_the_loop_knows_it(
    turn: Reply, reason: TerminationReason, stream: bool
) -> None:
    with responses_loopback(served(turn)) as base:
        result = ToolLoop(provider(base), ToolRegistry([weather])).run_sync(
            [ChatMessage.user("Weather?")], options=RunOptions(stream=stream)
        )
    assert result.reason is reason
    if turn.refusal is not None:
        assert result.refusal == turn.refusal


def test_a_request_that_outgrew_the_window_ends_the_turn_context_window() -> None:
    body = json.dumps({"error": {"message": "Your input exceeds the context window of this model.",
                                 "type": "invalid_request_error", "param": "input",
                                 "code": "context_length_exceeded"}})  # fmt: skip
    with canned(400, body.encode()) as base:
        answer = complete(provider(f"{base}/v1"), ask(False))
    assert (answer.stop, answer.finish_reason) == (Stop.CONTEXT_WINDOW, "context_length_exceeded")


# --- egress: no artifact byte reaches the wire ----------------------------------------------


@pytest.fixture(scope="module")
def plain_server() -> Iterator[tuple[ResponsesModel, str]]:
    """A model without reasoning (the probe's streamed answer must be its text alone)."""
    model = ResponsesModel([], reasoning=False)
    with responses_loopback(model) as base:
        yield model, base


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=egress.runs())
def test_no_artifact_byte_reaches_the_wire_over_loopback(
    plain_server: tuple[ResponsesModel, str], stream: bool, plan: list[list[tuple[str, str]]]
) -> None:
    model, base = plain_server
    model.reset(egress.script(plan))
    result = egress.run_probe(provider(base), plan, stream=stream)
    assert model.problems == []
    egress.check(model.captured, result, plan, stream)


def test_a_stream_is_bounded_as_every_stream_is() -> None:
    created = events(response(0, "gpt-5", Reply(text="x")))[0]
    endless = sse([created]) + b"data: " + b"x" * (MAX_EVENT_BYTES + 10)
    with (
        canned(200, endless, "text/event-stream") as base,
        pytest.raises(MalformedResponse, match="MAX_EVENT_BYTES") as caught,
    ):
        complete(provider(f"{base}/v1"), ask(True))
    assert f"{base}/v1/responses" in str(caught.value)


def test_a_real_toolwire_process_runs_and_stores_the_run_without_the_key(tmp_path: Path) -> None:
    workspace = str(prepare_demo(tmp_path / "shop").root / "workspace.toml")
    model = ResponsesModel(DEMO_SCRIPT)
    with responses_loopback(model) as base:
        done = tw(tmp_path, "run", "--provider", "openai-responses", "--model", "gpt-5",
                  "--base-url", base, "--workspace", workspace, "--trust-zone", "local",
                  "--privacy", "full", "What is in the shop?")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Four tables, a healthy server." in done.stdout
    assert model.problems == [] and len(model.captured) == 3
    key = model.captured[0].headers["authorization"].removeprefix("Bearer ")
    assert key == "sk-test-cli-0000"
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.sqlite*"))
    assert b"Four tables, a healthy server." in stored  # the run is there, in full
    for shown in (done.stdout.encode(), done.stderr.encode(), stored):
        assert key.encode() not in shown
