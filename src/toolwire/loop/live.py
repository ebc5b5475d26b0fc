"""The turn a tool is called in, as a remote tool's server may need it while the call is open.

An MCP server may ask, during a call of one of its tools, for a person's answer
(elicitation) or for a completion by the run's model (sampling): both belong to the run that
made the call. The loop sets :data:`LIVE` around a turn with remote calls, so the call (and
only code the turn runs) reads the run's id, the round, the trace its steps go to, its
provider and its charter, and collects what samples spent; nothing here is sealed or stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from toolwire.core.reprs import ident, tagged
from toolwire.loop.endings import Spent
from toolwire.loop.state import Progress

if TYPE_CHECKING:
    from toolwire.policy.charter import Charter
    from toolwire.policy.trace import RunTrace
    from toolwire.providers.base import Provider, Usage
    from toolwire.tools.api import ToolContext


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveTurn:
    """The run whose turn is being carried out, as its remote calls see it."""

    run_id: str
    round: int
    trace: RunTrace
    provider: Provider
    charter: Charter | None
    # The segment's tool context: its zone and workspace say how a server's words may be read.
    context: ToolContext | None = None
    # What a server's samples spent on the run's provider during the turn: the loop adds it
    # to the run's totals when the turn ends.
    sampled: list[tuple[Usage, Decimal | None]] = field(default_factory=list)

    def __repr__(self) -> str:
        return tagged("LiveTurn", run_id=ident(self.run_id), round=self.round)


LIVE: ContextVar[LiveTurn | None] = ContextVar("toolwire_live_turn", default=None)


@contextmanager
def live_turn(turn: LiveTurn) -> Iterator[None]:
    """``turn`` in :data:`LIVE` for what runs inside."""
    token = LIVE.set(turn)
    try:
        yield
    finally:
        LIVE.reset(token)


def with_sampled(at: Progress, sampled: list[tuple[Usage, Decimal | None]]) -> Progress:
    """``at`` with what the turn's samples spent added to its usage and cost."""
    if not sampled:
        return at
    usage, cost = at.usage, at.cost
    for used, price in sampled:
        usage, cost = usage + used, cost.add(price, estimated=not used.known)
    return Spent(at.rounds, usage, cost, at.tally)
