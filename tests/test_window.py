"""The context window: the estimate, pruning whole exchanges, the budget, and the loop."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import (
    ChatMessage,
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    TerminationReason,
    ToolCall,
    ToolLoop,
    ToolRegistry,
    tool,
)
from toolwire.core.errors import ConfigError
from toolwire.core.messages import ProviderState, ToolSpec
from toolwire.loop.state import RunState
from toolwire.loop.window import (
    DEFAULT_ANSWER_RESERVE,
    Fitted,
    Overflow,
    Tally,
    Window,
    calibrated,
    context_budget,
    fit,
    message_tokens,
    spec_tokens,
    window_for,
)
from toolwire.policy.trace import ContextStep, LlmStep, RequestStep, RunTrace, ToolStep
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import Reasoning, Stop, Usage
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.openai import OpenAIProvider

from .fakes import PricedModel, RecordingProvider, only

SYSTEM = ChatMessage.system("S" * 27)  # 9 tokens + 4
FIRST = ChatMessage.user("U" * 27)  # 9 tokens + 4


def exchange(n: int, calls: int = 1, result_bytes: int = 294) -> tuple[ChatMessage, ...]:
    """An assistant turn with ``calls`` calls (id c<n>_<i>, name t, args {}) and their results.

    One call with the default result: the turn is 4 + 10 + ceil(len("c1_0t{}") / 3) = 17 tokens
    and the result 4 + 98, so 119 in all while ``n`` is one digit."""
    ids = [f"c{n}_{i}" for i in range(calls)]
    turn = ChatMessage.assistant("", [ToolCall(i, "t", "{}") for i in ids])
    return (turn, *(ChatMessage.tool_result(i, "R" * result_bytes) for i in ids))


def conversation(count: int) -> tuple[ChatMessage, ...]:
    out: tuple[ChatMessage, ...] = (SYSTEM, FIRST)
    for n in range(1, count + 1):
        out += exchange(n)
    return out


def fitted(result: Fitted | Overflow) -> Fitted:
    assert isinstance(result, Fitted), result
    return result


# -- the estimate ----------------------------------------------------------------------------


def test_the_estimate_counts_bytes_over_three_plus_framing_and_each_calls_overhead() -> None:
    assert message_tokens(ChatMessage.user("x" * 30)) == 4 + 10
    assert message_tokens(ChatMessage.user("x" * 31)) == 4 + 11  # rounded up, never down
    assert message_tokens(ChatMessage.user("é" * 3)) == 4 + 2  # six UTF-8 bytes
    turn = ChatMessage.assistant("", [ToolCall("c1", "look", '{"k":1}')] * 2)
    assert message_tokens(turn) == 4 + 2 * 10 + 9  # 2 x 13 bytes of id, name and arguments
    assert [message_tokens(m) for m in exchange(1)] == [17, 102]


def test_provider_state_counts_when_it_is_larger_than_the_turn_it_repeats() -> None:
    small = ChatMessage.assistant("x" * 300, (), ProviderState("gemini", {"parts": []}))
    big = ChatMessage.assistant("x", (), ProviderState("anthropic", {"sig": "s" * 600}))
    assert message_tokens(small) == 4 + 100
    assert message_tokens(big) == 4 + 204  # '{"sig": "' and '"}' around 600: 611 bytes


def test_a_tool_definition_counts_its_name_description_and_schema() -> None:
    spec = ToolSpec("look", "Look it up.", {"type": "object"})
    assert spec_tokens(spec) == 10 + 11  # 4 + 11 + 18 bytes ('{"type": "object"}')


# -- pruning -----------------------------------------------------------------------------------


def test_the_oldest_whole_exchanges_go_first_and_only_as_many_as_needed() -> None:
    messages = conversation(4)  # 26 + 4 x 119 = 502 tokens
    result = fitted(fit(messages, None, Window(size=400, reserve=100, tools=0)))
    assert result.messages == (SYSTEM, FIRST, *exchange(3), *exchange(4))
    assert (result.dropped_exchanges, result.dropped_messages) == (2, 4)
    assert (result.tokens_before, result.tally) == (502, Tally(6, 264, 264))


def test_a_conversation_that_fits_is_sent_as_it_is() -> None:
    messages = conversation(4)
    result = fitted(fit(messages, None, Window(size=602, reserve=100, tools=0)))
    assert result.messages is messages
    assert (result.dropped_exchanges, result.dropped_messages, result.tally) == (
        0, 0, Tally(10, 502, 502),
    )  # fmt: skip


def test_the_tools_definitions_and_the_answers_reserve_take_room_too() -> None:
    messages = conversation(4)
    assert fitted(fit(messages, None, Window(size=602, reserve=100, tools=0))).dropped_messages == 0
    with_tools = fitted(fit(messages, None, Window(size=602, reserve=100, tools=1)))
    assert (with_tools.dropped_exchanges, with_tools.tokens_before) == (1, 503)
    bigger_reserve = fitted(fit(messages, None, Window(size=602, reserve=101, tools=0)))
    assert bigger_reserve.dropped_exchanges == 1


def test_a_turn_the_runtime_wrote_after_an_exchange_leaves_with_it() -> None:
    told = ChatMessage.user("Your tool call could not be read.")
    messages = (SYSTEM, FIRST, *exchange(1), told, *exchange(2), *exchange(3))
    result = fitted(fit(messages, None, Window(size=300, reserve=0, tools=0)))
    assert result.messages == (SYSTEM, FIRST, *exchange(2), *exchange(3))
    assert (result.dropped_exchanges, result.dropped_messages) == (1, 3)


def test_a_turn_with_several_calls_leaves_with_every_result() -> None:
    messages = (SYSTEM, FIRST, *exchange(1, calls=3), *exchange(2), *exchange(3))
    result = fitted(fit(messages, None, Window(size=300, reserve=0, tools=0)))
    assert result.messages == (SYSTEM, FIRST, *exchange(2), *exchange(3))
    assert (result.dropped_exchanges, result.dropped_messages) == (1, 4)


def test_every_system_message_and_the_first_user_turn_stay() -> None:
    head = (SYSTEM, ChatMessage.system("more"), FIRST, ChatMessage.user("and this"))
    messages = head + exchange(1) + exchange(2)
    result = fitted(fit(messages, None, Window(size=200, reserve=0, tools=0)))
    assert result.messages == head + exchange(2)


def test_the_latest_exchange_stays_and_a_run_that_cannot_fit_overflows() -> None:
    messages = conversation(3)
    assert fit(messages, None, Window(size=144, reserve=0, tools=0)) == Overflow(383, 145)
    assert fitted(fit(messages, None, Window(size=145, reserve=0, tools=0))).messages == (
        SYSTEM, FIRST, *exchange(3),
    )  # fmt: skip
    assert fit((SYSTEM, FIRST), None, Window(size=25, reserve=0, tools=0)) == Overflow(26, 26)


def test_known_tokens_are_not_counted_again_only_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolwire.loop.window as window

    counted: list[ChatMessage] = []

    def counting(message: ChatMessage) -> int:
        counted.append(message)
        return 7

    monkeypatch.setattr(window, "message_tokens", counting)
    messages = conversation(400)
    new = exchange(401)
    tally = Tally(len(messages), 50_000, 40_000)
    result = fitted(fit(messages + new, tally, Window(size=100_000, reserve=0, tools=0)))
    assert counted == list(new)
    assert result.tally == Tally(len(messages) + 2, 50_014, 40_014)


def test_the_providers_count_replaces_the_estimate_and_scales_what_is_dropped() -> None:
    messages = conversation(3)  # estimated 26 + 3 x 119 = 383
    sent = calibrated(Tally(len(messages), 383, 383), Usage(prompt_tokens=766))
    assert sent == Tally(len(messages), 766, 383)
    assert calibrated(sent, Usage(prompt_tokens=0)) == sent  # a provider that counts nothing
    assert calibrated(None, Usage(prompt_tokens=10)) is None
    # twice the estimate: the oldest exchange weighs 238 provider tokens
    result = fitted(fit(messages, sent, Window(size=600, reserve=0, tools=0)))
    assert (result.dropped_exchanges, result.tokens_before, result.tally) == (
        1, 766, Tally(len(messages) - 2, 528, 264),
    )  # fmt: skip


def test_a_tally_longer_than_the_conversation_is_counted_afresh() -> None:
    messages = conversation(1)
    result = fitted(fit(messages, Tally(99, 5, 5), Window(size=1000, reserve=0, tools=3)))
    assert result.tally == Tally(4, 3 + 26 + 119, 3 + 26 + 119)


@st.composite
def conversations(draw: st.DrawFn) -> tuple[ChatMessage, ...]:
    head: tuple[ChatMessage, ...] = (SYSTEM,) * draw(st.integers(0, 2)) + (FIRST,)
    out = head
    for n in range(draw(st.integers(0, 12))):
        ids = [f"c{n}_{i}" for i in range(draw(st.integers(0, 3)))]
        text = "a" * draw(st.integers(0, 400))
        out += (ChatMessage.assistant(text, [ToolCall(i, "t", "{}") for i in ids]),)
        out += tuple(ChatMessage.tool_result(i, "r" * draw(st.integers(0, 900))) for i in ids)
        if draw(st.booleans()):
            out += (ChatMessage.user("told"),)
    return out


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(1, 3000), st.integers(0, 200))
def test_pruning_keeps_whole_exchanges_the_head_and_the_latest(
    messages: tuple[ChatMessage, ...], size: int, tools: int
) -> None:
    window = Window(size=size, reserve=0, tools=tools)
    result = fit(messages, None, window)
    starts = [i for i, m in enumerate(messages) if m.role == "assistant"]
    head = messages[: starts[0]] if starts else messages
    total = tools + sum(message_tokens(m) for m in messages)
    if isinstance(result, Overflow):
        latest = messages[starts[-1] :] if starts else ()
        needed = tools + sum(message_tokens(m) for m in head + latest)
        assert result == Overflow(total, needed) and needed > size
        return
    kept = result.messages
    assert kept[: len(head)] == head
    tail = kept[len(head) :]
    assert tail == messages[len(messages) - len(tail) :]  # a suffix: whole exchanges only
    assert not tail or tail[0].role == "assistant"
    if starts:
        assert len(tail) >= len(messages) - starts[-1]  # the latest exchange stays
    calls = {c.id for m in tail for c in m.tool_calls}
    assert calls == {m.tool_call_id for m in tail if m.role == "tool"}
    assert result.tally.tokens == tools + sum(message_tokens(m) for m in kept) <= size
    assert result.tokens_before == total
    assert result.dropped_messages == len(messages) - len(kept)
    dropped = messages[len(head) : len(messages) - len(tail)]
    assert result.dropped_exchanges == sum(1 for m in dropped if m.role == "assistant")
    if result.dropped_exchanges:  # no more than needed: one exchange fewer would not fit
        back = messages[len(messages) - len(tail) - 1 :: -1]
        previous = next(i for i, m in enumerate(back) if m.role == "assistant")
        more = back[: previous + 1]
        assert result.tally.tokens + sum(message_tokens(m) for m in more) > size


# -- the budget --------------------------------------------------------------------------------


def table_window(model: str, provider_id: str) -> int:
    found = calc_price(PriceUsage(input_tokens=0, output_tokens=0), model, provider_id=provider_id)
    assert isinstance(found.model.context_window, int)
    return found.model.context_window


def test_the_runs_setting_wins_over_the_providers_own_window() -> None:
    provider = OpenAIProvider(model="gpt-4o", api_key="k", context_window=9000)
    assert context_budget(RunOptions(context_window=5000), provider) == 5000
    assert context_budget(RunOptions(), provider) == 9000


@pytest.mark.parametrize(
    ("provider", "model", "table"),
    [
        (OpenAIProvider(model="gpt-4o", api_key="k"), "gpt-4o", "openai"),
        (AnthropicProvider(model="claude-sonnet-4-5", api_key="k"), "claude-sonnet-4-5",
         "anthropic"),
        (GeminiProvider(model="gemini-2.5-flash", api_key="k"), "gemini-2.5-flash", "google"),
        (OpenAIProvider(model="openai/gpt-4o", api_key="k", price_table="openrouter",
                        base_url="https://openrouter.ai/api/v1"), "openai/gpt-4o", "openrouter"),
        (PricedModel(model="gpt-4o-mini"), "gpt-4o-mini", "openai"),
    ],
)  # fmt: skip
def test_without_a_setting_the_price_table_knows_a_vendors_model(
    provider: Any, model: str, table: str
) -> None:
    assert context_budget(RunOptions(), provider) == table_window(model, table) > 1000


@pytest.mark.parametrize(
    "provider",
    [
        ScriptedProvider([]),
        OpenAIProvider(model="gpt-4o", api_key="", base_url="http://127.0.0.1:11434/v1"),
        OpenAIProvider(model="no-such-model-anywhere", api_key="k"),
    ],
)
def test_an_unknown_window_is_none(provider: Any) -> None:
    assert context_budget(RunOptions(), provider) is None
    assert window_for(RunOptions(), provider, ()) is None


def test_the_answers_reserve_is_the_output_cap_or_a_modest_default_or_the_thinking_budget() -> None:
    specs = (ToolSpec("look", "Look it up.", {"type": "object"}),)
    provider = ScriptedProvider([])
    assert window_for(RunOptions(context_window=100_000), provider, specs) == Window(
        100_000, DEFAULT_ANSWER_RESERVE, 21
    )
    assert window_for(RunOptions(context_window=8000), provider, ()) == Window(8000, 2000, 0)
    capped = RunOptions(context_window=8000, max_tokens=300)
    assert window_for(capped, provider, ()) == Window(8000, 300, 0)
    thinking = RunOptions(context_window=80_000, reasoning=Reasoning(budget_tokens=10_000))
    assert window_for(thinking, provider, ()) == Window(80_000, 10_000, 0)


def test_a_window_below_one_token_is_refused() -> None:
    with pytest.raises(ValueError, match="context_window must be at least 1 token"):
        RunOptions(context_window=0)
    with pytest.raises(ConfigError, match="openai: a context window must be at least 1 token"):
        OpenAIProvider(model="gpt-4o", api_key="k", context_window=0)


def test_the_setting_survives_a_sealed_state_and_an_old_state_has_none() -> None:
    options = RunOptions(context_window=12_345)
    assert RunOptions.from_dict(options.to_dict()) == options
    old = {k: v for k, v in options.to_dict().items() if k != "context_window"}
    assert RunOptions.from_dict(old).context_window is None


# -- the loop --------------------------------------------------------------------------------


@tool(data_class="public")
def fetch(n: int) -> str:
    """Fetch item n."""
    return f"item {n} " + "R" * 590


def fetching(last: int, *, prompt_tokens: int = 0) -> ScriptedProvider:
    """A model that fetches 1..``last``, one per turn (it reads its latest result), then answers."""

    def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
        results = [m.content for m in messages if m.role == "tool"]
        done = int(results[-1].split()[1]) if results else 0
        usage = Usage(prompt_tokens=prompt_tokens)
        if done >= last:
            return CompletionResponse(content=f"fetched {done}", usage=usage)
        call = ToolCall(f"call_{done + 1}", "fetch", f'{{"n": {done + 1}}}')
        return CompletionResponse(tool_calls=(call,), usage=usage, stop=Stop.TOOL_CALLS)

    return ScriptedProvider(respond)


def run(
    provider: Any, messages: Sequence[ChatMessage] = (SYSTEM, FIRST), **options: Any
) -> tuple[Any, RecordingProvider, RunTrace]:
    recording = RecordingProvider(provider)
    trace = RunTrace()
    result = ToolLoop(recording, ToolRegistry([fetch])).run_sync(
        messages, options=RunOptions(**options), trace=trace
    )
    return result, recording, trace


def test_a_run_drops_old_exchanges_records_each_drop_and_still_finishes() -> None:
    result, provider, trace = run(fetching(12), max_rounds=20, context_window=1600,
                                  max_tokens=100)  # fmt: skip
    assert (result.reason, result.final_content) == (TerminationReason.COMPLETED, "fetched 12")
    assert [i.arguments for i in result.trace] == [{"n": n} for n in range(1, 13)]
    window = Window(1600, 100, spec_tokens(next(iter(ToolRegistry([fetch]).specs({"fetch"})))))
    drops = trace.of_kind(ContextStep)
    assert drops and all(s.context_window == 1600 and s.reserved_tokens == 100 for s in drops)
    for sent in provider.requests:  # every request fits, and starts with the head
        assert sent.messages[:2] == (SYSTEM, FIRST)
        assert window.tools + sum(message_tokens(m) for m in sent.messages) <= window.room
    for index, step in enumerate(trace.steps):  # each drop just before its round's request
        if isinstance(step, ContextStep):
            request = only(trace.steps[index + 1], RequestStep)
            assert request.round == step.round
            assert step.tokens_after == window.tools + sum(
                message_tokens(m) for m in request.messages_sent
            )
            assert step.tokens_before > window.room >= step.tokens_after
            assert step.dropped_messages == 2 * step.dropped_exchanges


def test_without_a_known_window_nothing_is_dropped() -> None:
    result, provider, trace = run(fetching(12), max_rounds=20)
    assert result.reason is TerminationReason.COMPLETED
    assert not trace.of_kind(ContextStep)
    assert len(provider.requests[-1].messages) == 2 + 2 * 12


def test_a_first_request_that_cannot_fit_ends_the_run_without_a_call() -> None:
    result, provider, trace = run(fetching(3), context_window=40, max_tokens=10)
    assert (result.reason, result.truncated, result.final_content, result.iterations) == (
        TerminationReason.CONTEXT_FULL, True, "", 0,
    )  # fmt: skip
    assert provider.requests == [] and trace.steps == []


def test_a_result_too_big_for_the_window_ends_the_run_before_the_next_call() -> None:
    result, provider, trace = run(fetching(3), context_window=250, max_tokens=10)
    assert (result.reason, result.truncated, result.iterations) == (
        TerminationReason.CONTEXT_FULL, True, 1,
    )  # fmt: skip
    assert len(provider.requests) == 1
    assert [type(s) for s in trace.steps] == [RequestStep, LlmStep, ToolStep]


def test_the_providers_count_decides_when_it_reports_one() -> None:
    # The estimate alone fits all three rounds; a provider counting 1,500 tokens for the
    # first request leaves no room for the second.
    options: dict[str, Any] = {"context_window": 1700, "max_tokens": 100}
    estimated, _, _ = run(fetching(2), **options)
    assert estimated.reason is TerminationReason.COMPLETED
    counted, provider, _ = run(fetching(2, prompt_tokens=1500), **options)
    assert counted.reason is TerminationReason.CONTEXT_FULL and len(provider.requests) == 1


def test_the_synthesis_at_the_round_cap_is_fitted_too() -> None:
    result, provider, trace = run(fetching(50), max_rounds=6, context_window=700,
                                  max_tokens=50)  # fmt: skip
    assert result.reason is TerminationReason.MAX_ITERATIONS
    last = trace.of_kind(RequestStep)[-1]
    assert (last.round, last.tool_choice) == (7, "none")
    assert trace.of_kind(ContextStep)[-1].round == 7
    sent = provider.requests[-1].messages
    assert sent[:2] == (SYSTEM, FIRST) and sent[-1].tool_call_id == "call_6"
    assert len(sent) < len(provider.requests[-2].messages) + 2  # an exchange was dropped


def test_a_run_offered_no_tools_is_fitted_too() -> None:
    # 26 + 2 x 119 + 5 = 269 tokens (no tool definitions: none is registered) for 240 of room
    history = (SYSTEM, FIRST, *exchange(1), *exchange(2), ChatMessage.user("So?"))
    answers = ScriptedProvider(lambda messages: CompletionResponse(content="So."))
    result, provider, trace = run(answers, history, allowed_tools=[], context_window=250,
                                  max_tokens=10)  # fmt: skip
    assert result.reason is TerminationReason.COMPLETED
    assert provider.requests[0].messages == (SYSTEM, FIRST, *exchange(2), ChatMessage.user("So?"))
    step = trace.of_kind(ContextStep)[0]
    assert (step.round, step.dropped_exchanges, step.dropped_messages) == (1, 1, 2)


@tool(data_class="public", requires_approval=True)
def send(n: int) -> str:
    """Send item n (a person approves it first)."""
    return "sent " + "S" * 590


def sending(messages: Sequence[ChatMessage]) -> CompletionResponse:
    if messages[-1].role == "tool" and messages[-1].content.startswith("sent"):
        return CompletionResponse(content="sent it")
    return CompletionResponse(tool_calls=(ToolCall("call_send", "send", '{"n": 1}'),),
                              stop=Stop.TOOL_CALLS)  # fmt: skip


def test_a_resumed_run_counts_its_conversation_afresh_and_is_fitted() -> None:
    provider = RecordingProvider(ScriptedProvider(sending))
    loop = ToolLoop(provider, ToolRegistry([fetch, send]))
    history = (SYSTEM, FIRST, *exchange(1), *exchange(2), *exchange(3))
    # 125 tokens of tool definitions and 383 of history fit 710 (720 less 10 for the answer);
    # 224 more for the approved exchange do not, until the oldest exchange (119) leaves.
    options = RunOptions(context_window=720, max_tokens=10)
    paused = loop.run_sync(history, options=options).suspended
    assert paused is not None and paused.tally is not None  # counted, in memory
    sealed = RunState.from_json(paused.to_json())
    assert sealed.tally is None  # never serialised
    trace = RunTrace()
    result = asyncio.run(loop.resume(sealed, approved=True, trace=trace))
    assert (result.reason, result.final_content) == (TerminationReason.COMPLETED, "sent it")
    step = only(trace.steps[1], ContextStep)  # after the approved call, before round 2's request
    assert (step.round, step.dropped_exchanges, step.dropped_messages) == (2, 1, 2)
    assert provider.requests[-1].messages[:4] == (SYSTEM, FIRST, *exchange(2))


def test_a_scripted_list_plays_each_turn_once_while_exchanges_are_dropped() -> None:
    @tool(data_class="public", blocking=False)
    def look(n: int) -> str:
        return f"page {n} " + "r" * 600

    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "look", "arguments": {"n": n}}]} for n in range(12)
    ]
    turns.append({"content": "the answer"})
    loop = ToolLoop(ScriptedProvider.from_turns(turns), ToolRegistry([look]))
    trace = RunTrace()
    options = RunOptions(max_rounds=20, context_window=1_200, max_tokens=50)
    result = asyncio.run(loop.run([ChatMessage.user("go")], options=options, trace=trace))
    assert trace.of_kind(ContextStep)  # exchanges did leave the conversation
    # Each scripted turn was played once, in order, though the model saw fewer turns.
    pages = [s.tool_arguments for s in trace.of_kind(ToolStep)]
    assert pages == [{"n": n} for n in range(12)]
    assert (result.final_content, result.iterations) == ("the answer", 13)


def test_the_count_of_dropped_turns_survives_a_sealed_state() -> None:
    state = RunState(messages=(ChatMessage.user("q"),), dropped_turns=7)
    assert RunState.from_json(state.to_json()).dropped_turns == 7
