"""A chat message checks its shape when it is built, whichever way it is built."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolwire import ChatMessage, ToolCall
from toolwire.core.messages import ProviderState

CALL = ToolCall("c1", "add", "{}")
STATE = ProviderState("anthropic", {"blocks": []})


@pytest.mark.parametrize(
    ("args", "error", "words"),
    [
        (("robot", "x"), ValueError, "unknown message role 'robot'"),
        (("user", b"x"), TypeError, "content must be str, not bytes"),
        (("user", "x", (CALL,)), ValueError, "only an assistant message can carry tool calls"),
        (("tool", "x", (CALL,), "c1"), ValueError, "only an assistant message can carry"),
        (("user", "x", (), None, False, STATE), ValueError, "only an assistant message carries"),
        (("tool", "x"), ValueError, "only a tool message, has a tool_call_id"),
        (("assistant", "x", (), "c1"), ValueError, "only a tool message, has a tool_call_id"),
        (("tool", "x", (), ""), ValueError, "tool_call_id must not be empty"),
    ],
)
def test_a_message_of_the_wrong_shape_is_refused(
    args: tuple[Any, ...], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        ChatMessage(*args)


def test_the_factories_and_replace_build_the_same_checked_value() -> None:
    result = ChatMessage.tool_result("c1", "3", is_error=True)
    assert result == ChatMessage("tool", "3", (), "c1", True, None)
    assert (result.role, result.content, result.tool_call_id, result.is_error) == (
        "tool", "3", "c1", True)  # fmt: skip
    turn = ChatMessage.assistant("", [CALL], STATE)
    assert turn.tool_calls == (CALL,) and turn.provider_state is STATE
    assert dataclasses.replace(turn, content="hi").content == "hi"
    with pytest.raises(ValueError, match="tool_call_id"):
        dataclasses.replace(result, tool_call_id=None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.content = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError, match="tool_result takes the result's content string"):
        ChatMessage.tool_result("c1", 3)  # type: ignore[arg-type]
    assert hash(result) == hash(ChatMessage.tool_result("c1", "3", is_error=True))
