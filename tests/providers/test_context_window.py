"""Long runs within a context window: every request any adapter would send (or did send, over
loopback) keeps each tool call paired with its result, after hundreds of rounds of pruning.

The checks read the wire bodies the way each API does: OpenAI's assistant ``tool_calls`` must be
followed by exactly their ``tool`` messages; Anthropic's ``tool_use`` blocks by exactly their
``tool_result`` blocks in the next user message; Gemini's ``functionCall`` parts by exactly their
``functionResponse`` parts (same names, same ids where the API gave ids) in the next content.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import takewhile
from typing import Any

import pytest

from toolwire import (
    ChatMessage,
    CompletionRequest,
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    TerminationReason,
    ToolCall,
    ToolLoop,
    ToolRegistry,
    tool,
)
from toolwire.core.messages import ProviderState
from toolwire.loop.window import message_tokens, spec_tokens
from toolwire.policy.trace import ContextStep, RequestStep, RunTrace
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import Stop
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.wire import HttpProvider

from ..fakes import RecordingProvider, only
from .servers import ADAPTERS, KEY, FakeModel, loopback, make_provider, no_sleep, reply_for
from .test_anthropic_sdk import validate_request as anthropic_valid
from .test_gemini_sdk import validate_request as gemini_valid
from .test_openai_sdk import checked as openai_valid

SYSTEM = ChatMessage.system("You fetch items, one or two at a time, until told to stop.")
FIRST = ChatMessage.user("Fetch every item up to the last one, then say how many you fetched.")
PAYLOAD_BYTES = 600  # per tool result: a few dozen exchanges fill the windows below
SIGNATURE = "c2lnbmF0dXJl"  # a Gemini thought signature (standard base64)


@tool(data_class="public")
def fetch(n: int) -> str:
    """Fetch item n."""
    return f"item {n} " + "R" * PAYLOAD_BYTES


# -- what each API requires of a body ---------------------------------------------------------


def openai_pairs(body: dict[str, Any]) -> int:
    """The calls in ``body``, each answered by the tool messages right after its turn."""
    messages = body["messages"]
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            continue
        calls = [c["id"] for c in message.get("tool_calls") or ()]
        after = takewhile(lambda m: m["role"] == "tool", messages[index + 1 :])
        assert [m["tool_call_id"] for m in after] == calls, index
    total = sum(len(m.get("tool_calls") or ()) for m in messages)
    assert total == sum(1 for m in messages if m["role"] == "tool")
    return total


def _blocks(message: dict[str, Any], kind: str, key: str) -> list[str]:
    content = message["content"]
    return [b[key] for b in content if b["type"] == kind] if isinstance(content, list) else []


def anthropic_pairs(body: dict[str, Any]) -> int:
    """The ``tool_use`` blocks, each answered in the very next user message, and no other."""
    messages = body["messages"]
    assert messages[0]["role"] == "user"
    for index, message in enumerate(messages):
        uses = _blocks(message, "tool_use", "id")
        later = messages[index + 1] if index + 1 < len(messages) else None
        answers = _blocks(later, "tool_result", "tool_use_id") if later else []
        if message["role"] == "assistant":
            assert answers == uses and (not uses or later is not None), index
        earlier = messages[index - 1] if index else None
        if earlier is None or earlier["role"] != "assistant":
            assert _blocks(message, "tool_result", "tool_use_id") == [], index
    return sum(len(_blocks(m, "tool_use", "id")) for m in messages)


def _parts(content: dict[str, Any], kind: str) -> list[tuple[str, str | None]]:
    found = [p[kind] for p in content["parts"] if kind in p]
    return [(p["name"], p.get("id")) for p in found]


def gemini_pairs(body: dict[str, Any]) -> int:
    """The ``functionCall`` parts, each answered (name and id) in the next content only."""
    contents = body["contents"]
    for index, content in enumerate(contents):
        answers = _parts(content, "functionResponse")
        earlier = contents[index - 1] if index else None
        asked = _parts(earlier, "functionCall") if earlier is not None else []
        assert answers == asked, index
        if _parts(content, "functionCall"):
            assert index + 1 < len(contents), index
    return sum(len(_parts(c, "functionCall")) for c in contents)


PAIRS = {"openai": openai_pairs, "anthropic": anthropic_pairs, "gemini": gemini_pairs}
VALID = {"openai": openai_valid, "anthropic": anthropic_valid, "gemini": gemini_valid}


# -- a long scripted run ------------------------------------------------------------------


LAST_ITEM = 260  # over 200 rounds: one or two calls a turn, and now and then a malformed call


def fetched(messages: Sequence[ChatMessage]) -> int:
    """The latest item fetched, read from the latest result the model still sees."""
    results = [m.content for m in messages if m.role == "tool"]
    return int(results[-1].split()[1]) if results else 0


def model(messages: Sequence[ChatMessage]) -> CompletionResponse:
    """Fetches 1..LAST_ITEM: two at a time after every fourth item, a malformed call after
    every seventeenth, Gemini provider state on every third turn."""
    done = fetched(messages)
    if done >= LAST_ITEM:
        return CompletionResponse(content=f"fetched {done}")
    if done % 17 == 0 and done and messages[-1].role == "tool":
        return CompletionResponse(stop=Stop.MALFORMED_CALL, finish_reason="MALFORMED_FUNCTION_CALL")
    wanted = range(done + 1, min(done + (3 if done % 4 == 0 else 2), LAST_ITEM + 1))
    calls = tuple(ToolCall(f"call_{n}", "fetch", json.dumps({"n": n})) for n in wanted)
    state = None
    if done % 3 == 0:  # a turn Gemini must get back verbatim, with its thought signature
        parts = [{"functionCall": {"id": c.id, "name": c.name, "args": json.loads(c.arguments)},
                  "thoughtSignature": SIGNATURE} for c in calls]  # fmt: skip
        state = ProviderState("gemini", {"parts": parts})
    return CompletionResponse(tool_calls=calls, stop=Stop.TOOL_CALLS, provider_state=state)


@dataclass
class LongRun:
    result: Any
    requests: list[CompletionRequest]
    trace: RunTrace


@pytest.fixture(scope="module")
def long_run() -> LongRun:
    provider = RecordingProvider(ScriptedProvider(model))
    trace = RunTrace()
    options = RunOptions(max_rounds=300, context_window=4000, max_tokens=200)
    result = ToolLoop(provider, ToolRegistry([fetch])).run_sync(
        [SYSTEM, FIRST], options=options, trace=trace
    )
    return LongRun(result, provider.requests, trace)


def test_a_long_run_within_a_small_window_finishes_with_every_call_made(long_run: LongRun) -> None:
    result = long_run.result
    assert (result.reason, result.final_content) == (
        TerminationReason.COMPLETED, f"fetched {LAST_ITEM}",
    )  # fmt: skip
    assert result.iterations >= 200 and len(long_run.requests) == result.iterations
    assert [i.arguments["n"] for i in result.trace] == list(range(1, LAST_ITEM + 1))


def test_each_drop_is_recorded_before_its_request_with_the_numbers_it_sent(
    long_run: LongRun,
) -> None:
    steps = long_run.trace.steps
    drops = [i for i, s in enumerate(steps) if isinstance(s, ContextStep)]
    assert len(drops) > 100  # the window fills early; from then on nearly every round drops
    tools = spec_tokens(next(iter(ToolRegistry([fetch]).specs({"fetch"}))))
    for index in drops:
        step = only(steps[index], ContextStep)
        request = only(steps[index + 1], RequestStep)
        assert step.round == request.round
        sent = tools + sum(message_tokens(m) for m in request.messages_sent)
        assert step.tokens_after == sent <= 4000 - 200 < step.tokens_before
        assert step.dropped_exchanges >= 1 and step.dropped_messages >= 2


def test_every_request_keeps_the_head_and_fits(long_run: LongRun) -> None:
    tools = spec_tokens(next(iter(ToolRegistry([fetch]).specs({"fetch"}))))
    for request in long_run.requests:
        assert request.messages[:2] == (SYSTEM, FIRST)
        assert tools + sum(message_tokens(m) for m in request.messages) <= 4000 - 200


@pytest.mark.parametrize("name", ADAPTERS)
def test_every_request_pairs_each_call_with_its_result_on_each_wire(
    long_run: LongRun, name: str
) -> None:
    adapter = make_provider(name)
    pairs, valid = PAIRS[name], VALID[name]
    calls = 0
    for number, request in enumerate(long_run.requests):
        body = adapter.encode(request)
        calls += pairs(body)
        if number % 10 == 0:  # the vendors' own types, on a sample (they are slow to build)
            valid(body)
    assert calls > 1000  # the pairing was checked on many calls, not vacuously


def test_gemini_gets_its_own_turns_back_with_their_signatures(long_run: LongRun) -> None:
    body = make_provider("gemini").encode(long_run.requests[-1])
    signed = [p for c in body["contents"] for p in c["parts"] if "thoughtSignature" in p]
    assert signed and all(p["thoughtSignature"] == SIGNATURE for p in signed)
    assert all(p["functionCall"]["id"].startswith("call_") for p in signed)


# -- over loopback, with each real adapter --------------------------------------------------


LOOPBACK_CALLS = 40
WINDOW = 2500
ANSWER_CAP = 100


@dataclass(slots=True)
class CountingModel(FakeModel):
    """Calls ``fetch`` on each of its first ``LOOPBACK_CALLS`` requests, then answers; gives
    every call an id of its own and counts a request's tokens as its body's bytes over 4."""

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        from .servers import Captured, streamed

        self.captured.append(Captured(path, headers, body))
        request = json.loads(body)
        seq = len(self.captured)
        turn: Any = f"fetched {LOOPBACK_CALLS}"
        if seq <= LOOPBACK_CALLS:
            turn = [("fetch", {"n": seq})]
        reply = reply_for(path)(request, [turn] * (len(body) + 1))
        _personalise(reply, seq, len(body) // 4)
        events = streamed(path, request, reply)
        if events is not None:
            return events, "text/event-stream"
        return json.dumps(reply).encode(), "application/json"


def _personalise(reply: dict[str, Any], seq: int, prompt_tokens: int) -> None:
    """Unique call ids (the shared fakes number them by turns in view, which pruning reuses)
    and a prompt-token count that grows with the request."""
    if "choices" in reply:
        for n, call in enumerate(reply["choices"][0]["message"].get("tool_calls") or ()):
            call["id"] = f"call_{seq}_{n}"
        reply["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": 7,
                          "total_tokens": prompt_tokens + 7}  # fmt: skip
    elif "usageMetadata" in reply:
        reply["usageMetadata"]["promptTokenCount"] = prompt_tokens
        reply["usageMetadata"]["totalTokenCount"] = prompt_tokens + 7
    else:
        for n, block in enumerate(b for b in reply["content"] if b["type"] == "tool_use"):
            block["id"] = f"toolu_{seq}_{n}"
        reply["usage"]["input_tokens"] = prompt_tokens


def adapter_at(name: str, base: str) -> HttpProvider:
    """The adapter at the loopback server, told its model's window (the provider's own)."""
    http = HttpSettings(sleep=no_sleep, timeout=10)
    if name == "openai":
        return OpenAIProvider(model="gpt-test", api_key=KEY, base_url=f"{base}/v1", http=http,
                              context_window=WINDOW)  # fmt: skip
    if name == "anthropic":
        return AnthropicProvider(model="claude-test", api_key=KEY, base_url=base, http=http,
                                 context_window=WINDOW)  # fmt: skip
    return GeminiProvider(model="gemini-test", api_key=KEY, base_url=f"{base}/v1beta", http=http,
                          context_window=WINDOW)  # fmt: skip


@pytest.mark.parametrize("name", ADAPTERS)
def test_a_run_over_loopback_prunes_and_every_body_it_sent_pairs_its_calls(name: str) -> None:
    served = CountingModel()
    trace = RunTrace()
    options = RunOptions(max_rounds=LOOPBACK_CALLS + 5, max_tokens=ANSWER_CAP)
    with loopback(served) as base:
        loop = ToolLoop(adapter_at(name, base), ToolRegistry([fetch]))
        result = asyncio.run(loop.run([SYSTEM, FIRST], options=options, trace=trace))
    assert (result.reason, result.final_content) == (
        TerminationReason.COMPLETED, f"fetched {LOOPBACK_CALLS}",
    )  # fmt: skip
    assert len(result.trace) == LOOPBACK_CALLS
    drops = trace.of_kind(ContextStep)
    assert len(drops) > 10 and all(d.context_window == WINDOW for d in drops)
    assert len(served.captured) == LOOPBACK_CALLS + 1
    calls = 0
    for captured in served.captured:
        body = captured.json()
        calls += PAIRS[name](body)
        VALID[name](body)
        # the server's own count of every request left room for the answer: never a refusal
        assert len(captured.body) // 4 + ANSWER_CAP <= WINDOW
    assert calls > LOOPBACK_CALLS
