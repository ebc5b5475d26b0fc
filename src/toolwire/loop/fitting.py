"""A round's conversation made to fit the model's context window (:mod:`toolwire.loop.window`
decides what goes), with the step that records what was dropped."""

from __future__ import annotations

import logging
import time

from toolwire.core.lifecycle import TerminationReason
from toolwire.loop.endings import LoopResult, result_of
from toolwire.loop.state import RunState
from toolwire.loop.window import Overflow, Window, fit
from toolwire.policy.trace import ContextStep, RunTrace

log = logging.getLogger("toolwire.loop")


def fitted_to(
    state: RunState, trace: RunTrace, round_: int, window: Window | None
) -> RunState | LoopResult:
    """``state`` with a conversation that fits ``window``, recording what was dropped; or
    the end of the run when it cannot fit (no budget known: ``state`` as it is)."""
    if window is None:
        return state
    started = time.perf_counter()
    fitted = fit(state.messages, state.tally, window)
    if isinstance(fitted, Overflow):
        log.info("round %d cannot fit a context window of %d tokens: %d needed, %d kept "
                 "for the answer", round_, window.size, fitted.tokens_needed,
                 window.reserve)  # fmt: skip
        return result_of(state, "", True, TerminationReason.CONTEXT_FULL)
    if fitted.dropped_messages:
        trace.record(
            ContextStep(
                round=round_,
                duration_ms=(time.perf_counter() - started) * 1000,
                dropped_exchanges=fitted.dropped_exchanges,
                dropped_messages=fitted.dropped_messages,
                tokens_before=fitted.tokens_before,
                tokens_after=fitted.tally.tokens,
                context_window=window.size,
                reserved_tokens=window.reserve,
            )
        )
    dropped = state.dropped_turns + fitted.dropped_exchanges
    return state._replace(messages=fitted.messages, tally=fitted.tally, dropped_turns=dropped)
