"""A server's request for a completion by the run's model, through a real run: refused (and
not declared) unless the workspace allows it for the server; when allowed, answered by the
run's own provider with bounded tokens and no tools, recorded as the run's steps and counted
in its totals; refused with a clear MCP error when it offers tools or the server's data is
above what the run's provider may see."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CreateMessageRequestParams, ErrorData, SamplingMessage, TextContent

from toolwire import ChatMessage, RunOptions, ToolLoop
from toolwire.core.trust import TrustZone
from toolwire.loop.live import LiveTurn
from toolwire.loop.loop import LoopResult
from toolwire.mcp.caller import Caller
from toolwire.mcp.sampling import MAX_SAMPLING_TOKENS, _messages, sample
from toolwire.policy.trace import LlmStep, RequestStep, RunTrace
from toolwire.providers.base import CompletionRequest, CompletionResponse
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.scripted import ScriptedProvider, Turn
from toolwire.tools.api import ToolContext, User

from ..providers.servers import KEY, Captured, FakeModel, loopback, openai_reply
from .kit import PYTHON, remote_registry, script, workspace

CONTEXT = ToolContext(user=User("ops", is_admin=True), run_id="run-1")
SUMMARY = "a short summary"


class Model(ScriptedProvider):
    """Calls ``tool`` once, then answers; a request that starts with the server's system
    prompt is a sample, answered with ``SUMMARY``. Keeps every request it was sent."""

    def __init__(self, tool: str, **arguments: object) -> None:
        super().__init__(self._respond_to)
        self.tool, self.arguments = tool, arguments
        self.requests: list[CompletionRequest] = []

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        self.requests.append(request)
        return await super().complete(request)

    def _respond_to(self, messages: Sequence[ChatMessage]) -> Turn:
        if messages[0].role == "system":
            return Turn(content=SUMMARY, prompt_tokens=40, completion_tokens=4)
        if not any(m.role == "tool" for m in messages):
            call = {"id": "c1", "name": self.tool, "arguments": self.arguments}
            return Turn.model_validate({"tool_calls": [call], "prompt_tokens": 10,
                                        "completion_tokens": 2})  # fmt: skip
        return Turn(content="done", prompt_tokens=20, completion_tokens=1)


def registry(folder: Path, extra: str = "") -> Any:
    ws = workspace(folder, f"""
