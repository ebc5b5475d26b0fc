"""A run's state as JSON: what goes in comes back out, nothing else is read, artifacts never."""

from __future__ import annotations

import dataclasses
import json

import pytest

from toolwire import (
    Artifact,
    ChatMessage,
    Grant,
    PrivacyLevel,
    RunOptions,
    ToolCall,
    TrustZone,
    User,
)
from toolwire.core.errors import StateUnreadable
from toolwire.core.lifecycle import RunStatus
from toolwire.loop.state import Before, CallPreview, Pause, RunState, turn_digest
from toolwire.policy.charter import Charter, ProviderRef, WorkspaceRef
from toolwire.policy.trace import ToolInvocation
from toolwire.providers.base import Usage

CELL = "artifact-cell-5be1"
CALLS = (ToolCall("c1", "write_row", '{"n":1}'), ToolCall("c2", "read_row", "not json"))
CHARTER = Charter(
    user=User("alice", True),
    workspace=WorkspaceRef(file="/srv/ws.toml", identity="ab" * 16),
    privacy=PrivacyLevel.REDACTED,
    trust_zone=TrustZone.LOCAL,
    provider=ProviderRef(name="openai", model="m", base_url="http://127.0.0.1:9/v1"),
    options=RunOptions(max_rounds=7, trust_zone="local"),
    mcp_servers=("time",),
)


def full_state() -> RunState:
    pause = Pause(
        status=RunStatus.AWAITING_INPUT,
        calls=CALLS,
        previews=(CallPreview(index=0, tool="write_row", lines=("- a", "+ b")),
                  CallPreview(index=1, tool="read_row", lines=("x",), failed=True)),
        digest="d" * 32,
        input_tool="write_row",
        input_schema={"properties": {"n": {"type": "integer"}}, "type": "object"},
    )  # fmt: skip
    return RunState(
        messages=(ChatMessage.system("be brief"), ChatMessage.user("hi ünïcode"),
                  ChatMessage.assistant("", CALLS),
                  ChatMessage.tool_result("c0", "Error: x", is_error=True)),
        rounds=3,
        usage=Usage(13, 7),
        options=RunOptions(max_rounds=7, allowed_tools=["write_row"],
                           grant=Grant.of(["write_row"], ["records"]), trust_zone="local",
                           temperature=0.3, max_tokens=512, capture_raw=True),
        offered=frozenset({"write_row", "read_row"}),
        invocations=(ToolInvocation(name="read_row", arguments={}, result="r", is_error=False,
                                    artifacts=(Artifact.text("t", CELL),)),),
        pause=pause,
        charter=CHARTER,
    )  # fmt: skip


def test_a_state_round_trips_without_its_invocations() -> None:
    state = full_state()
    text = state.to_json()
    assert CELL not in text
    back = RunState.from_json(text)
    assert back.invocations == ()
    assert back == state._replace(invocations=())
    assert back.to_json() == text


def test_the_charter_round_trips_with_the_state() -> None:
    back = RunState.from_json(full_state().to_json())
    assert back.charter == CHARTER
    assert back.user == User("alice", True) and back.workspace == "/srv/ws.toml"


def test_a_state_sealed_before_charters_gets_one_from_its_row() -> None:
    data = json.loads(full_state().to_json())
    del data["charter"]
    data |= {"version": 1, "user": ["bob", False], "workspace": None}
    row = Before(provider=ProviderRef(name="anthropic", model="c"), privacy=PrivacyLevel.FULL)
    back = RunState.from_json(json.dumps(data), before=row)
    assert back.charter is not None
    assert (back.user, back.workspace) == (User("bob", False), None)
    assert (back.charter.privacy, back.charter.provider) == (PrivacyLevel.FULL, row.provider)
    assert back.charter.trust_zone is TrustZone.LOCAL  # the options' zone
    unknown = RunState.from_json(json.dumps(data))
    assert unknown.charter is not None and unknown.charter.privacy is PrivacyLevel.METADATA


