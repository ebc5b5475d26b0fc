"""A round's new state, built in field order, is what ``_replace`` would make of it."""

from __future__ import annotations

from decimal import Decimal

from toolwire import ChatMessage, RunOptions
from toolwire.loop.endings import Spent
from toolwire.loop.state import RunState
from toolwire.loop.window import Tally
from toolwire.policy.pricing import Cost
from toolwire.policy.trace import ToolInvocation
from toolwire.providers.base import Usage


def test_after_round_replaces_what_a_round_changes_and_keeps_the_rest() -> None:
    before = RunState(messages=(ChatMessage.user("a"),), rounds=2, options=RunOptions(max_rounds=9),
                      offered=frozenset({"add"}), dropped_turns=4, remote_calls=1)  # fmt: skip
    messages = (*before.messages, ChatMessage.assistant("b"))
    invocations = (ToolInvocation(name="add", arguments={}, result="3", is_error=False),)
    tally = Tally(counted=2, tokens=10, estimate=12)
    spent = Spent(3, Usage(5, 6), Cost(Decimal("1")), tally)
    after = before.after_round(messages, invocations, spent, 2)
    expected = before._replace(messages=messages, invocations=invocations, rounds=3,
                               usage=Usage(5, 6), cost=Cost(Decimal("1")), tally=tally,
                               remote_calls=2)  # fmt: skip
    assert after._asdict() == expected._asdict() and type(after) is RunState
    assert len(after) == len(RunState._fields)
