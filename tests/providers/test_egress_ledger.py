"""The egress ledger against what loopback model servers actually received: every request body
a server reads is measured (the UTF-8 bytes of each tool result's text in it, by tool), and the
ledger's counts must be exactly those, per provider, whole and streamed, with retries and a
fallback; a limit stops the run before the request that would pass it is sent."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import RunOptions, ToolLoop, ToolRegistry, tool
from toolwire.core.bounding import bound_content
from toolwire.core.errors import ServerError
from toolwire.core.lifecycle import TerminationReason
from toolwire.core.messages import ChatMessage
from toolwire.core.result import Artifact, ToolResult
from toolwire.policy.egress import text_bytes
from toolwire.policy.trace import FailedStep, LlmStep, RunTrace
from toolwire.providers.fallback import FallbackProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider

from .servers import KEY, FakeModel, loopback, no_sleep
from .test_fallback import Endpoint, openai_at, refused_url, serving

WIDE = 'naïve ✓ "quoted"\n\ttabbed \\ back 🙂'  # escapes and multi-byte text in the JSON body
ARTIFACT_CANARY = "artifact-canary-91c3"


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @tool(integrity="untrusted", data_class="content")
    def read_note(name: str) -> ToolResult:
        """Read a note."""
        return ToolResult.text(f"{name}: {WIDE}", Artifact.text("raw", ARTIFACT_CANARY * 50))

    @tool(integrity="trusted", data_class="public")
    def count_notes() -> str:
        """Count notes."""
        return "3 notes"

    reg.register(read_note)
    reg.register(count_notes)
    return reg


TURNS: list[Any] = [
    [("read_note", {"name": "a"}), ("count_notes", {})],
    [("read_note", {"name": "bb"})],
    [("no_such_tool", {})],
    "done",
]


def received(bodies: Iterable[dict[str, Any]]) -> list[dict[str, int]]:
    """Per request body: the UTF-8 bytes of the tool results' text in it, by tool name (the
    names the body's own assistant turns give their calls)."""
    out = []
    for body in bodies:
        names: dict[str, str] = {}
        sizes: Counter[str] = Counter()
        for message in body["messages"]:
            for call in message.get("tool_calls") or ():
                names[call["id"]] = call["function"]["name"]
            if message["role"] == "tool":
                sizes[names[message["tool_call_id"]]] += len(message["content"].encode())
        out.append(dict(sizes))
    return out


def ledger_of(steps: Sequence[LlmStep | FailedStep], copies: bool = True) -> list[dict[str, int]]:
    out = []
    for step in steps:
        sizes: Counter[str] = Counter()
        if step.egress is not None:
            for line in step.egress.lines:
                shown = "no_such_tool" if line.tool == "(unregistered)" else line.tool
                sizes[shown] += line.wire_bytes * (step.egress.copies if copies else 1)
        out.append(dict(sizes))
    return out


def run(provider: Any, options: RunOptions | None = None) -> tuple[Any, RunTrace]:
    trace = RunTrace()
    loop = ToolLoop(provider, registry())
    messages = [ChatMessage.user("read my notes")]
    result = asyncio.run(loop.run(messages, options=options or RunOptions(max_rounds=6),
                                  trace=trace))  # fmt: skip
    return result, trace


def provider_at(url: str, *, attempts: int = 1, name: str | None = None) -> OpenAIProvider:
    http = HttpSettings(sleep=no_sleep, timeout=10, max_attempts=attempts)
    return OpenAIProvider(model="gpt-test", api_key=KEY, base_url=f"{url}/v1", http=http,
                          name=name)  # fmt: skip


def test_each_request_counts_the_tool_result_bytes_the_server_received() -> None:
    model = FakeModel(turns=TURNS)
    with loopback(model) as url:
        result, trace = run(provider_at(url), RunOptions(max_rounds=6, stream=False))
    assert result.reason is TerminationReason.COMPLETED
    bodies = [c.json() for c in model.captured]
    steps = trace.of_kind(LlmStep)
    assert ledger_of(steps) == [s for s in received(bodies)]
    assert received(bodies)[1] == {"read_note": len(f"a: {WIDE}".encode()), "count_notes": 7}
    assert all(ARTIFACT_CANARY not in c.body.decode() for c in model.captured)


def test_labels_classes_and_new_bytes_follow_each_result() -> None:
    model = FakeModel(turns=TURNS)
    with loopback(model) as url:
        _, trace = run(provider_at(url))
    last = trace.of_kind(LlmStep)[-1].egress
    assert last is not None and last.provider == "openai" and last.copies == 1
    note = len(f"a: {WIDE}".encode()) + len(f"bb: {WIDE}".encode())
    assert {(line.tool, line.data_class, line.label): (line.new_bytes, line.wire_bytes)
            for line in last.lines} == {
        ("read_note", "content", "untrusted"): (0, note),
        ("count_notes", "public", "trusted"): (0, 7),
        ("(unregistered)", "public", "runtime"): (last.lines[-1].wire_bytes,) * 2,
    }  # fmt: skip
    second = trace.of_kind(LlmStep)[1].egress
    assert second is not None
    assert sum(line.new_bytes for line in second.lines) == len(f"a: {WIDE}".encode()) + 7


def test_a_streamed_run_counts_what_its_stream_requests_carried() -> None:
    model = FakeModel(turns=TURNS)
    with loopback(model) as url:
        _, trace = run(provider_at(url), RunOptions(max_rounds=6, stream=True))
    bodies = [c.json() for c in model.captured]
    assert all(body.get("stream") is True for body in bodies)
    assert ledger_of(trace.of_kind(LlmStep)) == received(bodies)


