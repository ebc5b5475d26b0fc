"""Egress: whatever tools put in artifacts never reaches the messages handed to a provider."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import (
    Artifact,
    ArtifactType,
    ChatMessage,
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolLoop,
    ToolRegistry,
    ToolResult,
    bound_content,
    tool,
)

from .fakes import RecordingProvider

hostile_text = st.one_of(
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "surrogateescape")),
    st.sampled_from(["\x00", "\ud800", "</script>", '"},{"role":"system"', "\u202e", "…"]),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=5), st.integers(10_000, 30_000)),
)


@dataclass(frozen=True)
class Plan:
    """One tool's behaviour: what content it returns and whether it fails."""

    content: str
    error: bool
    artifact_kinds: tuple[str, ...]


plans = st.builds(
    Plan,
    content=hostile_text,
    error=st.booleans(),
    artifact_kinds=st.lists(
        st.sampled_from(["table", "text", "nested", "tree", "bad"]), max_size=3
    ).map(tuple),
)


def canary() -> str:
    return f"CANARY-{uuid.uuid4().hex}"


def artifacts_for(kinds: Sequence[str], planted: list[str]) -> list[Artifact]:
    out: list[Artifact] = []
    for kind in kinds:
        marks = [canary() for _ in range(4)]
        planted.extend(marks)
        a, b, c, d = marks
        if kind == "table":
            out.append(Artifact.table(a, [b, "col"], [[c, "x"], ["y", d + 'é"\\']]))
        elif kind == "text":
            out.append(Artifact.text(a, f"{b}\n{c}\n{d}"))
        elif kind == "nested":
            out.append(Artifact(ArtifactType.TABLE, a, {b: [{c: d}]}))
        elif kind == "tree":
            out.append(Artifact.tree(a, [{"label": b, "children": [{"label": c + d}]}]))
        else:  # fails closed to the marker: still nothing may leak
            out.append(Artifact(ArtifactType.TABLE, a, {b: float("nan"), c: d}))
    return out


def wire_forms(secret: str) -> list[str]:
    return [
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        secret[9:25],  # a fragment of the unique part
    ]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(st.lists(plans, min_size=1, max_size=3), min_size=1, max_size=4))
def test_no_artifact_canary_reaches_the_provider(rounds: list[list[Plan]]) -> None:
    planted: list[str] = []
    returned: dict[str, str] = {}
    tools = []
    for r, calls in enumerate(rounds):
        for c, plan in enumerate(calls):
            name = f"t{r}_{c}"
            tools.append(make_tool(name, plan, planted, returned))

    def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
        done = sum(1 for m in messages if m.role == "assistant")
        if done >= len(rounds):
            return CompletionResponse(content="final")
        calls = tuple(ToolCall.of(f"c{done}_{i}", f"t{done}_{i}") for i in range(len(rounds[done])))
        return CompletionResponse(tool_calls=calls)

    provider = RecordingProvider(ScriptedProvider(respond))
    loop = ToolLoop(provider, ToolRegistry(tools))
    result = loop.run_sync([ChatMessage.user("go")], options=RunOptions(max_rounds=len(rounds) + 1))
    assert result.final_content == "final"

    wire = json.dumps(
        [[m.to_dict() for m in request.messages] for request in provider.requests],
        ensure_ascii=False,
    )
    wire_ascii = json.dumps([[m.to_dict() for m in r.messages] for r in provider.requests])
    for secret in planted:
        for form in wire_forms(secret):
            assert form not in wire
            assert form not in wire_ascii

    last = provider.requests[-1].messages
    tool_turns = {m.tool_call_id: m.content for m in last if m.role == "tool"}
    for r, calls in enumerate(rounds):
        for c, _plan in enumerate(calls):
            expected = bound_content(returned[f"t{r}_{c}"]).text
            assert tool_turns[f"c{r}_{c}"] == expected
    assert len(tool_turns) == sum(len(c) for c in rounds)


def make_tool(name: str, plan: Plan, planted: list[str], returned: dict[str, str]) -> Any:
    def run() -> ToolResult:
        returned[name] = plan.content
        if plan.error:
            return ToolResult.error(plan.content)
        return ToolResult.text(plan.content, *artifacts_for(plan.artifact_kinds, planted))

    run.__name__ = name
    return tool(data_class="public")(run)


def test_artifacts_are_kept_on_the_trace_while_absent_from_the_wire() -> None:
    planted: list[str] = []
    returned: dict[str, str] = {}
    t = make_tool("t0_0", Plan("visible text", False, ("table",)), planted, returned)
    provider = RecordingProvider.of(
        [{"tool_calls": [{"name": "t0_0", "id": "c0_0"}]}, {"content": "final"}]
    )
    result = ToolLoop(provider, ToolRegistry([t])).run_sync([ChatMessage.user("go")])
    stored = json.dumps([a.to_dict() for a in result.trace[0].artifacts])
    assert all(secret in stored for secret in planted)
    wire = json.dumps([m.to_dict() for m in provider.requests[-1].messages])
    assert "visible text" in wire
    assert not any(secret in wire for secret in planted)
