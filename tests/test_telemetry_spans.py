"""The spans of runs, per the OpenTelemetry GenAI conventions, through an in-memory exporter."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from toolwire import (
    Artifact,
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolContext,
    ToolRegistry,
    ToolResult,
    tool,
)
from toolwire.core.errors import ServerError
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel, tool_name
from toolwire.providers.base import CompletionRequest, Stop, Usage
from toolwire.runs.runtime import RunRequest, Runtime

from .fakes import PricedModel, call
from .governed import EXPECTED, NOPE, governed_run, registry
from .telemetry_kit import Captured, attributes, events

SECRET = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"


@tool(data_class="public")
def lookup(query: str) -> ToolResult:
    """Look something up."""
    return ToolResult.text(f"found {query}", Artifact.text("hits", f"artifact-canary {query}"))


@tool(data_class="public")
def boom() -> str:
    raise RuntimeError("down")


def answers(*turns: CompletionResponse, model: str = "gpt-4o-mini") -> PricedModel:
    return PricedModel(*turns, model=model)


def three_rounds(model: str = "gpt-4o-mini") -> PricedModel:
    """Round 1: a lookup and an unknown tool; round 2: a tool that fails; round 3: the answer."""
    usage = Usage(prompt_tokens=100, completion_tokens=20)
    return answers(
        CompletionResponse(
            tool_calls=(ToolCall.of("c1", "lookup", {"query": f"q {SECRET}"}),
                        ToolCall("c2", "nope")),
            stop=Stop.TOOL_CALLS, finish_reason="tool_calls", usage=usage,
        ),
        CompletionResponse(tool_calls=(ToolCall("c3", "boom"),), stop=Stop.TOOL_CALLS,
                           finish_reason="tool_calls", usage=usage),
        CompletionResponse(content=f"the answer {SECRET}", finish_reason="stop", usage=usage),
        model=model,
    )  # fmt: skip


def traced(
    provider: Any,
    level: PrivacyLevel = PrivacyLevel.METADATA,
    prompt: str = "find it",
    cap: PrivacyLevel | None = None,
    **options: Any,
) -> tuple[Captured, Any]:
    """A run at ``level`` (its charter's) under telemetry capped at ``cap`` (default: the same)."""
    captured = Captured(cap or level)
    runtime = Runtime(ToolRegistry([lookup, boom]), telemetry=captured.telemetry)
    request = RunRequest.of(prompt, provider=provider, system="be brief", model="gpt-4o-mini",
                            options=RunOptions(**options), privacy=level)  # fmt: skip
    return captured, runtime.run_sync(request)


def test_a_three_round_run_is_one_agent_span_over_its_model_and_tool_calls() -> None:
    captured, outcome = traced(three_rounds(), allowed_tools=["lookup", "boom", "ghost"])
    spans = captured.spans
    assert [s.name for s in spans] == [
        "invoke_agent",
        "chat gpt-4o-mini", "execute_tool lookup", f"execute_tool {NOPE}",
        "chat gpt-4o-mini", "execute_tool boom",
        "chat gpt-4o-mini",
    ]  # fmt: skip
    root, *children = spans
    assert root.parent is None and root.kind is SpanKind.INTERNAL
    assert root.context is not None
    for child in children:
        assert child.parent is not None and child.parent.span_id == root.context.span_id
        assert child.context is not None and child.context.trace_id == root.context.trace_id
        assert root.start_time is not None and root.end_time is not None
        assert root.start_time <= (child.start_time or 0) <= (child.end_time or 0) <= root.end_time
    client, internal = SpanKind.CLIENT, SpanKind.INTERNAL
    assert [c.kind for c in children] == [client, internal, internal, client, internal, client]
    assert attributes(root) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.conversation.id": outcome.run_id,
        "toolwire.run.id": outcome.run_id,
        "toolwire.segment": "run",
        "toolwire.privacy_level": "metadata",
        "toolwire.run.status": "completed",
        "toolwire.termination_reason": "completed",
        "toolwire.truncated": False,
        "toolwire.rounds": 3,
        "gen_ai.usage.input_tokens": 300,
        "gen_ai.usage.output_tokens": 60,
        "toolwire.cost_usd": pytest.approx(outcome.result.cost.shown),
        "toolwire.cost_complete": True,
        # One segment: the run's totals are the segment's.
        "toolwire.run.rounds": 3,
        "toolwire.run.input_tokens": 300,
        "toolwire.run.output_tokens": 60,
        "toolwire.run.cost_usd": pytest.approx(outcome.result.cost.shown),
        "toolwire.run.cost_complete": True,
    }
    assert root.status.status_code is StatusCode.UNSET


