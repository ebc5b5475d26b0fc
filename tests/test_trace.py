from __future__ import annotations

import time

import pytest

from toolwire import (
    Artifact,
    ChatMessage,
    CompletionResponse,
    RunTrace,
    ToolCall,
    ToolInvocation,
    Usage,
)
from toolwire.core.jsonenc import dumps
from toolwire.policy.trace import LlmStep, ToolStep
from toolwire.providers.base import Stop


def test_step_dict_keeps_kind_round_duration_and_drops_absent_fields() -> None:
    step = ToolStep(round=2, duration_ms=12.3456, tool_name="t", tool_result="r")
    assert step.to_dict() == {
        "kind": "tool",
        "round": 2,
        "duration_ms": 12.35,
        "tool_name": "t",
        "tool_result": "r",
        "tool_is_error": False,
    }


def test_zero_and_false_are_kept() -> None:
    step = LlmStep(round=1, prompt_tokens=0, content="")
    assert step.to_dict() == {
        "kind": "llm",
        "round": 1,
        "duration_ms": 0.0,
        "content": "",
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "total_tokens": 0,
    }
    assert ToolStep(round=1, tool_name="t", tool_result="").to_dict()["tool_is_error"] is False


def test_a_tool_step_without_artifacts_has_no_artifact_key() -> None:
    trace = RunTrace()
    step = trace.record_tool(1, 1.0, ToolInvocation("t", {}, "ok", False))
    assert "tool_artifacts" not in step.to_dict()


def test_artifacts_serialise_as_plain_maps_in_field_order() -> None:
    trace = RunTrace()
    table = Artifact.table("rows", ["a"], [["1"]])
    step = trace.record_tool(
        3, 0.5, ToolInvocation("t", {"x": 1}, "ok", False, (table,), "call_9"), 123_456
    )
    assert list(step.to_dict()) == [
        "kind",
        "round",
        "duration_ms",
        "start_ms",
        "tool_call_id",
        "tool_name",
        "tool_arguments",
        "tool_result",
        "tool_result_bytes",
        "tool_is_error",
        "tool_artifacts",
    ]
    assert step.to_dict()["tool_artifacts"] == [
        {"type": "table", "label": "rows", "data": {"columns": ["a"], "rows": [["1"]]}}
    ]
    assert dumps(step.to_dict()).startswith('{"kind":"tool","round":3')


def test_llm_step_splits_tokens_and_requested_calls() -> None:
    trace = RunTrace()
    response = CompletionResponse(
        content="c",
        thinking="hmm",
        tool_calls=(ToolCall("id1", "lookup", '{"k":1}'),),
        usage=Usage(7, 3),
        stop=Stop.TOOL_CALLS,
        finish_reason="tool_calls",
        raw={"secret": "body"},
    )
    data = trace.record_llm(1, 5.0, response).to_dict()
    assert isinstance(data.pop("start_ms"), float)
    assert data == {
        "kind": "llm",
        "round": 1,
        "duration_ms": 5.0,
        "content": "c",
        "thinking": "hmm",
        "stop": "tool_calls",
        "finish_reason": "tool_calls",
        "prompt_tokens": 7,
        "completion_tokens": 3,
        "total_tokens": 10,
        "requested_tool_calls": [{"id": "id1", "name": "lookup", "arguments": '{"k":1}'}],
    }


def test_raw_is_kept_only_when_capture_is_on() -> None:
    response = CompletionResponse(content="c", raw={"id": "resp_1"})
    assert RunTrace(capture_raw=True).record_llm(1, 1, response).raw == {"id": "resp_1"}


def test_request_step_snapshots_the_messages() -> None:
    trace = RunTrace()
    messages = [ChatMessage.user("q")]
    step = trace.record_request(1, messages, ["a", "b"], [{"tool": "c", "reason": "disabled"}])
    messages.append(ChatMessage.assistant("later"))
    assert step.start_ms is not None
    assert step._replace(start_ms=None).to_dict() == {
        "kind": "request",
        "round": 1,
        "duration_ms": 0.0,
        "messages_sent": [{"role": "user", "content": "q"}],
        "tool_specs": ["a", "b"],
        "refusals": [{"tool": "c", "reason": "disabled"}],
    }


def test_observers_fire_once_per_step_in_order_and_steps_collect_without_them() -> None:
    seen: list[str] = []
    trace = RunTrace(observers=[lambda s: seen.append(f"a:{s.kind}")])
    trace.subscribe(lambda s: seen.append(f"b:{s.kind}"))
    trace.record_request(1, [], [])
    trace.record_llm(1, 1, CompletionResponse())
    assert seen == ["a:request", "b:request", "a:llm", "b:llm"]
    bare = RunTrace()
    bare.record_request(1, [], [])
    assert [s.kind for s in bare.steps] == ["request"]


def test_canonical_encoder_substitutes_invalid_utf8_and_refuses_nan() -> None:
    assert dumps({"k": "a\udc80"}) == '{"k":"a\ufffd"}'
    try:
        dumps({"k": float("nan")})
    except ValueError:
        pass
    else:
        raise AssertionError("NaN must not encode")


def test_sinks_write_what_strict_json_refuses_as_strings() -> None:
    from toolwire.core.jsonenc import sink_dumps

    value = {"raw": {"score": float("nan"), "when": object, 3: "int key"}, "ok": [1.5, "\udc80"]}
    text = sink_dumps(value)
    assert text.startswith('{"raw":{"score":"nan","when":"<class \'object\'>","3":"int key"}')
    assert text.endswith('"ok":[1.5,"\ufffd"]}')
    assert sink_dumps({"plain": 1}) == '{"plain":1}'


def test_a_step_is_immutable() -> None:
    step = ToolStep(round=1, tool_name="t", tool_result="r")
    with pytest.raises(AttributeError):
        step.tool_result = "changed"  # type: ignore[misc]
    assert step._replace(tool_result="copy").tool_result == "copy"
    assert step.tool_result == "r"


def test_a_recorded_step_began_its_duration_before_it_was_recorded() -> None:
    trace = RunTrace()
    before = time.time() * 1000
    step = trace.record(LlmStep(round=1, duration_ms=250.0))
    after = time.time() * 1000
    assert step is trace.steps[-1]
    assert step.start_ms is not None
    assert before - 250 - 5 <= step.start_ms <= after - 250 + 5
    assert step.to_dict()["start_ms"] == step.start_ms
    given = trace.record(LlmStep(round=2, start_ms=1234.5))
    assert given.start_ms == 1234.5  # a start the caller knew is kept


def test_a_call_started_earlier_keeps_its_start() -> None:
    trace = RunTrace()
    started = time.perf_counter() - 2.0  # it ran for two seconds, two seconds ago
    step = trace.record_tool(1, 10.0, ToolInvocation("t", {}, "ok", False), started=started)
    now = time.time() * 1000
    assert step.start_ms is not None and now - 2100 < step.start_ms < now - 1900
