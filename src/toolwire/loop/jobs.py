"""A turn's calls as jobs for :mod:`toolwire.loop.turn`, and the tool choice each round sends.

Invariants:
- A call past the turn's call limit, refused by a person's decision or by the run's
  containment (:func:`refused_jobs`), becomes a job answered
  with its fixed refusal from the seam (:func:`toolwire.loop.seam.past_limit`,
  :func:`toolwire.loop.seam.refusal`): it never runs.
- A job runs ``alone`` when its tool is sequential-only (from the segment's :class:`Offer`, or
  the registry for a name not offered, which the seam refuses).
- A forced choice (``required``, or a tool's name) is sent in the first round only; a choice
  naming a tool the run does not offer is refused before any call.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolwire.core.errors import ConfigError
from toolwire.core.messages import ToolCall
from toolwire.loop.offer import Offer
from toolwire.loop.seam import Refused, past_limit, refusal
from toolwire.loop.state import Contained
from toolwire.loop.suspension import Answer, Refuse
from toolwire.loop.turn import Job
from toolwire.providers.base import ToolChoice
from toolwire.tools.api import runs_concurrently
from toolwire.tools.registry import ToolRegistry

__all__ = ["check_choice", "decided_jobs", "refused_jobs", "round_choice", "turn_jobs"]


def turn_jobs(
    calls: Sequence[ToolCall], limit: int, offer: Offer, registry: ToolRegistry
) -> list[Job]:
    """A model's turn as jobs: each call runs with its own arguments; one past the turn's
    call limit is answered with its fixed refusal and never runs."""
    if len(calls) == 1 and limit >= 1:  # alone or not, nothing of its turn overlaps it
        call = calls[0]
        return [Job(call, call.decoded_arguments())]
    return [
        Job(call, call.decoded_arguments(), alone=_alone(call, offer, registry))
        if index < limit
        else Job(call, call.decoded_arguments(), past_limit(limit))
        for index, call in enumerate(calls)
    ]


def refused_jobs(jobs: Sequence[Job], contained: Sequence[Contained] | None) -> Sequence[Job]:
    """``jobs`` with each call the run's containment refused answered with its refusal."""
    if not contained:
        return jobs
    refused = {c.at: c for c in contained}
    return [
        job if (c := refused.get(i)) is None
        else job._replace(refused=refusal(c.text, Refused(c.reason)))
        for i, job in enumerate(jobs)
    ]  # fmt: skip


def decided_jobs(
    answers: Sequence[tuple[ToolCall, Answer]], limit: int, offer: Offer, registry: ToolRegistry
) -> list[Job]:
    """A decided turn's calls as jobs: one past the turn's call limit, or refused, is
    answered with its fixed refusal and never runs; the others run with the arguments
    their answer gives."""
    jobs = []
    for index, (call, answer) in enumerate(answers):
        if index >= limit:
            jobs.append(Job(call, call.decoded_arguments(), past_limit(limit)))
        elif isinstance(answer, Refuse):
            refused = refusal(answer.text, answer.reason)
            jobs.append(Job(call, call.decoded_arguments(), refused))
        else:
            jobs.append(Job(call, answer.arguments, alone=_alone(call, offer, registry)))
    return jobs


def _alone(call: ToolCall, offer: Offer, registry: ToolRegistry) -> bool:
    if call.name in offer.names:
        return call.name in offer.alone
    tool = registry.get(call.name)  # not offered: the seam refuses it
    return tool is not None and not runs_concurrently(tool)


def round_choice(choice: ToolChoice, round_: int) -> ToolChoice:
    """The choice sent in ``round_``: a forced one (required, a tool) in the first round only,
    so the model can answer once it has called; auto and none in every round."""
    if choice in ("auto", "none") or round_ == 1:
        return choice
    return "auto"


def check_choice(choice: ToolChoice, offered: frozenset[str]) -> None:
    """A choice naming a tool the run does not offer cannot be sent: refused before any call."""
    if choice not in ("auto", "none", "required") and choice not in offered:
        raise ConfigError(f"tool_choice names {choice!r}, a tool this run does not offer")