def test_model_call_spans_carry_the_conventions_attributes() -> None:
    captured, outcome = traced(three_rounds())
    first, _, last = captured.named("chat")
    assert attributes(first) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.conversation.id": outcome.run_id,
        "toolwire.run.id": outcome.run_id,
        "toolwire.round": 1,
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 100,
        "gen_ai.usage.output_tokens": 20,
        "toolwire.stop": "tool_calls",
        "toolwire.cost_usd": pytest.approx(outcome.steps[1].cost),
        "toolwire.tools_offered": ("lookup", "boom"),
        "toolwire.content_withheld": True,
        "gen_ai.tool.definitions": json.dumps(
            [
                {"type": "function", "name": "lookup", "parameters": lookup.spec.parameters},
                {"type": "function", "name": "boom", "parameters": boom.spec.parameters},
            ],
            separators=(",", ":"),
        ),  # names and schemas: no description at metadata
    }
    assert attributes(last)["gen_ai.response.finish_reasons"] == ("stop",)
    assert "gen_ai.response.model" not in attributes(first)  # this fake's answers name none
    assert attributes(last)["toolwire.round"] == 3


def test_tool_spans_carry_name_call_id_and_errors_as_status() -> None:
    captured, outcome = traced(three_rounds())
    ok, refused, failed = captured.named("execute_tool")
    assert attributes(ok) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.conversation.id": outcome.run_id,
        "toolwire.run.id": outcome.run_id,
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "c1",
        "toolwire.round": 1,
        "toolwire.tool.result_length": len(f"found q {SECRET}"),
        "toolwire.tool.artifacts_count": 1,
        "toolwire.tool.artifact_types": ("text",),
        "toolwire.content_withheld": True,
    }
    assert ok.status.status_code is StatusCode.UNSET
    assert refused.status.status_code is StatusCode.ERROR
    assert refused.status.description == "refused: unknown_tool"
    assert attributes(refused)["error.type"] == "unknown_tool"
    assert attributes(refused)["toolwire.tool.refused"] == "unknown_tool"
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == "the tool answered with an error"  # not "down"
    assert attributes(failed)["error.type"] == "tool_error"
    assert "toolwire.tool.refused" not in attributes(failed)


def test_gate_decisions_are_events_on_the_agent_span() -> None:
    captured, _ = traced(three_rounds(), allowed_tools=["lookup", "boom", "ghost"])
    root = captured.named("invoke_agent")[0]
    assert events(root) == [
        {"name": "toolwire.gate_decision", "toolwire.gate": "offer",
         "toolwire.reason": "not_registered", "toolwire.actor": "policy",
         "gen_ai.tool.name": "ghost", "toolwire.round": 1},
        {"name": "toolwire.gate_decision", "toolwire.gate": "call",
         "toolwire.reason": "unknown_tool", "toolwire.actor": "runtime",
         "gen_ai.tool.name": NOPE, "toolwire.round": 1},
    ]  # fmt: skip


def test_the_tools_not_offered_for_one_reason_are_one_event_with_their_count() -> None:
    captured, _ = traced(three_rounds(), allowed_tools=["lookup", "boom", "ghost", "phantom"])
    root = captured.named("invoke_agent")[0]
    assert events(root)[0] == {
        "name": "toolwire.gate_decision", "toolwire.gate": "offer",
        "toolwire.reason": "not_registered", "toolwire.actor": "policy", "toolwire.round": 1,
        "toolwire.detail": "ghost, phantom", "toolwire.count": 2,
    }  # fmt: skip


def test_a_call_refused_again_for_one_reason_is_one_event_with_its_count() -> None:
    again = tuple(ToolCall(f"n{i}", "nope") for i in range(15))
    captured, _ = traced(answers(
        CompletionResponse(tool_calls=again[:10], stop=Stop.TOOL_CALLS),
        CompletionResponse(tool_calls=(*again[10:], ToolCall("g1", "ghost")),
                           stop=Stop.TOOL_CALLS),
        CompletionResponse(content="done"),
    ))  # fmt: skip
    root = captured.named("invoke_agent")[0]
    assert events(root) == [
        {"name": "toolwire.gate_decision", "toolwire.gate": "call",
         "toolwire.reason": "unknown_tool", "toolwire.actor": "runtime",
         "gen_ai.tool.name": NOPE, "toolwire.round": 1, "toolwire.count": 15},
        {"name": "toolwire.gate_decision", "toolwire.gate": "call",
         "toolwire.reason": "unknown_tool", "toolwire.actor": "runtime",
         "gen_ai.tool.name": tool_name("ghost", frozenset()), "toolwire.round": 2},
    ]  # fmt: skip
    assert len(captured.named("execute_tool")) == 16  # each call still has its span


