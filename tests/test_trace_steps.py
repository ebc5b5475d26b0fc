"""The trace builds the steps on a round's path as plain tuples in field order: each must equal
the step its keyword form builds, field by field, so a field added or moved breaks here."""

from __future__ import annotations

from decimal import Decimal

from toolwire import Artifact, ChatMessage, CompletionResponse, RunTrace, ToolCall, Usage
from toolwire.policy.trace import LlmStep, RequestStep, ToolInvocation, ToolStep, _ms
from toolwire.providers.base import Stop


def test_a_request_step_is_its_keyword_form() -> None:
    trace = RunTrace()
    messages = (ChatMessage.user("go"),)
    step = trace.record_request(3, messages, ("add",), [{"tool": "x", "reason": "r"}],
                                tool_choice="none")  # fmt: skip
    expected = RequestStep(round=3, messages_sent=messages, tool_specs=("add",),
                           refusals=({"tool": "x", "reason": "r"},), tool_choice="none",
                           start_ms=step.start_ms)  # fmt: skip
    assert step == expected and type(step) is RequestStep
    assert step._asdict() == expected._asdict()
    assert trace.record_request(1, (), ()).refusals is None


def test_an_answer_step_is_its_keyword_form() -> None:
    trace = RunTrace(capture_raw=True)
    call = ToolCall("c1", "add", "{}")
    usage = Usage(7, 5, cache_read_tokens=2, cache_write_tokens=1, reasoning_tokens=3,
                  known=False)  # fmt: skip
    response = CompletionResponse(content="hi", tool_calls=(call,), usage=usage,
                                  stop=Stop.TOOL_CALLS, finish_reason="tool_calls",
                                  refusal="no", thinking="hmm", raw={"id": 1})  # fmt: skip
    step = trace.record_llm(2, 12.5, response, Decimal("0.25"), registered=frozenset({"add"}))
    expected = LlmStep(round=2, duration_ms=12.5, content="hi", thinking="hmm",
                       stop="tool_calls", finish_reason="tool_calls", refusal="no",
                       prompt_tokens=7, completion_tokens=5, total_tokens=12,
                       tokens_estimated=True, cache_read_tokens=2, cache_write_tokens=1,
                       reasoning_tokens=3, cost=0.25, requested_tool_calls=(call,),
                       raw={"id": 1}, start_ms=step.start_ms,
                       registered_tool_names=frozenset({"add"}))  # fmt: skip
    assert step._asdict() == expected._asdict() and type(step) is LlmStep
    plain = RunTrace().record_llm(1, 0.0, CompletionResponse(content="x"))
    assert plain.tokens_estimated is None and plain.raw is None and plain.thinking is None


def test_a_tool_step_is_its_keyword_form() -> None:
    trace = RunTrace()
    artifact = Artifact.text("note", "body")
    invocation = ToolInvocation(name="add", arguments={"a": 1}, result="3", is_error=True,
                                artifacts=(artifact,), call_id="c9")  # fmt: skip
    step = trace.record_tool(4, 1.5, invocation, 900, "not_permitted", registered=True)
    expected = ToolStep(round=4, tool_name="add", tool_result="3", duration_ms=1.5,
                        tool_call_id="c9", tool_arguments={"a": 1}, tool_result_bytes=900,
                        tool_is_error=True, tool_artifacts=(artifact,),
                        tool_refused="not_permitted", start_ms=step.start_ms,
                        tool_registered=True)  # fmt: skip
    assert step._asdict() == expected._asdict() and type(step) is ToolStep


def test_milliseconds_keep_two_decimals_halves_up() -> None:
    assert _ms(12.3456) == 12.35
    assert _ms(0.004) == 0.0
    assert _ms(1764000000000.126) == 1764000000000.13
    assert _ms(-1.234) == -1.23
