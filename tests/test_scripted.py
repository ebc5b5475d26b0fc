from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from toolwire import (
    ChatMessage,
    CompletionRequest,
    CompletionResponse,
    ScriptedProvider,
    ToolSpec,
)
from toolwire.core.errors import ConfigError, ScriptExhausted


def ask(
    provider: ScriptedProvider, *messages: ChatMessage, tools: bool = True
) -> CompletionResponse:
    specs = (ToolSpec("lookup", "d"),) if tools else ()
    request = CompletionRequest(messages=messages or (ChatMessage.user("q"),), tools=specs)
    return asyncio.run(provider.complete(request))


def test_turn_follows_the_number_of_assistant_turns() -> None:
    provider = ScriptedProvider.from_turns(
        [
            {"content": "first", "tool_calls": [{"name": "lookup", "arguments": {"k": 1}}]},
            {"content": "second", "prompt_tokens": 4, "completion_tokens": 2},
        ]
    )
    first = ask(provider)
    assert first.content == "first"
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1_1", "lookup", '{"k":1}')
    second = ask(provider, ChatMessage.user("q"), ChatMessage.assistant("first"))
    assert second.content == "second"
    assert second.usage.total_tokens == 6
    assert second.finish_reason == "stop"


def test_a_toolless_request_gets_only_the_text() -> None:
    provider = ScriptedProvider.from_turns([{"content": "t", "tool_calls": [{"name": "x"}]}])
    assert ask(provider, tools=False).tool_calls == ()


def test_running_out_of_turns_is_a_provider_error() -> None:
    provider = ScriptedProvider.from_turns([{"content": "only"}])
    with pytest.raises(ScriptExhausted, match="the script has 1 turns; turn 2 was asked for"):
        ask(provider, ChatMessage.user("q"), ChatMessage.assistant("only"))


def test_delay_is_honoured() -> None:
    provider = ScriptedProvider.from_turns([{"content": "slow", "delay_ms": 50}])
    started = time.perf_counter()
    ask(provider)
    assert time.perf_counter() - started >= 0.045


def test_loads_yaml_and_json_scripts(tmp_path: Path) -> None:
    yaml_file = tmp_path / "s.yaml"
    yaml_file.write_text("name: demo replay\nturns:\n  - content: hi\n")
    json_file = tmp_path / "s.json"
    json_file.write_text('[{"content": "hey", "tool_calls": [{"name": "lookup"}]}]')
    yaml_provider = ScriptedProvider.from_file(yaml_file)
    assert yaml_provider.name == "demo replay"
    assert ask(yaml_provider).content == "hi"
    assert ask(ScriptedProvider.from_file(json_file)).tool_calls[0].name == "lookup"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("turns: [{content: 1.5}]", "turns.0.content: Input should be a valid string"),
        ("turns: [{surprise: 1}]", "turns.0.surprise: Extra inputs are not permitted"),
        ("turns: [{tool_calls: [{arguments: {}}]}]", "turns.0.tool_calls.0.name: Field required"),
        ("turns: [{delay_ms: -1}]", "turns.0.delay_ms: Input should be greater than or equal"),
        ("{unclosed", "is not valid JSON or YAML"),
        ("42", "script: Input should be a valid dictionary"),
    ],
)
def test_bad_scripts_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        ScriptedProvider.from_file(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_missing_or_binary_script(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read script"):
        ScriptedProvider.from_file(tmp_path / "nope.yaml")
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not valid JSON or YAML"):
        ScriptedProvider.from_file(binary)


def test_a_function_of_the_messages() -> None:
    provider = ScriptedProvider(lambda ms: CompletionResponse(content=f"{len(ms)} messages"))
    assert ask(provider).content == "1 messages"