def test_every_gate_of_a_governed_run_is_an_event_across_its_two_segments() -> None:
    captured = Captured()
    runtime_of = Runtime(registry(), telemetry=captured.telemetry, state_key=StateKey.generate())
    waiting, ended = governed_run(runtime=runtime_of)
    first, second = captured.named("invoke_agent")
    assert attributes(first)["toolwire.segment"] == "run"
    assert attributes(first)["toolwire.run.status"] == "awaiting_approval"
    assert attributes(first)["toolwire.run.pause_kind"] == "calls"
    assert "toolwire.run.pause_kind" not in attributes(second)
    assert attributes(second)["toolwire.segment"] == "resume"
    assert attributes(second)["toolwire.termination_reason"] == "budget_exhausted"
    assert {attributes(s)["gen_ai.conversation.id"] for s in (first, second)} == {ended.run_id}
    seen = [(e["toolwire.gate"], e["toolwire.reason"], e["toolwire.actor"],
             e.get("gen_ai.tool.name")) for s in (first, second) for e in events(s)]  # fmt: skip
    assert seen == EXPECTED
    assert waiting.run_id == ended.run_id


def test_a_segment_waiting_at_an_egress_limit_says_so_on_its_span() -> None:
    captured = Captured()
    runtime_of = Runtime(ToolRegistry([read_note]), telemetry=captured.telemetry,
                         state_key=StateKey.generate())  # fmt: skip
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "read_note", "arguments": {}}]},
        {"content": "done"},
    ]
    request = RunRequest.of(
        "read",
        provider=ScriptedProvider.from_turns(turns),
        options=RunOptions(max_egress_bytes=0, on_egress_limit="approve"),
    )
    waiting = runtime_of.run_sync(request)
    assert waiting.status == "awaiting_approval"
    root = captured.named("invoke_agent")[0]
    shown = attributes(root)
    assert (shown["toolwire.run.status"], shown["toolwire.run.pause_kind"]) == (
        "awaiting_approval", "egress")  # fmt: skip


@tool(data_class="content")
def read_note() -> str:
    """Read the note."""
    return "a note"


def test_a_provider_failure_closes_its_call_span_with_the_error() -> None:
    class Failing(PricedModel):
        async def complete(self, request: CompletionRequest) -> CompletionResponse:
            if len(self.requests) == 1:
                self.requests.append(request)
                raise ServerError("upstream down", status=503)
            return await super().complete(request)

    first = CompletionResponse(tool_calls=(ToolCall.of("c1", "lookup", {"query": "x"}),),
                               stop=Stop.TOOL_CALLS, usage=Usage(prompt_tokens=5))  # fmt: skip
    captured, outcome = traced(Failing(first, model="gpt-4o-mini"))
    assert outcome.status == "failed"
    root = captured.named("invoke_agent")[0]
    assert root.status.status_code is StatusCode.ERROR
    assert root.status.description == outcome.error
    assert attributes(root)["error.type"] == "503"
    ok, failed = captured.named("chat")
    assert ok.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == outcome.error
    assert attributes(failed)["error.type"] == "503" and attributes(failed)["toolwire.round"] == 2
    # Both show as errors where a backend looks: an exception event with the stored error's
    # text, never the exception's own message (which may quote a server's body).
    for span in (root, failed):
        assert [e for e in events(span) if e["name"] == "exception"] == [
            {"name": "exception", "exception.type": "ServerError",
             "exception.message": outcome.error},
        ]  # fmt: skip
    assert outcome.error is not None and "upstream down" not in outcome.error
    assert failed.parent is not None and root.context is not None
    assert failed.parent.span_id == root.context.span_id
    durations = captured.points("gen_ai.client.operation.duration")
    assert sorted((a.get("error.type", ""), n) for a, n in durations) == [("", 1), ("503", 1)]


