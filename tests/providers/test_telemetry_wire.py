"""Each adapter over real HTTP on loopback, watched by telemetry: a model call's span names
the model that answered and the answer's id as the server sent them, and the span and the
GenAI histograms carry the conventions' attributes (``gen_ai.response.model``,
``server.address``, ``server.port``)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from toolwire import RunOptions, ToolRegistry, tool
from toolwire.runs.runtime import RunRequest, Runtime

from ..telemetry_kit import Captured, attributes
from .servers import ADAPTERS, FakeModel, loopback, make_provider

# What each fake server answers with: the model it names and the id of the first answer.
ANSWERED = {
    "openai": ("gpt-test", "chatcmpl-0"),
    "anthropic": ("claude-test", "msg_0"),
    "gemini": ("gemini-test-001", "resp-0"),
}


@tool(data_class="public")
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@pytest.mark.parametrize("name", ADAPTERS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_model_calls_name_the_answering_model_the_answer_and_the_server(
    name: str, stream: bool
) -> None:
    model = FakeModel(turns=[[("lookup", {"query": "a"})], "done"])
    captured = Captured()
    with loopback(model) as base:
        provider = make_provider(name, base=base)
        runtime = Runtime(ToolRegistry([lookup]), telemetry=captured.telemetry)
        outcome = runtime.run_sync(RunRequest.of("go", provider=provider,
                                                 options=RunOptions(stream=stream)))  # fmt: skip
    assert outcome.status == "completed", outcome
    port = urlsplit(base).port
    answered, first_id = ANSWERED[name]
    first, second = captured.named("chat")
    shown = attributes(first)
    assert (shown["gen_ai.response.model"], shown["gen_ai.response.id"]) == (answered, first_id)
    assert "gen_ai.response.id" in attributes(second)
    assert (shown["server.address"], shown["server.port"]) == ("127.0.0.1", port)
    for metric in ("gen_ai.client.operation.duration", "gen_ai.client.token.usage"):
        points = captured.points(metric)
        assert points, metric
        for measured, _ in points:
            assert measured["gen_ai.response.model"] == answered, metric
            assert (measured["server.address"], measured["server.port"]) == ("127.0.0.1", port)
            assert measured["gen_ai.operation.name"] == "chat"
            assert measured["gen_ai.provider.name"] == shown["gen_ai.provider.name"]
