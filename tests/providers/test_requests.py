"""The loop's own builder of a request gives what the keyword form gives, field by field."""

from __future__ import annotations

import dataclasses

from toolwire import ChatMessage, CompletionRequest, CompletionResponse, ToolSpec
from toolwire.core.output import OutputSchema
from toolwire.providers.base import NO_USAGE, Reasoning, Usage, new_request


def test_a_built_request_is_its_keyword_form() -> None:
    def sink(_: object) -> None:
        return None

    values = {
        "messages": (ChatMessage.user("go"),),
        "tools": (ToolSpec("add", "Add.", {"type": "object"}),),
        "tool_choice": "required",
        "temperature": 0.5,
        "max_tokens": 77,
        "reasoning": Reasoning(effort="low"),
        "capture_raw": True,
        "stream": True,
        "on_delta": sink,
        "dropped_turns": 3,
        "output": OutputSchema.of({"type": "object"}),
        "output_forced": True,
        "on_failure": sink,
    }
    assert tuple(values) == tuple(f.name for f in dataclasses.fields(CompletionRequest))
    built = new_request(*values.values())  # type: ignore[arg-type]
    expected = CompletionRequest(**values)  # type: ignore[arg-type]
    assert built == expected and type(built) is CompletionRequest
    assert all(getattr(built, name) is value for name, value in values.items())
    assert dataclasses.replace(built, max_tokens=5).max_tokens == 5


def test_a_response_shares_one_frozen_default_usage() -> None:
    response = CompletionResponse()
    assert response.usage is NO_USAGE and response.usage == Usage()
    assert CompletionResponse(usage=Usage(1, 2)).usage.total_tokens == 3
