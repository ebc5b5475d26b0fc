"""The Python API against real servers: each adapter, straight to llama-cpp-python or through
LiteLLM, streamed and whole. What is asserted is the wire (tools accepted, calls parsed,
results sent back, deltas assembled, stop reasons, usage), never what a 135M model says."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import pytest

from toolwire import ChatMessage, ToolLoop, ToolRegistry, ToolResult, tool
from toolwire.core.errors import ToolwireError
from toolwire.core.lifecycle import TerminationReason
from toolwire.core.messages import ToolCall
from toolwire.providers.base import CompletionRequest, CompletionResponse, Delta, Stop
from toolwire.providers.wire import HttpProvider

from .routes import (
    ROUTE_IDS,
    ROUTES,
    WEATHER,
    Recording,
    forced_call,
    options,
    provider,
    tool_results,
    weather_result,
)
from .servers import CONTEXT, Server

pytestmark = pytest.mark.real_servers


@tool(group="demo", data_class="public")
def weather(city: str) -> ToolResult:
    """Current weather for a city."""
    return ToolResult.text(WEATHER)


@pytest.fixture(autouse=True)
def _collected() -> Iterator[None]:
    """A connection left open shows up (as an unraisable warning) in the test that left it."""
    yield
    gc.collect()


def server_for(name: str, request: pytest.FixtureRequest) -> Server:
    """The session's server called ``name`` (started on first use: a llama-only test does not
    wait for LiteLLM)."""
    server: Server = request.getfixturevalue(name)
    return server


def complete(adapter: HttpProvider, turn: CompletionRequest) -> CompletionResponse:
    """One call in a session of its own, as a run makes it: its connections close after."""

    async def call() -> CompletionResponse:
        async with adapter.session():
            return await adapter.complete(turn)

    return asyncio.run(call())


def usage_is_honest(usage: Any) -> bool:
    """Reported usage counts tokens; usage the server never sent is marked unknown, not 0."""
    if getattr(usage, "known", True):
        return bool(usage.prompt_tokens > 0 and usage.completion_tokens > 0)
    return True


@pytest.mark.parametrize(
    ("api", "via", "stream"),
    [
        forced_call(api, api, via, stream, via=via, id=f"{name}-{('whole', 'streamed')[stream]}")
        for (api, via), name in zip(ROUTES, ROUTE_IDS, strict=True)
        for stream in (False, True)
    ],
)
def test_a_forced_tool_call_is_parsed_run_and_its_result_sent_back(
    api: str, via: str, stream: bool, request: pytest.FixtureRequest
) -> None:
    """Round 1 must call ``weather`` (a named tool choice); the result goes back to the model
    in the next request, after the replayed assistant turn, which the server takes (200)."""
    transport = Recording()
    loop = ToolLoop(provider(api, server_for(via, request), transport),
                    ToolRegistry([weather]))  # fmt: skip
    result = loop.run_sync(
        [ChatMessage.user("What is the weather in Oslo? Use the weather tool.")],
        options=options(tool_choice="weather", max_rounds=1, max_tokens=24, stream=stream),
    )
    assert transport.statuses == [200, 200], transport.statuses
    assert [i.name for i in result.trace] == ["weather"]
    answered = weather_result(result.trace[0].arguments)
    assert [i.result for i in result.trace] == [answered]
    first, last = (body for _, body in transport.sent)
    assert tool_results(api, first) == []
    assert tool_results(api, last) == [answered]
    assert result.reason in (TerminationReason.MAX_ITERATIONS, TerminationReason.MAX_TOKENS)
    assert result.iterations == 1
    assert usage_is_honest(result.usage), result.usage


@pytest.mark.parametrize(("api", "via"), ROUTES, ids=ROUTE_IDS)
def test_streamed_deltas_assemble_the_answer_and_the_cap_ends_it(
    api: str, via: str, request: pytest.FixtureRequest
) -> None:
    deltas: list[Delta] = []
    transport = Recording()
    adapter = provider(api, server_for(via, request), transport)
    turn = CompletionRequest(
        messages=(ChatMessage.user("Tell me a long story about a lighthouse keeper."),),
        max_tokens=8,
        stream=True,
        on_delta=deltas.append,
    )
    response = complete(adapter, turn)
    assert transport.statuses == [200]
    text = "".join(d.text for d in deltas if d.kind == "content")
    assert text and text == response.content
    assert response.stop is Stop.MAX_TOKENS, (response.stop, response.finish_reason)
    assert usage_is_honest(response.usage), response.usage


@pytest.mark.parametrize(("api", "via"), ROUTES, ids=ROUTE_IDS)
def test_the_output_cap_is_the_field_the_server_reads(
    api: str, via: str, request: pytest.FixtureRequest
) -> None:
    """F6: ``max_tokens 8`` gives at most 8 tokens, whole (where usage is always reported)."""
    transport = Recording()
    loop = ToolLoop(provider(api, server_for(via, request), transport), ToolRegistry())
    result = loop.run_sync(
        [ChatMessage.user("Tell me a long story about a lighthouse keeper.")],
        options=options(max_tokens=8, stream=False),
    )
    assert result.reason is TerminationReason.MAX_TOKENS
    assert 0 < result.usage.completion_tokens <= 8, result.usage


def test_a_replayed_tool_call_turn_is_taken_by_llama_cpp_python(llama: Server) -> None:
    """F2: the assistant turn with tool calls and no text, then its result, is answered 200
    (llama-cpp-python refuses ``content: null`` and an absent ``content`` with HTTP 500)."""
    transport = Recording()
    adapter = provider("openai", llama, transport)
    call = ToolCall(id="call_1", name="weather", arguments='{"city": "Oslo"}')
    request = CompletionRequest(
        messages=(
            ChatMessage.user("What is the weather in Oslo?"),
            ChatMessage.assistant("", tool_calls=(call,)),
            ChatMessage.tool_result("call_1", WEATHER),
        ),
        tools=(weather.spec,),
        max_tokens=8,
    )
    complete(adapter, request)
    assert transport.statuses == [200]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(("api", "via"), ROUTES, ids=ROUTE_IDS)
def test_a_conversation_over_the_window_ends_context_window(
    api: str, via: str, stream: bool, request: pytest.FixtureRequest
) -> None:
    """F5: the server's own "context length exceeded" (a 400, whole) ends the run
    ``context_window``."""
    transport = Recording()
    loop = ToolLoop(provider(api, server_for(via, request), transport), ToolRegistry())
    words = " ".join(f"lighthouse{i}" for i in range(CONTEXT * 2))
    try:
        result = loop.run_sync(
            [ChatMessage.user(words)], options=options(max_tokens=8, stream=stream)
        )
    except ToolwireError as exc:
        # Streamed, neither server says why: llama-cpp-python ends the stream without an
        # event, LiteLLM with an empty "stop". Failing as an empty answer is then the honest
        # ending; completing is not.
        assert stream and "the model's answer was empty" in str(exc), str(exc)
        return
    assert len(transport.statuses) == 1  # not retried
    assert stream or transport.statuses == [400]
    assert result.reason is TerminationReason.CONTEXT_WINDOW
    assert result.stop is Stop.CONTEXT_WINDOW


@pytest.mark.parametrize(("api", "via"), ROUTES[1:], ids=ROUTE_IDS[1:])
def test_a_server_error_keeps_its_code_type_and_message(
    api: str, via: str, litellm: Server
) -> None:
    """F9: LiteLLM's refusal of an unknown model reaches the caller in its own words."""
    transport = Recording()
    loop = ToolLoop(provider(api, litellm, transport, model="no-such-model"), ToolRegistry())
    with pytest.raises(ToolwireError) as raised:
        loop.run_sync([ChatMessage.user("hello")], options=options(max_tokens=8))
    assert transport.statuses and transport.statuses[0] >= 400
    assert len(transport.statuses) == 1  # a client error is not retried
    assert "no-such-model" in str(raised.value), str(raised.value)
    # ...and the server's own type (and code, where the format has one: Anthropic's has none)
    # as fields of the error, not only inside its text
    fields = ("type",) if api == "anthropic" else ("code", "type")
    kept = {k: getattr(raised.value, k, None) for k in fields}
    assert all(kept.values()), (kept, str(raised.value))


@pytest.mark.parametrize(("api", "via"), ROUTES, ids=ROUTE_IDS)
def test_a_streamed_turn_that_may_call_a_tool_never_completes_empty(
    api: str, via: str, request: pytest.FixtureRequest
) -> None:
    """F3: llama-cpp-python answers a streamed "auto" turn that calls a tool with an empty
    event stream; the run must then fail saying so, never complete with an empty answer."""
    transport = Recording()
    loop = ToolLoop(provider(api, server_for(via, request), transport),
                    ToolRegistry([weather]))  # fmt: skip
    try:
        result = loop.run_sync(
            [ChatMessage.user("Call the weather tool for Oslo.")],
            options=options(max_rounds=1, max_tokens=24, stream=True),  # the default: auto
        )
    except ToolwireError as exc:
        assert "empty" in str(exc).lower(), str(exc)
        return
    assert result.trace or result.final_content.strip(), result
