"""The Anthropic and Gemini adapters against servers that copy those APIs at another address
(a LiteLLM proxy translating to an OpenAI-compatible server), over real loopback HTTP: the
shapes such a translation needs, and the shapes it sends back, handled; the vendors' own URLs
get their documented shapes unchanged."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolwire import ChatMessage, ToolLoop, ToolRegistry, tool
from toolwire.core.messages import ToolCall
from toolwire.loop.loop import RunOptions
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import CompletionRequest
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import HttpSettings

from .servers import KEY, Captured, FakeModel, loopback, no_sleep

CALL = ToolCall(id="call_1", name="weather", arguments='{"city": "Oslo"}')
REPLAYED = (
    ChatMessage.user("Weather in Oslo?"),
    ChatMessage.assistant("", tool_calls=(CALL,)),
    ChatMessage.tool_result("call_1", "rain"),
)


@tool(group="demo", data_class="public")
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: rain"


class _Played(FakeModel):
    """Answers the n-th request with the n-th of ``answers`` (bytes and a content type),
    recording each request."""

    __slots__ = ("answers",)

    def __init__(self, answers: Sequence[tuple[bytes, str]]) -> None:
        super().__init__()
        self.answers = list(answers)

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        self.captured.append(Captured(path, headers, body))
        return self.answers[min(len(self.captured), len(self.answers)) - 1]


def anthropic_sse(events: list[dict[str, Any]]) -> tuple[bytes, str]:
    lines = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return lines.encode(), "text/event-stream"


def message_events(blocks: list[list[dict[str, Any]]], stop: str) -> list[dict[str, Any]]:
    """A streamed message: each block a start event (its first item) and its deltas."""
    usage = {"input_tokens": 11, "output_tokens": 1}
    start: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
                             "content": [], "stop_reason": None, "usage": usage}  # fmt: skip
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, (first, *deltas) in enumerate(blocks):
        out.append({"type": "content_block_start", "index": index, "content_block": first})
        out += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        out.append({"type": "content_block_stop", "index": index})
    out.append({"type": "message_delta", "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 7}})  # fmt: skip
    out.append({"type": "message_stop"})
    return out


def tool_use(call_id: str, *pieces: str) -> list[dict[str, Any]]:
    first = {"type": "tool_use", "id": call_id, "name": "weather", "input": {}}
    return [first, *({"type": "input_json_delta", "partial_json": p} for p in pieces)]


def text(words: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": ""}, {"type": "text_delta", "text": words}]


ANSWER = anthropic_sse(message_events([text("It rains.")], "end_turn"))


def anthropic(base: str) -> AnthropicProvider:
    return AnthropicProvider(model="m", api_key=KEY, base_url=base,
                             http=HttpSettings(sleep=no_sleep))  # fmt: skip


def run_streamed(model: _Played) -> Any:
    with loopback(model) as base:
        loop = ToolLoop(anthropic(base), ToolRegistry([weather]))
        options = RunOptions(max_rounds=2, stream=True)
        return loop.run_sync([ChatMessage.user("Weather in Oslo?")], options=options)


# -- Anthropic: one call streamed as several blocks of one id ------------------------------


def test_consecutive_tool_use_blocks_of_one_id_are_one_call_with_the_pieces_joined() -> None:
    """LiteLLM's /v1/messages in front of llama-cpp-python opens a block for each streamed
    piece of a call, every one with the call's id."""
    pieces = [tool_use("toolu_a", '{"ci'), tool_use("toolu_a", 'ty": "Os'),
              tool_use("toolu_a", 'lo"}')]  # fmt: skip
    model = _Played([anthropic_sse(message_events(pieces, "tool_use")), ANSWER])
    result = run_streamed(model)
    assert [(i.name, i.arguments) for i in result.trace] == [("weather", {"city": "Oslo"})]
    assert result.final_content == "It rains."
    *_, replayed = model.captured[1].json()["messages"][1]["content"]
    assert replayed == {"type": "tool_use", "id": "toolu_a", "name": "weather",
                        "input": {"city": "Oslo"}}  # fmt: skip


def test_tool_use_blocks_of_different_ids_or_apart_stay_separate_calls() -> None:
    blocks = [tool_use("toolu_a", '{"city": "Oslo"}'), tool_use("toolu_b", '{"city": "Rome"}'),
              text("and"), tool_use("toolu_b", '{"city": "Bern"}')]  # fmt: skip
    model = _Played([anthropic_sse(message_events(blocks, "tool_use")), ANSWER])
    result = run_streamed(model)
    cities = [i.arguments["city"] for i in result.trace]
    assert cities == ["Oslo", "Rome", "Bern"]


