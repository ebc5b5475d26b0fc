"""How a model turn without tool calls ends a run, budgets, and what a run cost."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from toolwire import ChatMessage, RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool
from toolwire.core.lifecycle import TerminationReason
from toolwire.core.messages import ProviderState
from toolwire.loop.seam import malformed_call
from toolwire.policy.trace import LlmStep, RequestStep, RunTrace
from toolwire.providers.base import CompletionResponse, Stop, Usage

from .fakes import PricedModel, RecordingProvider, call

CALLS: list[int] = []


@tool(data_class="public")
def count(n: int) -> str:
    """Count."""
    CALLS.append(n)
    return str(n)


def run(turns: list[dict[str, Any]], **options: Any) -> tuple[Any, RecordingProvider, RunTrace]:
    CALLS.clear()
    provider = RecordingProvider.of(turns)
    trace = RunTrace()
    result = ToolLoop(provider, ToolRegistry([count])).run_sync(
        [ChatMessage.user("go")], options=RunOptions(**options), trace=trace
    )
    return result, provider, trace


@pytest.mark.parametrize(
    ("stop", "reason", "truncated"),
    [
        ("end", TerminationReason.COMPLETED, False),
        ("other", TerminationReason.COMPLETED, False),
        ("max_tokens", TerminationReason.MAX_TOKENS, True),
        ("context_window", TerminationReason.CONTEXT_WINDOW, True),
        ("refusal", TerminationReason.REFUSED, False),
        ("blocked", TerminationReason.BLOCKED, False),
    ],
)
def test_a_final_turn_ends_the_run_by_its_stop_reason(
    stop: str, reason: TerminationReason, truncated: bool
) -> None:
    result, _, trace = run([{"content": "partial answ", "stop": stop, "finish_reason": "vendor"}])
    assert (result.reason, result.truncated, result.final_content) == (
        reason, truncated, "partial answ",
    )  # fmt: skip
    assert (result.stop, result.finish_reason) == (Stop(stop), "vendor")
    llm = trace.of_kind(LlmStep)[0]
    assert (llm.stop, llm.finish_reason) == (stop, "vendor")


def test_a_refusal_carries_the_providers_words_to_the_result_and_the_step() -> None:
    result, _, trace = run(
        [{"content": "", "stop": "refusal", "refusal": "I can't help with that."}]
    )
    assert (result.reason, result.refusal) == (TerminationReason.REFUSED, "I can't help with that.")
    assert trace.of_kind(LlmStep)[0].refusal == "I can't help with that."


def test_a_cut_turn_with_tool_calls_still_runs_them() -> None:
    result, _, _ = run(
        [{"tool_calls": [call("count", {"n": 1})], "stop": "max_tokens"}, {"content": "done"}]
    )
    assert (result.reason, CALLS) == (TerminationReason.COMPLETED, [1])


def test_a_malformed_call_is_told_to_the_model_and_the_run_goes_on() -> None:
    CALLS.clear()
    answers = [
        CompletionResponse(stop=Stop.MALFORMED_CALL, finish_reason="MALFORMED_FUNCTION_CALL"),
        CompletionResponse(tool_calls=(call_of("count", 2),), stop=Stop.TOOL_CALLS),
        CompletionResponse(content="done"),
    ]
    provider = PricedModel(*answers, model="gpt-4o")
    result = ToolLoop(provider, ToolRegistry([count])).run_sync([ChatMessage.user("go")])
    assert (result.reason, result.final_content, result.iterations, CALLS) == (
        TerminationReason.COMPLETED, "done", 3, [2],
    )  # fmt: skip
    second = provider.requests[1].messages
    assert [m.role for m in second] == ["user", "user"]
    assert second[-1].content == malformed_call()


def test_a_paused_turn_goes_back_verbatim_with_its_state_and_counts_as_a_round() -> None:
    seen: list[tuple[ChatMessage, ...]] = []
    state = ProviderState("anthropic", {"content": [{"type": "text", "text": "half"}]})

    def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
        seen.append(tuple(messages))
        if len(seen) == 1:
            return CompletionResponse(content="half", stop=Stop.PAUSED, provider_state=state)
        return CompletionResponse(content="whole", stop=Stop.END)

    result = ToolLoop(ScriptedProvider(respond), ToolRegistry([count])).run_sync(
        [ChatMessage.user("go")]
    )
    assert (result.final_content, result.iterations) == ("whole", 2)
    assert seen[1][-1] == ChatMessage.assistant("half", (), state)


def test_the_synthesis_at_the_cap_keeps_max_iterations_unless_the_output_cap_cut_it_too() -> None:
    looping = [{"tool_calls": [call("count", {"n": 1})]}]
    result, _, _ = run([*looping, {"content": "so far"}], max_rounds=1)
    assert (result.reason, result.truncated) == (TerminationReason.MAX_ITERATIONS, True)
    result, _, _ = run([*looping, {"content": "so f", "stop": "max_tokens"}], max_rounds=1)
    assert (result.reason, result.truncated) == (TerminationReason.MAX_TOKENS, True)


def test_a_token_budget_stops_the_run_after_the_turn_that_crossed_it_before_its_calls() -> None:
    turn = {"tool_calls": [call("count", {"n": 1})], "prompt_tokens": 10, "completion_tokens": 5}
    result, provider, trace = run([turn, turn, turn, {"content": "x"}], max_total_tokens=20)
    assert (result.reason, result.truncated, result.final_content) == (
        TerminationReason.BUDGET_EXHAUSTED, True, "",
    )  # fmt: skip
    assert result.usage.total_tokens == 30 and len(provider.requests) == 2
    assert CALLS == [1]  # the second turn's call never ran
    assert [s.kind for s in trace.steps] == ["request", "llm", "tool", "request", "llm"]


def test_a_turn_within_budget_goes_on_and_an_answer_is_never_withheld() -> None:
    result, _, _ = run(
        [{"content": "answer", "prompt_tokens": 100, "completion_tokens": 100}],
        max_total_tokens=10,
    )
    assert (result.reason, result.final_content) == (TerminationReason.COMPLETED, "answer")


def expected_cost(usage: Usage) -> Decimal:
    counted = PriceUsage(
        input_tokens=usage.prompt_tokens,
        output_tokens=usage.completion_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    return Decimal(calc_price(counted, "gpt-4o", provider_id="openai").total_price)


def test_each_call_is_priced_from_the_table_and_the_run_adds_them_up() -> None:
    first = Usage(12_000, 800, cache_read_tokens=4_000)
    second = Usage(13_000, 200)
    provider = PricedModel(
        CompletionResponse(tool_calls=(call_of("count", 3),), usage=first, stop=Stop.TOOL_CALLS),
        CompletionResponse(content="done", usage=second),
        model="gpt-4o",
    )
    trace = RunTrace()
    result = asyncio.run(
        ToolLoop(provider, ToolRegistry([count])).run([ChatMessage.user("go")], trace=trace)
    )
    assert result.cost.usd == expected_cost(first) + expected_cost(second)
    assert result.cost.complete and result.cost.usd > 0
    assert [s.cost for s in trace.of_kind(LlmStep)] == [
        float(expected_cost(first)),
        float(expected_cost(second)),
    ]


def test_a_dollar_budget_ends_the_run_once_passed() -> None:
    usage = Usage(100_000, 10_000)
    turn = CompletionResponse(tool_calls=(call_of("count", 1),), usage=usage, stop=Stop.TOOL_CALLS)
    provider = PricedModel(turn, turn, turn, model="gpt-4o")
    one = float(expected_cost(usage))
    result = asyncio.run(
        ToolLoop(provider, ToolRegistry([count])).run(
            [ChatMessage.user("go")], options=RunOptions(max_cost=one * 1.5)
        )
    )
    assert result.reason == TerminationReason.BUDGET_EXHAUSTED and len(provider.requests) == 2


def test_a_model_or_server_the_table_cannot_price_has_no_cost_and_says_so() -> None:
    result, _, trace = run([{"content": "hi", "prompt_tokens": 5}])  # a scripted model
    assert (result.cost.usd, result.cost.complete) == (Decimal(0), False)
    assert trace.of_kind(LlmStep)[0].cost is None


def test_a_run_whose_tools_were_all_disabled_sends_the_historys_tools_with_choice_none() -> None:
    from toolwire.loop.state import RunState

    registry = ToolRegistry([count])
    state = RunState(
        messages=(
            ChatMessage.user("go"),
            ChatMessage.assistant("", (call_of("count", 1),)),
            ChatMessage.tool_result("c1", "1"),
        ),
        rounds=1,
    )
    provider = RecordingProvider.of([{}, {"content": "done"}])
    trace = RunTrace()
    from toolwire.tools.api import ToolContext

    result = asyncio.run(
        ToolLoop(provider, registry).advance(state, context=ToolContext(), trace=trace)
    )
    request = provider.requests[0]
    assert ([t.name for t in request.tools], request.tool_choice) == (["count"], "none")
    assert trace.of_kind(RequestStep)[0].tool_choice == "none"
    assert result.final_content == "done"


def call_of(name: str, n: int) -> Any:
    from toolwire import ToolCall

    return ToolCall.of("c1", name, {"n": n})