def test_every_span_of_every_kind_of_segment_carries_the_conversation_id() -> None:
    class Failing(PricedModel):
        async def complete(self, request: CompletionRequest) -> CompletionResponse:
            if self.requests:
                self.requests.append(request)
                raise ServerError("upstream down", status=503)
            return await super().complete(request)

    calls = (ToolCall.of("c1", "lookup", {"query": "x"}), ToolCall("c2", "nope"))
    first = CompletionResponse(tool_calls=calls, stop=Stop.TOOL_CALLS)
    for provider in (three_rounds(), Failing(first)):
        captured, outcome = traced(provider)
        assert len(captured.spans) >= 4  # the agent, a model call, tool calls (one refused)
        for span in captured.spans:
            assert attributes(span)["gen_ai.conversation.id"] == outcome.run_id, span.name
    captured = Captured()
    _, ended = governed_run(
        runtime=Runtime(registry(), telemetry=captured.telemetry, state_key=StateKey.generate())
    )
    assert {attributes(s)["gen_ai.conversation.id"] for s in captured.spans} == {ended.run_id}


def test_model_call_spans_and_metrics_name_the_model_that_answered_and_the_answer() -> None:
    usage = Usage(prompt_tokens=3, completion_tokens=1)
    turn = CompletionResponse(content="hi", usage=usage, model="gpt-4o-mini-2024-07-18",
                              response_id="chatcmpl-42")  # fmt: skip
    captured, _ = traced(answers(turn))
    (chat,) = captured.named("chat")
    shown = attributes(chat)
    assert (shown["gen_ai.response.model"], shown["gen_ai.response.id"]) == (
        "gpt-4o-mini-2024-07-18", "chatcmpl-42",
    )  # fmt: skip
    ((measured, _),) = captured.points("gen_ai.client.operation.duration")
    assert measured["gen_ai.response.model"] == "gpt-4o-mini-2024-07-18"
    assert measured["gen_ai.request.model"] == "gpt-4o-mini"


def test_a_cost_nobody_knows_is_no_number_and_says_it_is_not_complete() -> None:
    captured, outcome = traced(three_rounds(model="a-model-no-table-prices"))
    assert outcome.result is not None and not outcome.result.cost.complete
    root = attributes(captured.named("invoke_agent")[0])
    assert "toolwire.cost_usd" not in root and "toolwire.run.cost_usd" not in root
    assert (root["toolwire.cost_complete"], root["toolwire.run.cost_complete"]) == (False, False)
    assert all("toolwire.cost_usd" not in attributes(s) for s in captured.named("chat"))


def test_a_dry_run_has_no_model_call_span() -> None:
    captured, outcome = traced(three_rounds(), dry_run=True)
    assert outcome.status == "dry_run"
    assert [s.name for s in captured.spans] == ["invoke_agent"]
    assert captured.spans[0].status.status_code is StatusCode.UNSET


def test_a_direct_call_is_one_tool_span() -> None:
    import asyncio

    captured = Captured()
    runtime = Runtime(ToolRegistry([lookup]), telemetry=captured.telemetry)
    direct = ToolCall.of("d1", "lookup", {"query": "z"})
    outcome = asyncio.run(
        runtime.call(direct, context=ToolContext(), offered=frozenset({"lookup"}))
    )
    (span,) = captured.spans
    assert span.name == "execute_tool lookup" and span.parent is None
    assert attributes(span)["toolwire.run.id"] == outcome.run_id
    assert captured.points("toolwire.runs") == [
        ({"toolwire.run.status": "completed", "gen_ai.provider.name": "direct call"}, 1)
    ]


@pytest.mark.parametrize(
    ("run", "cap"),
    [(PrivacyLevel.METADATA, PrivacyLevel.FULL), (PrivacyLevel.FULL, PrivacyLevel.METADATA)],
)
def test_a_span_carries_content_only_at_its_runs_level_and_under_the_cap(
    run: PrivacyLevel, cap: PrivacyLevel
) -> None:
    captured, _ = traced(three_rounds(), run, prompt=f"find {SECRET}", cap=cap)
    everything = repr([(s.attributes, [e.attributes for e in s.events]) for s in captured.spans])
    assert SECRET not in everything and "sk-ant-***" not in everything
    assert "gen_ai.input.messages" not in attributes(captured.named("chat")[0])
    assert attributes(captured.named("invoke_agent")[0])["toolwire.privacy_level"] == "metadata"


