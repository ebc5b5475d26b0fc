"""A round's request measured as it goes out: the segment's egress ledger
(:mod:`toolwire.policy.egress`), given to the trace when someone reads it or the run has a
limit, and the provider call that counts every copy it sends against that limit."""

from __future__ import annotations

import time
from collections.abc import Callable

from toolwire.core import egress
from toolwire.core.egress import EgressLimit
from toolwire.core.errors import ProviderError
from toolwire.loop.state import RunState
from toolwire.policy.containment import Labels
from toolwire.policy.egress import Ledger, limit_of
from toolwire.policy.options import RunOptions
from toolwire.policy.trace import FailedStep, RunTrace
from toolwire.providers.base import CompletionRequest, CompletionResponse, Provider
from toolwire.tools.api import ToolContext

_clock = time.perf_counter


def measure(
    trace: RunTrace,
    labels: Labels,
    options: RunOptions,
    context: ToolContext,
    knows: Callable[[str], bool],
) -> None:
    """Give the segment's trace its egress ledger, when someone reads it or the run has a
    limit (``knows``: whether a tool name is registered)."""
    limit = limit_of(options.max_egress_bytes, context.workspace)
    if trace.keeps or limit is not None:
        trace.egress = Ledger(labels, knows, limit=limit, spent=trace.egress_spent,
                              refused=trace.egress_refused)  # fmt: skip


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
    try:
        outgoing = ledger.outgoing(request.messages, provider.name)
    except EgressLimit as over:
        over.state = state
        raise
    token = egress.measured(outgoing)
    started = _clock()
    try:
        response = await provider.complete(request)
    except EgressLimit as over:  # a retry or another provider of the chain
        over.state = state
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
