"""The governance log: every gate decision that refused or changed something.

A row says which gate decided (:class:`Gate`), why (a reason code), who (the actor: the tool
policy, the runtime, or the person who decided a paused turn), about which tool when there is
one, how many decisions it stands for, and a detail made of metadata only (counts, token
figures, the policy's own words).

The tools a run was not offered are one row per reason, not one per tool: a run without an
admin is refused every admin-only tool, and fifteen identical rows would bury the decisions
someone reads the log for. Such a row's ``count`` says how many tools it stands for; with more
than one it names no tool, and its detail lists them (with the policy's words, when it gave
any). A call refused again for a reason it was refused for before (the same tool, the same
actor) adds to that row's count in the store (:mod:`toolwire.store.gates`); every other row
stands for one decision.

Rows are derived, never recorded separately, so a decision cannot be taken without its row:
- from a step as the store keeps it (:func:`decisions_of_step`): the store hands over the step
  after its privacy filter, so a row never holds what the store withheld;
- from how a run ended (:func:`decisions_of_outcome`): a budget, the context window or the
  round cap cut it off.

Reasons: the policy's ``Refusal`` codes for a tool not offered (``not_registered``,
``disabled``, ``requires_admin``, ``no_workspace``, ``not_granted``, ``trust_zone``); the seam's
``Refused`` codes for a call refused (``unknown_tool``, ``not_permitted``, ``not_an_object``,
``too_many_calls``, ``denied``, ``no_longer_permitted``, ``input_missing``,
``approval_missing``, ``remote_budget``, ``preview_changed``, ``not_decided``: a held call
nobody decided in time); ``approved``,
``denied`` and ``input_given`` for a person's decision; ``context_truncated``,
``context_full``, ``budget_exhausted`` and ``max_iterations`` for the cut-offs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from toolwire.core.lifecycle import TerminationReason
from toolwire.loop.seam import Refused
from toolwire.tools.policy import Refusal

if TYPE_CHECKING:
    from toolwire.loop.run import RunOutcome

POLICY = "policy"  # the tool policy (toolwire.tools.policy) and the gate it asks per call
RUNTIME = "runtime"  # the runtime's own limits and checks
# The seam's refusals that are the policy's verdict; the others are the runtime's checks.
_POLICY_REFUSALS = frozenset({Refused.NOT_PERMITTED, Refused.NO_LONGER_PERMITTED})
_DECIDED = {"approve": "approved", "deny": "denied", "input": "input_given"}
# How a run can be cut off by a gate, and which gate that is.
_CUT_OFFS = {
    TerminationReason.BUDGET_EXHAUSTED: "budget",
    TerminationReason.EGRESS_LIMIT: "egress",
    TerminationReason.CONTEXT_FULL: "context",
    TerminationReason.MAX_ITERATIONS: "rounds",
}
CONTEXT_TRUNCATED = "context_truncated"


class Gate(StrEnum):
    OFFER = "offer"  # which tools a run is offered
    CALL = "call"  # whether a call may run, at the seam
    APPROVAL = "approval"  # a person's decision on a paused turn
    CONTEXT = "context"  # the model's context window
    BUDGET = "budget"  # the run's token or cost budget
    EGRESS = "egress"  # the run's limit of tool output bytes sent to providers
    ROUNDS = "rounds"  # the round cap


@dataclass(frozen=True, slots=True, kw_only=True)
class GateDecision:
    """One row of the governance log, before the store adds the run, time and step."""

    gate: Gate
    reason: str
    actor: str
    round: int | None = None
    tool: str | None = None
    detail: str | None = None
    count: int = 1  # how many decisions of this gate and reason the row stands for


def decisions_of_step(step: Mapping[str, Any], decider: str | None = None) -> list[GateDecision]:
    """The decisions a stored (already filtered) step records. ``decider`` is who decided the
    paused turn this step belongs to, if a person did: the actor of the calls they denied.
    Never raises, whatever the step holds."""
    kind = step.get("kind")
    round_ = _int(step.get("round"))
    if kind == "request":
        refusals = step.get("refusals")
        if not isinstance(refusals, list | tuple):
            return []
        return not_offered([r for r in refusals if isinstance(r, Mapping)], round_)
    if kind == "tool" and isinstance(step.get("tool_refused"), str):
        return [_refused_call(step, round_, decider)]
    if kind == "decision":
        return [_decided(step, round_)]
    if kind == "context_truncated":
        return [_truncated(step, round_)]
    return []


def repeat_key(decision: GateDecision) -> tuple[str, str | None, str] | None:
    """What ``decision`` has in common with the decisions it adds to the count of: a call
    refused again for the same reason, tool and actor (its reason, tool and actor); None for a
    decision that stands for itself alone."""
    if decision.gate is not Gate.CALL:
        return None
    return (decision.reason, decision.tool, decision.actor)


def decisions_of_outcome(outcome: RunOutcome) -> list[GateDecision]:
    """The cut-off that ended the run, if a gate ended it."""
    result = outcome.result
    gate = None if result is None else _CUT_OFFS.get(result.reason)
    if result is None or gate is None:
        return []
    usage = result.usage
    # A budget that counted an estimate (a provider reported no usage) says it did.
    tokens = (f"{usage.total_tokens} tokens" if usage.known
              else f"tokens unknown (about {usage.total_tokens} estimated)")  # fmt: skip
    detail = f"after {result.iterations} rounds, {tokens}"
    if result.cost.usd:
        detail += f", ${result.cost.shown:.6f}" + ("" if result.cost.complete else " or more")
        detail += " (estimated)" if result.cost.estimated else ""
    return [
        GateDecision(gate=Gate(gate), reason=str(result.reason), actor=RUNTIME,
                     round=result.iterations, detail=detail)
    ]  # fmt: skip


def not_offered(refusals: Sequence[Mapping[str, Any]], round_: int | None) -> list[GateDecision]:
    """One row per reason for the tools a run was not offered (``refusals``: its request
    step's, each ``{tool, reason, detail}``), in the order the reasons first appear."""
    by_reason: dict[str, list[Mapping[str, Any]]] = {}
    for refusal in refusals:
        by_reason.setdefault(str(refusal.get("reason", "")), []).append(refusal)
    return [_not_offered(reason, group, round_) for reason, group in by_reason.items()]


def _not_offered(
    reason: str, group: Sequence[Mapping[str, Any]], round_: int | None
) -> GateDecision:
    if len(group) == 1:
        tool, detail = _text(group[0].get("tool")), _text(group[0].get("detail"))
    else:
        tool, detail = None, _tools_by_detail(group)
    return GateDecision(gate=Gate.OFFER, reason=reason, actor=POLICY, round=round_, tool=tool,
                        detail=detail, count=len(group))  # fmt: skip


def _tools_by_detail(group: Sequence[Mapping[str, Any]]) -> str:
    """``a, b; <detail>: c, d``: the tools of one reason, those with the same words together."""
    tools: dict[str, list[str]] = {}
    for refusal in group:
        tools.setdefault(_text(refusal.get("detail")) or "", []).append(
            _text(refusal.get("tool")) or "?"
        )
    return "; ".join(f"{detail}: {', '.join(names)}" if detail else ", ".join(names)
                     for detail, names in tools.items())  # fmt: skip


def _refused_call(step: Mapping[str, Any], round_: int | None, decider: str | None) -> GateDecision:
    reason = str(step["tool_refused"])
    if reason == Refused.DENIED and decider:
        actor = decider
    else:
        actor = POLICY if reason in _POLICY_REFUSALS else RUNTIME
    return GateDecision(
        gate=Gate.CALL, reason=reason, actor=actor, round=round_, tool=_text(step.get("tool_name"))
    )


def _decided(step: Mapping[str, Any], round_: int | None) -> GateDecision:
    decision = str(step.get("decision", ""))
    digest = _text(step.get("turn_digest"))
    return GateDecision(
        gate=Gate.APPROVAL,
        reason=_DECIDED.get(decision, decision),
        actor=_text(step.get("decided_by")) or "unknown",
        round=round_,
        detail=None if digest is None else f"turn {digest}",
    )


def _truncated(step: Mapping[str, Any], round_: int | None) -> GateDecision:
    detail = (
        f"{step.get('dropped_exchanges')} exchanges ({step.get('dropped_messages')} messages) "
        f"dropped: {step.get('tokens_before')} -> {step.get('tokens_after')} tokens "
        f"of a {step.get('context_window')}-token window"
    )
    return GateDecision(
        gate=Gate.CONTEXT, reason=CONTEXT_TRUNCATED, actor=RUNTIME, round=round_, detail=detail
    )


def decider_of(step: Mapping[str, Any]) -> str | None:
    """Who decided, when ``step`` is a person's decision on a paused turn."""
    return _text(step.get("decided_by")) if step.get("kind") == "decision" else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# Every reason a row can give, so that a filter on reasons can name its choices.
REASONS = tuple(sorted({*map(str, [*Refusal, *Refused, *_CUT_OFFS]), *_DECIDED.values(),
                        CONTEXT_TRUNCATED}))  # fmt: skip