def test_a_plain_state_round_trips() -> None:
    state = RunState(messages=(ChatMessage.user("hi"),))
    assert RunState.from_json(state.to_json()) == state


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(version=3),
        lambda d: d["charter"].update(privacy="everything"),
        lambda d: d["charter"].update(user=["alice", "yes"]),
        lambda d: d["charter"].pop("provider"),
        lambda d: d.update(extra=1),
        lambda d: d.pop("messages"),
        lambda d: d.update(rounds="3"),
        lambda d: d["messages"].append({"role": "robot", "content": "x"}),
        lambda d: d["pause"].update(status="completed"),
        lambda d: d["pause"]["previews"][0].update(lines="not a list"),
        lambda d: d.update(usage=[1]),
        lambda d: d["options"].update(max_rounds=0),
        lambda d: d["options"].pop("temperature"),
    ],
)
def test_anything_else_is_unreadable(change: object) -> None:
    data = json.loads(full_state().to_json())
    change(data)  # type: ignore[operator]
    with pytest.raises(StateUnreadable) as caught:
        RunState.from_json(json.dumps(data))
    assert str(caught.value) == "the suspended state does not have the expected shape"


@pytest.mark.parametrize("text", ["", "null", "[]", "{", '"x"', "1e999"])
def test_text_that_is_not_a_state_is_unreadable(text: str) -> None:
    with pytest.raises(StateUnreadable):
        RunState.from_json(text)


def test_a_digest_is_fresh_for_every_pause() -> None:
    first, second = turn_digest("r", 1, CALLS), turn_digest("r", 1, CALLS)
    assert len(first) == 32 and first != second
    assert all(c in "0123456789abcdef" for c in first)


def test_provider_state_cost_and_the_usage_breakdown_survive_a_round_trip() -> None:
    from decimal import Decimal

    from toolwire.core.messages import ProviderState
    from toolwire.policy.pricing import Cost
    from toolwire.providers.base import Usage

    signed = ProviderState("gemini", {"parts": [{"text": "a", "thoughtSignature": "c2ln"}]})
    state = RunState(
        messages=(ChatMessage.user("hi"), ChatMessage.assistant("a", (), signed)),
        usage=Usage(10, 5, cache_read_tokens=4, cache_write_tokens=1, reasoning_tokens=2),
        cost=Cost(Decimal("0.001234"), complete=False),
    )
    back = RunState.from_json(state.to_json())
    assert back.messages[1].provider_state == signed
    assert back.usage == state.usage and back.cost == state.cost


def test_a_previews_basis_and_the_changed_calls_round_trip() -> None:
    state = full_state()
    assert state.pause is not None
    preview = CallPreview(index=0, tool="write_row", lines=("\tx  ",), basis="b" * 32)
    pause = dataclasses.replace(state.pause, previews=(preview,), changed=("c1",))
    back = RunState.from_json(state._replace(pause=pause).to_json())
    assert back.pause is not None
    assert back.pause.previews == (preview,) and back.pause.changed == ("c1",)
    assert back.pause.to_dict()["previews"] == [
        {"index": 0, "tool": "write_row", "lines": ["\tx  "], "failed": False, "checked": True}
    ]  # the basis stays in the sealed state


def test_a_state_sealed_before_previews_had_a_basis_still_reads() -> None:
    data = json.loads(full_state().to_json())
    for preview in data["pause"]["previews"]:
        del preview["basis"]
    del data["pause"]["changed"]
    back = RunState.from_json(json.dumps(data))
    assert back.pause is not None and back.pause.changed == ()
    assert [p.basis for p in back.pause.previews] == [None, None]


def test_the_digest_covers_the_previews_and_their_bases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolwire.loop.state.secrets.token_hex", lambda n: "00" * n)
    shown = CallPreview(index=0, tool="write_row", lines=("-  a", "+ a"), basis="b" * 32)
    digest = turn_digest("r", 1, CALLS, (shown,))
    assert digest == turn_digest("r", 1, CALLS, (shown,))  # the same salt, the same turn
    other_lines = dataclasses.replace(shown, lines=("- a", "+ a"))
    other_basis = dataclasses.replace(shown, basis="c" * 32)
    assert digest != turn_digest("r", 1, CALLS, (other_lines,))
    assert digest != turn_digest("r", 1, CALLS, (other_basis,))
