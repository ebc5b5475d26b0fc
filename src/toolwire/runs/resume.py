"""What resuming a waiting run needs before anything changes: its sealed state opened, the
decision checked against it, and the charter sealed with it (whose tool context
:func:`toolwire.policy.charter.context` makes again in this process).

Every check here reads only: a decision that fails one raises ``DecisionError`` (or
``StateError`` for a state that cannot be opened) and leaves the run as it was. Claiming the
run and carrying it on is the runtime's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolwire.core.errors import RunNotWaiting, StaleDecision
from toolwire.core.latest import open_latest, require_last, require_undecided
from toolwire.core.lifecycle import RunStatus
from toolwire.core.reprs import shape, tagged
from toolwire.core.sealing import SUSPENDED_STATE, StateKey, require
from toolwire.loop.run import OperatorDecision
from toolwire.loop.state import Before, RunState
from toolwire.loop.suspension import validate_input
from toolwire.policy.charter import Charter, CharterRefused
from toolwire.runs.questions import board_of
from toolwire.runs.recorder import RunRecorder, Waiting
from toolwire.tools.api import User
from toolwire.tools.registry import ToolRegistry

LIVE_QUESTION = (
    "this run waits on a live question of its MCP server, not on a paused turn: answer the "
    "question (toolwire runs input, or the inspector's panel)"
)
QUEUED_RUN = (
    "this run is executed by queue workers: its decision goes to the queue (toolwire runs "
    "approve, deny or input, or an inspector on the same store)"
)


@dataclass(frozen=True, slots=True)
class Checked:
    """A decision checked against its waiting run: the run, its opened state, the input."""

    waiting: Waiting
    state: RunState
    values: Mapping[str, Any] | None

    def __repr__(self) -> str:
        return tagged("Checked", waiting=self.waiting, state=self.state,
                      values=None if self.values is None else shape(self.values))  # fmt: skip


def waiting_run(recorder: RunRecorder, run_id: str) -> Waiting:
    """The waiting run ``run_id``; ``RunNotWaiting`` if there is none (saying so when the run
    waits on a live question instead, which is answered, not resumed)."""
    waiting = recorder.waiting(run_id)
    if waiting is None:
        board = board_of(recorder)
        if board is not None and board.open_questions(run_id):
            raise RunNotWaiting(LIVE_QUESTION)
        raise RunNotWaiting("no waiting run has this id")
    return waiting


def open_state(key: StateKey | None, waiting: Waiting) -> RunState:
    """The waiting run's sealed state; ``StateError`` (``StateNotLatest`` for an earlier one
    put back, see :mod:`toolwire.core.latest`), or ``RunNotWaiting`` when it does not belong to the
    turn the run waits on."""
    text, binding = open_latest(require(key), waiting.run_id, waiting.sealed, SUSPENDED_STATE,
                                version=waiting.version)  # fmt: skip
    if binding is not None:
        require_last(binding, waiting.next_sequence - 1)
    before = Before(provider=waiting.provider, privacy=waiting.privacy)
    state = RunState.from_json(text, before=before)
    if state.pause is None or state.pause.digest != waiting.digest:
        raise RunNotWaiting("the run's stored state does not match its pending turn")
    if binding is None:  # sealed before versions: no step to check, but its turn is known
        require_undecided(state.pause.digest, waiting.decided)
    return state


def check_decision(
    waiting: Waiting, state: RunState, decision: OperatorDecision, registry: ToolRegistry
) -> Checked:
    """``decision`` checked against the run's pending turn: its digest, its kind, and a
    person's input against the tool's schema."""
    pause = state.pause
    assert pause is not None
    if decision.digest != pause.digest:
        raise StaleDecision("the decision was made on another turn than the one pending")
    wants_input = pause.status is RunStatus.AWAITING_INPUT
    if (decision.action == "input") != wants_input:
        needed = "input" if wants_input else "approve or deny"
        raise RunNotWaiting(f"this run waits for {needed}, not {decision.action}")
    values = None
    if wants_input:
        tool = registry.get(pause.input_tool or "")
        values = validate_input(tool, decision.values or {})
    return Checked(waiting, state, values)


def chartered(state: RunState) -> Charter:
    """The charter sealed with ``state``; ``CharterRefused`` for a state that has none."""
    if state.charter is None:
        raise CharterRefused("the run's sealed state has no charter; it cannot be carried on")
    return state.charter


def operator_of(decision: OperatorDecision) -> User:
    """The person deciding, as the charter's operator check sees them."""
    return User(decision.actor, is_admin=decision.admin)
