"""Failed tool and model calls show as errors where a backend looks: status ERROR with a
bounded description, and an ``exception`` event, each secret masked and no tool's words below
the level that lets its result leave."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from toolwire import CompletionResponse, RunOptions, ToolCall, ToolRegistry, ToolResult, tool
from toolwire.core.errors import ToolRefusal
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Stop, Usage
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.telemetry.genai import MAX_DESCRIPTION

from .fakes import PricedModel
from .telemetry_kit import Captured, events

SECRET = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"
LONG = "x" * 2000


@tool(data_class="public")
def refuses(why: str) -> str:
    """Refuse with the words given."""
    raise ToolRefusal(why)


@tool(data_class="public")
def answers_error() -> ToolResult:
    """Answer with an error result."""
    return ToolResult.error(f"no such row; the key was {SECRET} {LONG}")


def run(level: PrivacyLevel) -> Captured:
    captured = Captured(level)
    runtime = Runtime(ToolRegistry([refuses, answers_error]), telemetry=captured.telemetry)
    calls = (ToolCall.of("c1", "refuses", {"why": f"closed, token {SECRET}"}),
             ToolCall("c2", "answers_error"), ToolCall("c3", "missing"))  # fmt: skip
    provider = PricedModel(
        CompletionResponse(tool_calls=calls, stop=Stop.TOOL_CALLS, usage=Usage(3, 1)),
        CompletionResponse(content="done", usage=Usage(3, 1)),
        model="gpt-4o-mini",
    )
    request = RunRequest.of("go", provider=provider, model="gpt-4o-mini", privacy=level,
                            options=RunOptions())  # fmt: skip
    assert runtime.run_sync(request).status == "completed"
    return captured


def exception_events(span: object) -> list[dict[str, object]]:
    return [e for e in events(span) if e["name"] == "exception"]  # type: ignore[arg-type]


def test_at_metadata_a_failed_tool_says_its_fixed_reason_as_status_and_exception() -> None:
    refused, failed, unknown = run(PrivacyLevel.METADATA).named("execute_tool")
    for span, error, text in (
        (refused, "tool_error", "the tool answered with an error"),
        (failed, "tool_error", "the tool answered with an error"),
        (unknown, "unknown_tool", "refused: unknown_tool"),
    ):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == text
        assert exception_events(span) == [
            {"name": "exception", "exception.type": error, "exception.message": text}
        ]
    everything = repr([(s.attributes, [e.attributes for e in s.events], s.status.description)
                       for s in run(PrivacyLevel.METADATA).spans])  # fmt: skip
    assert "closed" not in everything and "no such row" not in everything


@pytest.mark.parametrize("level", [PrivacyLevel.REDACTED, PrivacyLevel.FULL])
def test_where_content_leaves_a_failed_tool_says_what_the_model_read_masked_and_bounded(
    level: PrivacyLevel,
) -> None:
    refused, failed, _ = run(level).named("execute_tool")
    (event,) = exception_events(refused)
    assert event["exception.message"] == "Error: closed, token sk-ant-***"
    assert refused.status.description == "Error: closed, token sk-ant-***"
    (event,) = exception_events(failed)
    message = str(event["exception.message"])
    assert message.startswith("no such row; the key was sk-ant-*** xxx")
    assert len(message) == MAX_DESCRIPTION and message.endswith("…")
    assert failed.status.description == message
    assert SECRET not in repr([e.attributes for s in (refused, failed) for e in s.events])
