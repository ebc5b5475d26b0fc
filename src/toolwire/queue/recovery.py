"""What a worker does with a run another worker left: where to start, or whom to ask.

A run is taken again from its checkpoint (:mod:`toolwire.queue.checkpoint`):

- no checkpoint: from its request, as a new run (its first round had not completed);
- a round's state: from the next round. A call of the round that was cut short runs again
  when its tool is read-only; a write is never in such a round, since writes wait for approval;
- a decided turn: the decision is applied again. Calls with a recorded result are answered
  from it; calls that never started run. A write that started and has no result (its worker
  stopped while it ran) may or may not have taken effect, so the run does not go on: it waits
  for an operator again, on the same turn, its pause naming those writes (``rerun``).
  Approving runs them again (and the rest of the turn as approved before); denying fails the
  run with ``WRITE_NOT_REPEATED``.
"""

from __future__ import annotations

import dataclasses

from toolwire.core.lifecycle import RunStatus
from toolwire.loop.state import CallPreview, Pause, Recorded, RunState, turn_digest
from toolwire.loop.suspension import bound_preview
from toolwire.queue.checkpoint import Saved

UNKNOWN_OUTCOME = (
    "This call started on a worker that stopped before its result was stored: it may or may "
    "not have taken effect.",
    "Approve to run it again; deny to fail the run.",
)
ALREADY_DONE = "Done before its worker stopped: its stored result is kept; it does not run again."
WRITE_OUTSIDE_TURN = (
    "a write started outside an approved turn before its worker stopped; the run is not "
    "carried on automatically"
)


def waiting_again(run_id: str, saved: Saved) -> RunState:
    """The decided turn of ``saved``, paused again for an operator on its unknown writes."""
    state = saved.state
    pause = state.pause
    assert pause is not None  # a decided turn is a paused state
    rerun = set(saved.unknown)
    recorded = {r.call_id: r for r in (*pause.recorded, *saved.recorded)}
    ids = {index: call.id for index, call in enumerate(pause.calls)}
    previews = tuple(_preview(p, ids.get(p.index, ""), rerun, recorded) for p in pause.previews)
    again = Pause(
        status=RunStatus.AWAITING_APPROVAL,
        calls=pause.calls,
        previews=previews,
        digest=turn_digest(run_id, state.rounds, pause.calls, previews),
        rerun=tuple(call.id for call in pause.calls if call.id in rerun),
        recorded=tuple(recorded.values()),
    )
    return state._replace(pause=again)


def _preview(
    preview: CallPreview, call_id: str, rerun: set[str], recorded: dict[str, Recorded]
) -> CallPreview:
    if call_id in rerun:
        lines = bound_preview([*UNKNOWN_OUTCOME, *preview.lines])
    elif call_id in recorded:
        lines = (ALREADY_DONE,)
    else:
        return preview
    return dataclasses.replace(preview, lines=lines)  # its basis too: it is re-checked
