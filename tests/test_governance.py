"""Deriving the governance log's rows from stored steps: one row per gate decision (the tools a
run was not offered: one per reason, with their count), nothing from a step that decided
nothing, and never an exception whatever a step holds."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolwire.loop.governance import Gate, GateDecision, decider_of, decisions_of_step

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
KINDS = st.sampled_from(["request", "llm", "tool", "decision", "context_truncated", "other"])


@given(KINDS, st.dictionaries(st.text(max_size=16), JSON, max_size=6))
def test_any_step_gives_decisions_or_none_and_never_raises(kind: str, rest: dict[str, Any]) -> None:
    found = decisions_of_step({**rest, "kind": kind}, decider="ann")
    assert all(isinstance(d, GateDecision) for d in found)


def test_a_step_that_decided_nothing_gives_no_row() -> None:
    assert decisions_of_step({"kind": "llm", "round": 1, "content": "x"}) == []
    assert (
        decisions_of_step({"kind": "tool", "round": 1, "tool_name": "t", "tool_is_error": True})
        == []
    )
    assert decisions_of_step({"kind": "request", "round": 1, "refusals": None}) == []


def test_a_call_denied_by_a_person_names_them_and_other_refusals_name_the_gate() -> None:
    denied = {"kind": "tool", "round": 3, "tool_name": "rm", "tool_refused": "denied"}
    assert decisions_of_step(denied, decider="ann") == [
        GateDecision(gate=Gate.CALL, reason="denied", actor="ann", round=3, tool="rm")
    ]
    gone = {"kind": "tool", "round": 3, "tool_name": "rm", "tool_refused": "no_longer_permitted"}
    assert decisions_of_step(gone, decider="ann")[0].actor == "policy"
    assert decisions_of_step({**gone, "tool_refused": "input_missing"})[0].actor == "runtime"


def test_a_decision_step_names_who_decided() -> None:
    step = {"kind": "decision", "round": 2, "decision": "input", "decided_by": "bo",
            "turn_digest": "ab12"}  # fmt: skip
    assert decider_of(step) == "bo" and decider_of({"kind": "tool", "decided_by": "bo"}) is None
    assert decisions_of_step(step) == [
        GateDecision(gate=Gate.APPROVAL, reason="input_given", actor="bo", round=2,
                     detail="turn ab12")
    ]  # fmt: skip


def test_the_tools_not_offered_are_one_row_per_reason_with_their_count() -> None:
    above = "data class secret_adjacent is above the external_eu ceiling"
    refusals = [
        {"tool": "a", "reason": "no_workspace"},
        {"tool": "x", "reason": "requires_admin"},
        {"tool": "b", "reason": "no_workspace"},
        {"tool": "v", "reason": "trust_zone", "detail": above},
        {"tool": "c", "reason": "no_workspace"},
        {"tool": "w", "reason": "trust_zone", "detail": above},
        {"tool": "s", "reason": "trust_zone", "detail": "another ceiling"},
    ]
    found = decisions_of_step({"kind": "request", "round": 1, "refusals": refusals})
    assert found == [
        GateDecision(gate=Gate.OFFER, reason="no_workspace", actor="policy", round=1,
                     detail="a, b, c", count=3),
        GateDecision(gate=Gate.OFFER, reason="requires_admin", actor="policy", round=1, tool="x"),
        GateDecision(gate=Gate.OFFER, reason="trust_zone", actor="policy", round=1,
                     detail=f"{above}: v, w; another ceiling: s", count=3),
    ]  # fmt: skip