@pytest.mark.parametrize("level", [PrivacyLevel.REDACTED, PrivacyLevel.FULL])
def test_content_rides_along_at_redacted_and_full_in_the_conventions_shape(
    level: PrivacyLevel,
) -> None:
    captured, _ = traced(three_rounds(), level, prompt=f"find {SECRET}")
    first = attributes(captured.named("chat")[0])
    messages = json.loads(first["gen_ai.input.messages"])
    shown = SECRET if level is PrivacyLevel.FULL else "sk-ant-***"
    assert messages == [
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": f"find {shown}"}]},
    ]
    output = json.loads(first["gen_ai.output.messages"])
    assert output == [{"role": "assistant", "finish_reason": "tool_calls", "parts": [
        {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"query": f"q {shown}"}},
        {"type": "tool_call", "id": "c2", "name": "nope", "arguments": {}},
    ]}]  # fmt: skip
    second_input = json.loads(attributes(captured.named("chat")[1])["gen_ai.input.messages"])
    response = {"type": "tool_call_response", "id": "c2", "response": 'Error: unknown tool "nope"'}
    assert second_input[-1] == {"role": "tool", "parts": [response]}
    lookup_span = attributes(captured.named("execute_tool lookup")[0])
    assert json.loads(lookup_span["gen_ai.tool.call.arguments"]) == {"query": f"q {shown}"}
    (offered, _) = json.loads(first["gen_ai.tool.definitions"])
    assert offered == {"type": "function", "name": "lookup", "description": lookup.spec.description,
                       "parameters": lookup.spec.parameters}  # fmt: skip
    assert lookup_span["gen_ai.tool.call.result"] == f"found q {shown}"
    root = attributes(captured.named("invoke_agent")[0])
    assert json.loads(root["gen_ai.output.messages"]) == [
        {"role": "assistant", "finish_reason": "stop",
         "parts": [{"type": "text", "content": f"the answer {shown}"}]}
    ]  # fmt: skip
    everything = repr([(s.attributes, [e.attributes for e in s.events]) for s in captured.spans])
    assert "artifact-canary" not in everything
    assert lookup_span["toolwire.tool.artifacts_count"] == 1


def test_a_failing_tracer_never_stops_a_run(caplog: pytest.LogCaptureFixture) -> None:
    captured = Captured()

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the tracer broke")

    captured.telemetry.tracer.start_span = explode  # type: ignore[method-assign]
    runtime = Runtime(ToolRegistry([lookup]), telemetry=captured.telemetry)
    provider = ScriptedProvider.from_turns([{"tool_calls": [call("lookup", {"query": "a"})]},
                                            {"content": "done"}])  # fmt: skip
    outcome = runtime.run_sync(RunRequest.of("go", provider=provider))
    assert outcome.status == "completed" and outcome.result is not None
    assert outcome.result.final_content == "done"
    assert "telemetry could not watch a run" in caplog.text


def test_a_failing_span_never_stops_a_run(caplog: pytest.LogCaptureFixture) -> None:
    captured = Captured()
    real = captured.telemetry.tracer.start_span
    calls = iter(range(100))

    def after_the_first(*args: Any, **kwargs: Any) -> Any:
        if next(calls):
            raise RuntimeError("the tracer broke")
        return real(*args, **kwargs)

    captured.telemetry.tracer.start_span = after_the_first  # type: ignore[method-assign]
    runtime = Runtime(ToolRegistry([lookup]), telemetry=captured.telemetry)
    provider = ScriptedProvider.from_turns([{"tool_calls": [call("lookup", {"query": "a"})]},
                                            {"content": "done"}])  # fmt: skip
    outcome = runtime.run_sync(RunRequest.of("go", provider=provider))
    assert outcome.status == "completed"
    assert [s.name for s in captured.spans] == ["invoke_agent"]
    assert "telemetry could not record a step" in caplog.text


def test_a_telemetry_written_before_watch_took_tools_still_watches_every_segment() -> None:
    seen: list[str] = []

    class Older:
        """A ``RunTelemetry`` whose ``watch`` takes what it took before ``tools``."""

        def watch(self, run_id: str, provider: Any, options: Any, segment: Any, *,
                  privacy: Any = None, before: Any = None) -> Any:  # fmt: skip
            class Watch:
                def step(self, step: Any) -> None:
                    seen.append(step.kind)

                def end(self, outcome: Any, failure: Any) -> None:
                    seen.append("end")

            return Watch()

    runtime = Runtime(ToolRegistry([lookup]), telemetry=Older())  # type: ignore[arg-type]
    outcome = runtime.run_sync(
        RunRequest.of("go", provider=answers(CompletionResponse(content="hi")))
    )
    assert outcome.status == "completed"
    assert seen == ["request", "llm", "end"]