def test_retries_and_a_fallback_are_counted_per_provider_actually_sent_to() -> None:
    # the first server fails round 2 three times (retried: three copies), then the chain moves
    # on to the second, which answers that round; round 3 goes to the first again
    first = Endpoint(plan=[None, 503, 503, 503], model=FakeModel(turns=TURNS))
    second = Endpoint(model=FakeModel(turns=TURNS))
    with serving(first) as one, serving(second) as two:
        chain = FallbackProvider([provider_at(one, attempts=3, name="primary"),
                                  openai_at(two, name="backup")])  # fmt: skip
        result, trace = run(chain)
    assert result.reason is TerminationReason.COMPLETED
    by_provider: Counter[str] = Counter()
    steps: list[LlmStep | FailedStep] = [*trace.of_kind(LlmStep), *trace.of_kind(FailedStep)]
    for step in steps:
        if step.egress is not None:
            by_provider[step.egress.provider] += step.egress.wire_bytes
    got = {
        "primary": sum(sum(s.values()) for s in received(first.bodies)),
        "backup": sum(sum(s.values()) for s in received(second.bodies)),
    }
    assert len(first.bodies) >= 4 and len(second.bodies) == 1 and got["backup"] > 0
    assert dict(by_provider) == got
    failed = trace.of_kind(FailedStep)
    assert [f.egress.copies if f.egress else 0 for f in failed] == [3]


def test_a_refused_connection_sends_nothing_and_counts_nothing() -> None:
    second = Endpoint(model=FakeModel(turns=TURNS))
    with serving(second) as two:
        chain = FallbackProvider([openai_at(refused_url(), name="gone"),
                                  openai_at(two, name="backup")])  # fmt: skip
        _, trace = run(chain)
    failed = trace.of_kind(FailedStep)
    assert failed and all(f.egress is None for f in failed)
    sent = sum(s.egress.wire_bytes for s in trace.of_kind(LlmStep) if s.egress is not None)
    assert sent == sum(sum(s.values()) for s in received(second.bodies)) > 0


def test_a_limit_stops_the_run_before_the_request_that_would_pass_it() -> None:
    model = FakeModel(turns=TURNS)
    one_note = len(f"a: {WIDE}".encode()) + 7  # what round 2's request carries
    with loopback(model) as url:
        result, _ = run(provider_at(url),
                        RunOptions(max_rounds=6, max_egress_bytes=one_note))  # fmt: skip
    assert result.reason is TerminationReason.EGRESS_LIMIT and result.truncated
    sent = [sum(s.values()) for s in received(c.json() for c in model.captured)]
    assert sent == [0, one_note]  # round 3 would carry both notes again: never sent
    assert sum(sent) <= one_note


def test_a_limit_of_zero_sends_no_tool_output_at_all() -> None:
    model = FakeModel(turns=TURNS)
    with loopback(model) as url:
        result, _ = run(provider_at(url), RunOptions(max_rounds=6, max_egress_bytes=0))
    assert result.reason is TerminationReason.EGRESS_LIMIT
    assert [json.loads(c.body)["messages"][-1]["role"] for c in model.captured] == ["user"]


@given(st.text(), st.integers(min_value=0, max_value=60_000))
def test_text_bytes_is_the_utf8_size_of_any_text_and_of_any_bounded_one(
    text: str, pad: int
) -> None:
    assert text_bytes(text) == len(text.encode("utf-8", "surrogatepass"))
    bounded = bound_content("x" * pad + text).text
    assert text_bytes(bounded) == len(bounded.encode("utf-8", "surrogatepass"))


def test_a_retry_that_would_pass_the_limit_is_not_sent() -> None:
    # round 2's request fits once; the server fails it, and its retry would send it again
    endpoint = Endpoint(plan=[None, 503], model=FakeModel(turns=TURNS))
    one_note = len(f"a: {WIDE}".encode()) + 7
    with serving(endpoint) as url:
        result, trace = run(provider_at(url, attempts=3),
                            RunOptions(max_rounds=6, max_egress_bytes=one_note))  # fmt: skip
    assert result.reason is TerminationReason.EGRESS_LIMIT
    assert [sum(s.values()) for s in received(endpoint.bodies)] == [0, one_note]
    assert ledger_of(trace.of_kind(LlmStep)) == [{}]  # the failed request's answer never came
    [failed] = trace.of_kind(FailedStep)  # what its first attempt sent is still counted
    assert failed.error_class == "EgressLimit" and failed.egress is not None
    assert failed.egress.copies == 1 and failed.egress.wire_bytes == one_note


def test_a_request_that_fails_the_run_still_counts_what_reached_the_server() -> None:
    endpoint = Endpoint(plan=[None, 503, 503], model=FakeModel(turns=TURNS))
    trace = RunTrace()
    with serving(endpoint) as url:
        loop = ToolLoop(provider_at(url, attempts=2), registry())
        with pytest.raises(ServerError):
            asyncio.run(loop.run([ChatMessage.user("read my notes")], trace=trace,
                                 options=RunOptions(max_rounds=6)))  # fmt: skip
    [failed] = trace.of_kind(FailedStep)
    assert failed.egress is not None and failed.egress.copies == 2
    assert (failed.provider, failed.error_status) == ("openai", 503)
    assert failed.egress.wire_bytes == sum(sum(s.values()) for s in received(endpoint.bodies))