[mcp_servers.asking]
command = "{PYTHON}"
args = [{script("asking.py")}]
enabled = true
data_class = "public"
timeout = 20
{extra}
""")  # fmt: skip
    tools, problems = remote_registry(ws)
    assert problems == []
    return tools


def run(tools: Any, model: Model, trace: RunTrace) -> LoopResult:
    loop = ToolLoop(model, tools)
    return asyncio.run(loop.run([ChatMessage.user("go")], context=CONTEXT, trace=trace,
                                options=RunOptions(trust_zone="local")))  # fmt: skip


def test_sampling_is_refused_and_not_declared_unless_the_workspace_allows_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tools, model, trace = registry(tmp_path), Model("asking__summarise", text="long"), RunTrace()
    result = run(tools, model, trace)
    (invocation,) = result.trace
    assert (invocation.result, invocation.is_error) == (
        'Error: the server of tool "asking__summarise" refused the call.', True)  # fmt: skip
    assert "Sampling not supported" in caplog.text
    assert len(model.requests) == 2  # the run's own two: no sample reached the model


def test_an_allowed_sample_goes_to_the_runs_provider_and_counts_in_its_totals(
    tmp_path: Path,
) -> None:
    tools, trace = registry(tmp_path, "sampling = true"), RunTrace()
    model = Model("asking__summarise", text="the long text")
    result = run(tools, model, trace)
    (invocation,) = result.trace
    assert json.loads(invocation.result) == {"text": SUMMARY, "model": "scripted",
                                             "stop": "endTurn"}  # fmt: skip
    sampled = model.requests[1]
    assert [(m.role, m.content) for m in sampled.messages] == [
        ("system", "Summarise."), ("user", "the long text")]  # fmt: skip
    assert (sampled.tools, sampled.max_tokens) == ((), MAX_SAMPLING_TOKENS)  # it asked for 5000
    llm = trace.of_kind(LlmStep)
    assert [(s.round, s.content, s.total_tokens) for s in llm] == [
        (1, "", 12), (1, SUMMARY, 44), (2, "done", 21)]  # fmt: skip
    assert [s.round for s in trace.of_kind(RequestStep)] == [1, 1, 2]
    assert result.usage.total_tokens == 12 + 44 + 21


def test_a_sample_that_offers_tools_is_refused_with_an_error_the_server_reads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tools, trace = registry(tmp_path, "sampling = true"), RunTrace()
    model = Model("asking__summarise_with_tools", text="x")
    result = run(tools, model, trace)
    (invocation,) = result.trace
    assert invocation.is_error
    assert "sampling refused: toolwire samples without tools" in caplog.text
    assert len(model.requests) == 2


def caller(zone: str, data_class: str, trace: RunTrace) -> Caller:
    provider = ScriptedProvider([Turn(content="never")], trust_zone=zone)
    turn = LiveTurn(run_id="run-1", round=1, trace=trace, provider=provider, charter=None)
    return Caller(server="asking", tool="asking__summarise", data_class=data_class, turn=turn,
                  loop=asyncio.new_event_loop())  # fmt: skip


def params(text: str = "x") -> CreateMessageRequestParams:
    said = SamplingMessage(role="user", content=TextContent(type="text", text=text))
    return CreateMessageRequestParams(messages=[said], max_tokens=10)


def test_a_sample_of_data_above_the_runs_zone_is_refused_before_the_model_sees_it() -> None:
    trace = RunTrace()
    asked = caller("external_global", "secret_adjacent", trace)
    answer = asyncio.run(sample(asked, params()))
    assert answer == ErrorData(code=-32600, message=(
        "sampling refused: the server's data class secret_adjacent is above what the run's "
        "provider may see (the external_global ceiling)"))  # fmt: skip
    assert trace.steps == []
    asked.loop.close()


def test_a_sample_outside_a_run_is_refused() -> None:
    asked = caller("local", "public", RunTrace())
    asked.turn = None
    answer = asyncio.run(sample(asked, params()))
    assert isinstance(answer, ErrorData)
    assert answer.message == "sampling refused: sampling is only for a call made by a toolwire run"
    asked.loop.close()


class SamplingModel(FakeModel):
    """The loopback model: a request that starts with the server's system prompt is a
    sample, answered with ``SUMMARY``; the run's own requests follow the turns."""

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        request = json.loads(body)
        if request["messages"][0] == {"role": "system", "content": "Summarise."}:
            self.captured.append(Captured(path, headers, body))
            return json.dumps(openai_reply(request, [SUMMARY])).encode(), "application/json"
        return super().respond(path, headers, body)


def test_a_sample_over_the_runs_openai_provider_counts_in_its_totals(
    tmp_path: Path,
) -> None:
    tools, trace = registry(tmp_path, "sampling = true"), RunTrace()
    model = SamplingModel(turns=[[("asking__summarise", {"text": "the long text"})], "done"])
    with loopback(model) as base:
        provider = OpenAIProvider(model="gpt-4o-mini", api_key=KEY, base_url=base,
                                  trust_zone="local")  # fmt: skip
        loop = ToolLoop(provider, tools)
        result = asyncio.run(loop.run([ChatMessage.user("go")], context=CONTEXT, trace=trace,
                                      options=RunOptions(trust_zone="local")))  # fmt: skip
    (invocation,) = result.trace
    assert json.loads(invocation.result) == {"text": SUMMARY, "model": "gpt-4o-mini",
                                             "stop": "endTurn"}  # fmt: skip
    sent = [c.json() for c in model.captured]
    assert [len(b["messages"]) for b in sent] == [1, 2, 3]
    assert "tools" not in sent[1] and sent[1]["max_tokens"] == MAX_SAMPLING_TOKENS
    llm = trace.of_kind(LlmStep)
    assert [s.total_tokens for s in llm] == [18, 18, 18]
    assert result.usage.total_tokens == 54


def test_a_samples_words_reach_the_model_as_a_tools_output_would() -> None:
    key, mail = "AKIAIOSFODNN7EXAMPLE", "ann@example.com"
    said = params(f"the key is {key}; write to {mail}")
    far = _messages(said, ToolContext(trust_zone=TrustZone.EXTERNAL_GLOBAL))
    near = _messages(said, ToolContext(trust_zone=TrustZone.LOCAL))
    nobody = _messages(said, None)  # no context: read as the least trusted zone reads
    assert key not in far[0].content and mail not in far[0].content
    assert key not in near[0].content and mail in near[0].content  # a zone that may see it
    assert nobody == far