# -- Anthropic: a replayed turn of tool uses alone -----------------------------------------


def encoded_turn(base_url: str | None) -> Any:
    provider = AnthropicProvider(model="m", api_key=KEY, base_url=base_url)
    body = provider.encode(CompletionRequest(messages=REPLAYED, tools=(weather.spec,)))
    return body["messages"][1]


def test_a_turn_of_tool_uses_alone_gets_a_text_block_only_away_from_anthropic() -> None:
    """A proxy drops whitespace-only text blocks and then makes such a turn an OpenAI message
    without content (which llama-cpp-python refuses); Anthropic refuses empty text blocks."""
    use = {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Oslo"}}
    assert encoded_turn(None) == {"role": "assistant", "content": [use]}
    away = encoded_turn("http://127.0.0.1:4000")
    assert away == {"role": "assistant", "content": [{"type": "text", "text": "\u200b"}, use]}
    assert away["content"][0]["text"].strip()  # what survives the proxy's strip


def test_a_turn_with_text_of_its_own_is_sent_as_it_is_everywhere() -> None:
    said = (REPLAYED[0], ChatMessage.assistant("Looking.", tool_calls=(CALL,)), REPLAYED[2])
    provider = AnthropicProvider(model="m", api_key=KEY, base_url="http://127.0.0.1:4000")
    body = provider.encode(CompletionRequest(messages=said, tools=(weather.spec,)))
    assert [b["type"] for b in body["messages"][1]["content"]] == ["text", "tool_use"]
    assert body["messages"][1]["content"][0]["text"] == "Looking."


def test_the_text_block_goes_on_the_wire_of_a_run_at_another_base_url() -> None:
    calls = anthropic_sse(message_events([tool_use("toolu_a", '{"city": "Oslo"}')], "tool_use"))
    model = _Played([calls, ANSWER])
    run_streamed(model)
    replayed = model.captured[1].json()["messages"][1]["content"]
    assert [b["type"] for b in replayed] == ["text", "tool_use"]
    assert replayed[0] == {"type": "text", "text": "\u200b"}


# -- Gemini: a choice of one tool where allowedFunctionNames is dropped ---------------------


@tool(group="demo", data_class="public")
def clock(city: str) -> str:
    """The time in a city."""
    return f"{city}: noon"


def gemini_tools(base_url: str | None, choice: str) -> tuple[list[str], Any]:
    provider = GeminiProvider(model="m", api_key=KEY, base_url=base_url)
    request = CompletionRequest(messages=REPLAYED[:1], tools=(clock.spec, weather.spec),
                                tool_choice=choice)  # fmt: skip
    body = provider.encode(request)
    names = [d["name"] for d in body["tools"][0]["functionDeclarations"]]
    return names, body["toolConfig"]["functionCallingConfig"]


def test_a_choice_of_one_tool_is_that_tool_alone_where_allowed_names_are_dropped() -> None:
    """LiteLLM reads only functionCallingConfig's mode: ANY with the tool alone is the choice
    it can carry; Google's own API gets allowedFunctionNames and every tool."""
    assert gemini_tools(None, "weather") == (
        ["clock", "weather"],
        {"mode": "ANY", "allowedFunctionNames": ["weather"]},
    )
    assert gemini_tools("http://127.0.0.1:4000/v1beta", "weather") == (["weather"], {"mode": "ANY"})
    for mode, word in (("auto", "AUTO"), ("none", "NONE"), ("required", "ANY")):
        assert gemini_tools("http://127.0.0.1:4000/v1beta", mode) == (
            ["clock", "weather"],
            {"mode": word},
        )


def test_a_run_forcing_one_tool_through_a_proxy_offers_it_alone_then_every_tool() -> None:
    model = FakeModel([[("weather", {"city": "Oslo"})], "It rains."])
    with loopback(model) as base:
        provider = GeminiProvider(model="m", api_key=KEY, base_url=f"{base}/v1beta",
                                  http=HttpSettings(sleep=no_sleep))  # fmt: skip
        loop = ToolLoop(provider, ToolRegistry([clock, weather]))
        options = RunOptions(max_rounds=3, tool_choice="weather", stream=False)
        result = loop.run_sync([ChatMessage.user("Weather in Oslo?")], options=options)
    assert result.final_content == "It rains."
    sent = [c.json() for c in model.captured]
    offered = [[d["name"] for d in b["tools"][0]["functionDeclarations"]] for b in sent]
    assert offered == [["weather"], ["clock", "weather"]]
    assert [b["toolConfig"]["functionCallingConfig"] for b in sent] == [
        {"mode": "ANY"},
        {"mode": "AUTO"},
    ]
