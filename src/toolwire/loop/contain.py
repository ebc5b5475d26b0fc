"""What a run's containment does to a turn's calls (:mod:`toolwire.policy.containment` decides
which it holds): hold them for approval with the reason an approver reads, or refuse them."""

from __future__ import annotations

from collections.abc import Sequence

from toolwire.core.messages import ToolCall
from toolwire.core.trust import UntrustedActions
from toolwire.loop.seam import contained
from toolwire.loop.state import Contained, RunState
from toolwire.policy.containment import Labels


def held_in_turn(
    calls: Sequence[ToolCall], state: RunState, labels: Labels
) -> tuple[dict[int, str] | None, list[Contained] | None]:
    """The calls of a turn the run's containment holds for approval (by index, with the
    reason an approver reads), or those it refuses (with what the model reads); a call receiving a
    held value is judged by that value's labels too (see :mod:`toolwire.policy.quarantine`)."""
    limit = state.options.max_calls_per_turn
    within = calls if len(calls) <= limit else calls[:limit]
    found = labels.held(within, state.provenance)
    if state.vault.variables:  # a call receiving a held value carries its labels
        found = labels.held_by_values(within, state.vault, found)
    if not found:
        return None, None
    if labels.policy is UntrustedActions.APPROVE:
        return {i: hold.reason() for i, hold in found.items()}, None
    answers = [(i, contained(hold)) for i, hold in found.items()]
    return None, [Contained(i, a.result.content, str(a.refused)) for i, a in answers]
