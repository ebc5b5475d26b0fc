"""A round's request measured as it goes out: the segment's egress ledger
(:mod:`toolwire.policy.egress`), given to the trace when someone reads it or the run has a
limit, and the provider call that counts every copy it sends against the run's limits (a
workspace's budget read again before each request, when the run has one)."""

from __future__ import annotations

import time
from collections.abc import Callable

from toolwire.core import egress
from toolwire.core.egress import EgressLimit
from toolwire.core.errors import ProviderError
from toolwire.loop.offer import Offer
from toolwire.loop.state import RunState
from toolwire.policy.egress import Ledger, ceilings_of
from toolwire.policy.trace import FailedStep, RunTrace
from toolwire.providers.base import CompletionRequest, CompletionResponse, Provider
from toolwire.tools.api import ToolContext

_clock = time.perf_counter


def measure(
    trace: RunTrace,
    offer: Offer,
    state: RunState,
    context: ToolContext,
    knows: Callable[[str], bool],
) -> None:
    """Give the segment's trace its egress ledger, when someone reads it or the run has a
    limit (``knows``: whether a tool name is registered). A trace that had one (the segment
    before, in this process) carries its count on, and the calls it refused."""
    options, workspace = state.options, context.workspace
    if trace.egress is not None:
        trace.egress_spent = trace.egress.budget.spent
        trace.egress_refused = trace.egress_refused | trace.egress.refused_calls
    ceilings = ceilings_of(options.max_egress_bytes, options.on_egress_limit, workspace,
                           state.egress_granted,
                           attended=offer.attended and trace.egress_can_wait)  # fmt: skip
    if trace.keeps or ceilings:
        ledger = Ledger(offer.labels, knows, spent=trace.egress_spent, ceilings=ceilings,
                        refused=trace.egress_refused)  # fmt: skip
        others = trace.egress_others
        if others is not None and ledger.budget.watches_workspace:
            window = float(getattr(workspace, "egress_window", 0.0))
            ledger.window = lambda: others(window)
        trace.egress = ledger


async def measured(  # noqa: PLR0917 (the loop's own call, in the order it has them)
    provider: Provider,
    chained: bool,
    ledger: Ledger,
    state: RunState,
    request: CompletionRequest,
    trace: RunTrace,
    round_: int,
) -> tuple[CompletionResponse, float, egress.Sent | None]:
    """``provider``'s answer to ``request``, its time, and what it carried of tool output
    to the provider that answered; ``EgressLimit`` (with ``state``) before any copy of it
    would pass the run's limit: copies an earlier attempt already sent are recorded as that
    attempt's failure. ``chained``: a fallback chain, which records each failed attempt."""
    if ledger.window is not None:  # what the workspace's other runs have sent by now
        ledger.budget.seen(await ledger.window())
    try:
        outgoing = ledger.outgoing(request.messages, provider.name)
    except EgressLimit as over:
        over.state, over.provider = state, provider.name
        raise
    token = egress.measured(outgoing)
    started = _clock()
    try:
        response = await provider.complete(request)
    except EgressLimit as over:  # a retry or another provider of the chain
        over.state, over.provider = state, outgoing.provider
        _sent_before(trace, round_, outgoing, over, started)
        raise
    except ProviderError as failed:  # the run fails: what reached the server still counts
        if not chained:
            _sent_before(trace, round_, outgoing, failed, started)
        raise
    finally:
        egress.done(token)
    elapsed_ms = (_clock() - started) * 1000
    if response.provider is not None:
        outgoing.provider = response.provider
    return response, elapsed_ms, outgoing.taken(answered=True)


def _sent_before(
    trace: RunTrace, round_: int, outgoing: egress.Outgoing, error: Exception, started: float
) -> None:
    """Record what a request that failed had already sent of tool output (as a failed
    attempt, when it had sent any), so that the ledger holds every copy that went out."""
    sent = outgoing.taken()
    if sent is None or not trace.keeps:
        return
    status = error.status if isinstance(error, ProviderError) else None
    text = (
        "the egress limit refused another copy"
        if isinstance(error, EgressLimit)
        else "the provider failed the request"
    )
    trace.record(FailedStep(round=round_, provider=sent.provider,
                            error_class=type(error).__name__, error=text,
                            error_status=status, duration_ms=(_clock() - started) * 1000,
                            egress=sent))  # fmt: skip
