"""A queued run's outcome, as the store has it: the ``RunOutcome`` an in-process run returns.

The result's answer is the stored one (empty when the run's privacy level keeps no content),
its totals are the stored totals, and ``trace`` is empty: a queued run's calls and steps are in
the store (``RunStore.get_run``). A waiting run's pause is opened from its sealed state.
"""

from __future__ import annotations

import time
from decimal import Decimal

from toolwire.core.lifecycle import RunStatus, TerminationReason
from toolwire.loop.endings import LoopResult
from toolwire.loop.run import RunOutcome
from toolwire.loop.state import Pause, RunState
from toolwire.policy.pricing import Cost
from toolwire.providers.base import Usage
from toolwire.store.records import RunSummary


def stored_outcome(
    run: RunSummary, pause: Pause | None = None, *, started: float | None = None
) -> RunOutcome:
    """The outcome of the stored ``run``; ``started`` (a ``perf_counter``) times it."""
    status = RunStatus(run.status)
    reason = _reason(run.termination_reason, waiting=status.waiting)
    suspended = None if pause is None else RunState(messages=(), pause=pause)
    result = None
    if reason is not None:
        result = LoopResult(
            final_content=run.final_answer or "",
            trace=(),
            iterations=run.rounds,
            truncated=run.truncated,
            reason=reason,
            usage=Usage(run.prompt_tokens, run.completion_tokens, known=run.tokens_known),
            cost=Cost(Decimal(str(run.cost or 0)), bool(run.cost_complete), run.cost_estimated),
            suspended=suspended,
        )
    elapsed = 0.0 if started is None else (time.perf_counter() - started) * 1000
    return RunOutcome(run_id=run.id, status=status, result=result, steps=(), wall_ms=elapsed,
                      error=run.error)  # fmt: skip


def _reason(stored: str | None, *, waiting: bool) -> TerminationReason | None:
    if waiting:
        return TerminationReason.SUSPENDED
    try:
        return None if stored is None else TerminationReason(stored)
    except ValueError:  # "cancelled", or a reason this version does not know
        return None
