"""The values the loop builds with their own ``__init__`` (toolwire.core.slots) stay frozen and
equal to what their fields say, and ``dataclasses.replace`` still works on them."""

from __future__ import annotations

import dataclasses

import pytest

from toolwire import ChatMessage, CompletionResponse, ToolCall, ToolResult, Usage
from toolwire.providers.base import NO_USAGE, Stop


def test_a_response_takes_its_fields_by_keyword_only_and_stays_frozen() -> None:
    call = ToolCall("c1", "add", "{}")
    response = CompletionResponse(content="hi", tool_calls=(call,), usage=Usage(1, 2),
                                  stop=Stop.TOOL_CALLS, model="m")  # fmt: skip
    assert (response.content, response.tool_calls, response.usage.total_tokens) == (
        "hi",
        (call,),
        3,
    )
    assert response.stop is Stop.TOOL_CALLS and response.model == "m" and response.raw is None
    assert CompletionResponse().usage is NO_USAGE
    assert response == CompletionResponse(content="hi", tool_calls=(call,), usage=Usage(1, 2),
                                          stop=Stop.TOOL_CALLS, model="m")  # fmt: skip
    assert dataclasses.replace(response, raw={"a": 1}).raw == {"a": 1}
    with pytest.raises(TypeError):
        CompletionResponse("hi")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        CompletionResponse(contents="hi")  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        response.content = "changed"  # type: ignore[misc]


def test_a_tool_result_stays_frozen() -> None:
    result = ToolResult.text("3")
    assert (result.content, result.is_error, result.artifacts) == ("3", False, ())
    with pytest.raises(AttributeError, match="immutable"):
        result.content = "4"
    message = ChatMessage.user("go")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.role = "system"  # type: ignore[misc]
