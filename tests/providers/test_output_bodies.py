"""A run's output schema on each API's wire, judged by each vendor's SDK types: OpenAI's
``response_format``, Gemini's response schema (and when a model cannot take it beside its
functions), and the answer tool Anthropic is given, forced when the answer is due."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolwire import CompletionRequest, ToolCall, ToolSpec
from toolwire.core.output import OutputSchema
from toolwire.providers.answer_tool import as_answer
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import CompletionResponse, Reasoning, Stop
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.openai import OpenAIProvider

from .conversation import PLAIN, REQUEST
from .servers import KEY
from .test_anthropic_sdk import validate_request as anthropic_request
from .test_gemini_sdk import validate_request as gemini_request
from .test_openai_sdk import checked as openai_request

CITY = OutputSchema(
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
     "additionalProperties": False},
    "city",
    strict=True,
)  # fmt: skip
NAMES = OutputSchema({"type": "array", "items": {"type": "string"}})


def shaped(request: CompletionRequest, output: OutputSchema = CITY, **changes: Any) -> Any:
    return dataclasses.replace(request, output=output, **changes)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("base", [REQUEST, PLAIN])
def test_openai_is_asked_for_a_json_schema_response_format(
    base: CompletionRequest, stream: bool
) -> None:
    body = OpenAIProvider(model="gpt-test", api_key=KEY).encode(shaped(base, stream=stream))
    openai_request(body)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "city", "schema": dict(CITY.schema), "strict": True},
    }
    assert "response_format" not in OpenAIProvider(model="gpt-test", api_key=KEY).encode(base)


@pytest.mark.parametrize(
    ("model", "request_", "functions", "schema"),
    [
        ("gemini-3-pro-preview", shaped(REQUEST), True, True),  # both at once
        ("gemini-2.5-flash", shaped(PLAIN), False, True),
        ("gemini-2.5-flash", shaped(REQUEST), True, False),  # checked only, while calling
        ("gemini-2.5-flash", shaped(REQUEST, output_forced=True), False, True),  # answer due
        ("gemini-2.5-pro", shaped(REQUEST, tool_choice="none"), False, True),
    ],
)
def test_gemini_is_asked_for_a_response_schema_when_the_model_can_take_it(
    model: str, request_: CompletionRequest, functions: bool, schema: bool
) -> None:
    body = GeminiProvider(model=model, api_key=KEY).encode(request_)
    gemini_request(body)
    assert ("tools" in body) is functions
    config = body["generationConfig"]
    assert ("responseJsonSchema" in config) is schema
    if schema:
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"] == dict(CITY.schema)


def anthropic(request: CompletionRequest) -> dict[str, Any]:
    body = AnthropicProvider(model="claude-test", api_key=KEY).encode(request)
    anthropic_request(body)
    return body


def test_anthropic_gets_an_answer_tool_chosen_by_the_model_while_it_may_call_tools() -> None:
    body = anthropic(shaped(REQUEST))
    names = [t["name"] for t in body["tools"]]
    assert names == ["weather", "add", "final_answer"]
    assert body["tools"][-1]["input_schema"] == dict(CITY.schema)
    assert body["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize(
    "request_",
    [shaped(REQUEST, output_forced=True), shaped(REQUEST, tool_choice="none"), shaped(PLAIN)],
)
def test_anthropic_is_made_to_answer_with_the_tool_when_the_answer_is_due(
    request_: CompletionRequest,
) -> None:
    body = anthropic(request_)
    assert body["tool_choice"] == {"type": "tool", "name": "final_answer"}
    thinking = anthropic(dataclasses.replace(request_, reasoning=Reasoning(budget_tokens=2048)))
    assert thinking["tool_choice"] == {"type": "auto"}  # thinking allows no forced tool


def test_the_answer_tool_takes_another_name_beside_a_tool_of_that_name() -> None:
    taken = (*REQUEST.tools, ToolSpec("final_answer", "A real tool.", {"type": "object"}))
    body = anthropic(shaped(REQUEST, tools=taken))
    assert [t["name"] for t in body["tools"]][-2:] == ["final_answer", "final_answer_2"]


def test_a_schema_of_no_object_is_wrapped_and_its_answer_unwrapped() -> None:
    request = shaped(PLAIN, NAMES)
    body = anthropic(request)
    assert body["tools"][-1]["input_schema"] == {
        "type": "object",
        "properties": {"answer": dict(NAMES.schema)},
        "required": ["answer"],
    }
    said = CompletionResponse(
        tool_calls=(ToolCall("toolu_1", "final_answer", '{"answer": ["Oslo", "Bergen"]}'),),
        stop=Stop.TOOL_CALLS,
    )
    answer = as_answer(said, request)
    assert (answer.content, answer.tool_calls, answer.stop) == ('["Oslo", "Bergen"]', (), Stop.END)
    assert NAMES.check(answer.content).value == ["Oslo", "Bergen"]


def test_a_call_of_the_answer_tool_beside_real_calls_leaves_them_to_run() -> None:
    request = shaped(REQUEST)
    said = CompletionResponse(
        tool_calls=(
            ToolCall("toolu_1", "weather", '{"city": "Oslo"}'),
            ToolCall("toolu_2", "final_answer", '{"name": "Oslo"}'),
        ),
        stop=Stop.TOOL_CALLS,
    )
    answer = as_answer(said, request)
    assert [c.name for c in answer.tool_calls] == ["weather"] and answer.stop is Stop.TOOL_CALLS
    untouched = CompletionResponse(content="plain", stop=Stop.END)
    assert as_answer(untouched, request) is untouched
    assert as_answer(said, REQUEST) is said  # no schema: a tool of that name is a tool
