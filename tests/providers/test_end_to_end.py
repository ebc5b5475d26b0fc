"""Each adapter drives a three-round tool run through ToolLoop over real loopback HTTP."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from toolwire import Artifact, ChatMessage, ToolLoop, ToolRegistry, ToolResult, tool
from toolwire.loop.loop import TerminationReason
from toolwire.policy.options import RunOptions
from toolwire.policy.trace import LlmStep, RunTrace

from .servers import ADAPTERS, KEY, FakeModel, loopback, make_provider


@tool(group="demo", data_class="public")
def weather(city: str) -> ToolResult:
    """Current weather for a city."""
    return ToolResult.text(f"{city}: 3°C, rain", Artifact.text("station", "raw-station-dump"))


@tool(group="demo", data_class="public")
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


SCRIPT: list[Any] = [
    [("weather", {"city": "Oslo"})],
    [("add", {"a": 2, "b": 2}), ("weather", {"city": "Bergen"})],
    "Oslo is rainy and 2+2=4.",
]

# What the final request must hold, per protocol, for the tool results of rounds 1 and 2.
RESULTS = ["Oslo: 3°C, rain", "4", "Bergen: 3°C, rain"]


def tool_texts(name: str, body: dict[str, Any]) -> list[str]:
    if name == "openai":
        return [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if name == "anthropic":
        return [
            b["content"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b["type"] == "tool_result"
        ]
    responses = [
        p["functionResponse"]["response"]
        for c in body["contents"]
        for p in c["parts"]
        if "functionResponse" in p
    ]
    return [r.get("output", r.get("error")) for r in responses]


@pytest.mark.parametrize("name", ADAPTERS)
def test_three_round_tool_run_over_loopback(name: str) -> None:
    model = FakeModel(SCRIPT)
    with loopback(model) as base:
        provider = make_provider(name, base=base)
        loop = ToolLoop(provider, ToolRegistry([weather, add]))
        result = loop.run_sync([ChatMessage.system("Be brief."), ChatMessage.user("Weather?")])
    assert result.final_content == "Oslo is rainy and 2+2=4."
    assert result.reason is TerminationReason.COMPLETED
    assert result.iterations == 3
    assert [i.name for i in result.trace] == ["weather", "add", "weather"]
    assert [i.result for i in result.trace] == RESULTS
    assert result.usage.prompt_tokens == 33
    assert result.usage.completion_tokens == 21
    assert len(model.captured) == 3
    assert tool_texts(name, model.captured[2].json()) == RESULTS
    assert all(b"raw-station-dump" not in c.body for c in model.captured)


ANSWERED = {
    "openai": ("gpt-test", "chatcmpl-{}"),
    "anthropic": ("claude-test", "msg_{}"),
    "gemini": ("gemini-test-001", "resp-{}"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", ADAPTERS)
def test_each_answer_step_names_the_model_that_answered_and_the_answers_id(
    name: str, stream: bool
) -> None:
    model = FakeModel(SCRIPT)
    trace = RunTrace()
    with loopback(model) as base:
        loop = ToolLoop(make_provider(name, base=base), ToolRegistry([weather, add]))
        loop.run_sync([ChatMessage.user("Weather?")], options=RunOptions(stream=stream),
                      trace=trace)  # fmt: skip
    answered, ids = ANSWERED[name]
    steps = trace.of_kind(LlmStep)
    assert [(s.response_model, s.response_id) for s in steps] == [
        (answered, ids.format(n)) for n in range(3)
    ]


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_run_reuses_one_connection_for_all_its_rounds(name: str) -> None:
    model = FakeModel(SCRIPT)
    with loopback(model) as base:
        provider = make_provider(name, base=base)
        loop = ToolLoop(provider, ToolRegistry([weather, add]))
        loop.run_sync([ChatMessage.user("Weather?")])
        assert len(model.captured) == 3
        assert model.connections == 1
        loop.run_sync([ChatMessage.user("Again?")])
        assert model.connections == 2  # a run's connections end with the run


@pytest.mark.parametrize("name", ADAPTERS)
def test_each_adapter_sends_its_credentials_the_documented_way(name: str) -> None:
    model = FakeModel(["hi"])
    with loopback(model) as base:
        ToolLoop(make_provider(name, base=base), ToolRegistry()).run_sync([ChatMessage.user("x")])
    (request,) = model.captured
    headers = {k.lower(): v for k, v in request.headers.items()}
    expected = {
        "openai": ("/v1/chat/completions", "authorization", f"Bearer {KEY}"),
        "anthropic": ("/v1/messages", "x-api-key", KEY),
        "gemini": (
            "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
            "x-goog-api-key",
            KEY,
        ),
    }[name]
    assert (request.path, expected[1], headers[expected[1]]) == expected
    assert KEY not in request.path
    assert headers["content-type"] == "application/json"
    if name == "anthropic":
        assert headers["anthropic-version"] == "2023-06-01"


@pytest.mark.parametrize("name", ADAPTERS)
def test_malformed_tool_calls_do_not_stop_the_run(name: str) -> None:
    """Bad JSON, no id and no name: each becomes an error tool turn and the run goes on."""
    model = FakeModel(["(played by the first reply)", "It went wrong, sorry."])
    bads: dict[str, dict[str, Any]] = {
        "openai": {
            "choices": [
                {
                    "message": {
                        "content": None,
                        "tool_calls": [
                            {"id": "c1", "function": {"name": "add", "arguments": '{"a": 1,'}},
                            {"function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
                            {"id": "c3", "function": {"arguments": "{}"}},
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ]
        },
        "anthropic": {
            "content": [
                {"type": "tool_use", "id": "c1", "name": "add", "input": '{"a": 1,'},
                {"type": "tool_use", "name": "add", "input": {"a": 1, "b": 2}},
                {"type": "tool_use", "id": "c3", "input": {}},
            ],
            "stop_reason": "tool_use",
        },
        "gemini": {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {"functionCall": {"name": "add", "args": [1]}},
                            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}},
                            {"functionCall": {"args": {}}},
                        ]
                    }
                }
            ]
        },
    }
    provider = make_provider(name, transport=_first_then(bads[name], model))
    whole = RunOptions(stream=False)  # the malformed bodies are whole answers
    result = ToolLoop(provider, ToolRegistry([add])).run_sync(
        [ChatMessage.user("add")], options=whole
    )
    assert result.final_content == "It went wrong, sorry."
    assert [(i.name, i.is_error) for i in result.trace] == [
        ("add", True),
        ("add", False),
        ("", True),
    ]
    assert result.trace[0].result == (
        'Error: arguments for tool "add" must be a JSON object; the text sent was not one.'
    )
    assert result.trace[1].result == "3"
    assert result.trace[2].result == 'Error: unknown tool ""'
    ids = [i.call_id for i in result.trace]
    assert len(set(ids)) == 3
    assert all(ids)


def _first_then(first: dict[str, Any], model: FakeModel) -> httpx.MockTransport:
    """Answers the first request with ``first``, then lets ``model`` play on."""
    inner = model.transport()
    sent: list[httpx.Request] = []

    async def handle(request: httpx.Request) -> httpx.Response:
        if not sent:
            sent.append(request)
            return httpx.Response(200, json=first)
        return await inner.handle_async_request(request)

    return httpx.MockTransport(handle)
