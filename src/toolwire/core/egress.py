"""What one provider request carries out of the building, counted as it is sent.

The loop measures a request's tool output once (:mod:`toolwire.policy.egress`) and makes it the
:class:`Outgoing` of the task that sends it; the HTTP layer calls :func:`sending` before every
attempt it makes (a retry is another copy on the wire) and :func:`undelivered` when an attempt
never reached the server (the connection was refused); a fallback chain names the provider
each attempt goes to (:meth:`Outgoing.to`). A provider with no HTTP of its own (the scripted
one) counts one copy once it has answered.

Invariant: a copy is counted, and checked against the run's limits, before its bytes go out;
one over a limit raises :class:`EgressLimit` and is never sent.

A run has up to two limits (:class:`Ceiling`): its own bytes (``run``), and the bytes every run
of its workspace sent within the workspace's window (``workspace``: what the other runs sent,
``others``, read from the store, plus this run's own). A limit may ask a person before it is
passed (``asks``); ``granted`` holds the bytes approved above it for this run
(:class:`Granted`). The check per copy is one comparison against the lowest of them.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple

from toolwire.core.errors import StoreError
from toolwire.core.reprs import ident, tagged

__all__ = [
    "APPROVE",
    "DEFAULT_EGRESS_WINDOW",
    "ON_LIMIT",
    "RUN",
    "STOP",
    "WORKSPACE",
    "Budget",
    "Ceiling",
    "EgressAsk",
    "EgressLimit",
    "EgressUnread",
    "Granted",
    "Line",
    "Outgoing",
    "Sent",
    "current",
    "on_limit",
    "parse_window",
    "sending",
    "undelivered",
]

RUN = "run"  # a limit of the run's own bytes
WORKSPACE = "workspace"  # a limit of the bytes of every run of its workspace, in its window
# What passing a limit does: the run stops (``egress_limit``), or waits for a person's approval.
STOP, APPROVE = "stop", "approve"
ON_LIMIT = (STOP, APPROVE)


DEFAULT_EGRESS_WINDOW = 24 * 3600.0  # a workspace's window, in seconds: a working day and night
MAX_EGRESS_WINDOW = 366 * 86400.0  # a year: a longer window reads the ledger of every run ever
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_window(text: str) -> float:
    """A window's length in seconds from ``"30m"``, ``"24h"``, ``"7d"`` (or ``"90s"``);
    ``ValueError`` saying what it takes."""
    number, unit = text.strip()[:-1], text.strip()[-1:]
    if unit not in _UNITS or not number.isdigit() or int(number) == 0:
        raise ValueError(f"{text[:40]!r} is not a window: write a whole number and s, m, h or d, "
                         'such as "24h"')  # fmt: skip
    seconds = float(int(number) * _UNITS[unit])
    if seconds > MAX_EGRESS_WINDOW:
        raise ValueError(f"{text[:40]!r} is longer than a window may be (366d)")
    return seconds


def on_limit(value: object, where: str) -> str:
    """``value`` as a choice of what passing a limit does; ``ValueError`` naming ``where``."""
    if value not in ON_LIMIT:
        raise ValueError(f"{where} must be {STOP!r} or {APPROVE!r}")
    return str(value)


class Line(NamedTuple):
    """One request's tool output of one tool, data class and label: the bytes of results new
    to the conversation since the run's previous request (``new_bytes``) and of every result
    it carries (``wire_bytes``), per copy sent."""

    tool: str
    data_class: str
    label: str
    new_bytes: int
    wire_bytes: int


class Sent(NamedTuple):
    """What one provider was sent of one request: ``copies`` times ``lines``."""

    provider: str
    copies: int
    lines: tuple[Line, ...]

    @property
    def wire_bytes(self) -> int:
        return self.copies * sum(line.wire_bytes for line in self.lines)

    def __repr__(self) -> str:
        return tagged("Sent", provider=ident(self.provider), copies=self.copies,
                      lines=len(self.lines), wire_bytes=self.wire_bytes)  # fmt: skip


class Ceiling(NamedTuple):
    """One limit a run's bytes are checked against: its ``scope`` (``run`` or ``workspace``),
    its bytes as configured, the bytes approved above it for this run, and whether passing
    it asks a person (else the run stops)."""

    scope: str
    limit: int
    granted: int = 0
    asks: bool = False


class Granted(NamedTuple):
    """The bytes a person approved above each of a run's limits (kept in its state)."""

    run: int = 0
    workspace: int = 0

    def of(self, scope: str) -> int:
        return self.run if scope == RUN else self.workspace

    def raised(self, crossed: tuple[Crossed, ...]) -> Granted:
        """This grant once a request that would pass the limits ``crossed`` is approved: each
        lets that request go and one more limit's worth after it (see
        :mod:`toolwire.policy.egress`)."""
        raised = {c.scope: c.counted + c.request for c in crossed}
        return Granted(
            run=raised.get(RUN, self.run), workspace=raised.get(WORKSPACE, self.workspace)
        )


class Crossed(NamedTuple):
    """A limit one request would pass: the bytes counted against it so far, the request's."""

    scope: str
    limit: int  # as configured, plus what was approved above it
    counted: int
    request: int


class EgressAsk(NamedTuple):
    """A run waiting for approval to send one request past a limit: where it was going, and
    each limit it would pass (counts only)."""

    provider: str
    crossed: tuple[Crossed, ...]

    @classmethod
    def of(cls, over: EgressLimit) -> EgressAsk:
        return cls(over.provider, over.crossed)

    def to_dict(self) -> dict[str, Any]:
        """As the CLI and the inspector show it: the first limit's facts, and every limit."""
        first = self.crossed[0]
        return {"provider": self.provider, "scope": first.scope, "sent_bytes": first.counted,
                "request_bytes": first.request, "limit_bytes": first.limit,
                "limits": [c._asdict() for c in self.crossed]}  # fmt: skip

    def to_state(self) -> list[Any]:
        return [self.provider, [list(c) for c in self.crossed]]

    def __repr__(self) -> str:
        return tagged("EgressAsk", provider=ident(self.provider), limits=len(self.crossed))


class EgressUnread(StoreError):
    """The other runs' bytes a workspace's limit counts could not be read: the request is not
    sent (an unknown total is not taken as one under the limit)."""


class EgressLimit(Exception):
    """A request would take tool output on the wire past a limit of the run: not sent.
    ``asks``: every limit it would pass asks a person first (the run may wait for one)."""

    def __init__(self, crossed: tuple[Crossed, ...], *, asks: bool = False) -> None:
        first = crossed[0]
        whose = "the run's" if first.scope == RUN else "its workspace's"
        super().__init__(
            f"sending {first.request} more bytes of tool output would pass {whose} egress "
            f"limit of {first.limit} bytes ({first.counted} sent so far)"
        )
        self.crossed, self.asks = crossed, asks
        self.limit, self.spent, self.request = first.limit, first.counted, first.request
        self.scope = first.scope
        self.provider = ""  # where the request was going (the loop sets it)
        self.state: Any = None  # the run's state when it stopped (the loop sets it)


class Budget:
    """The run's bytes sent so far, against its limits (none: no limit); shared by its
    requests. ``limit`` is the lowest bytes the run's own count may reach (None: no limit),
    so that a copy's check is one comparison."""

    __slots__ = ("ceilings", "limit", "others", "spent")

    def __init__(
        self, limit: int | None = None, spent: int = 0, *, ceilings: tuple[Ceiling, ...] = ()
    ) -> None:
        if limit is not None:
            ceilings = (Ceiling(RUN, limit), *ceilings)
        self.ceilings, self.spent, self.others = ceilings, spent, 0
        self.limit = self._lowest()

    @property
    def watches_workspace(self) -> bool:
        return any(c.scope == WORKSPACE for c in self.ceilings)

    def seen(self, others: int) -> None:
        """The other runs of the workspace have sent ``others`` bytes within its window."""
        self.others = others
        self.limit = self._lowest()

    def _allowed(self, ceiling: Ceiling) -> int:
        allowed = ceiling.limit + ceiling.granted
        return allowed - self.others if ceiling.scope == WORKSPACE else allowed

    def _lowest(self) -> int | None:
        return min((self._allowed(c) for c in self.ceilings), default=None)

    def check(self, size: int) -> None:
        # a request with no tool output adds nothing: it goes even past a workspace's budget
        if self.limit is not None and self.spent + size > self.limit and size:
            raise self._over(size)

    def _over(self, size: int) -> EgressLimit:
        crossed = tuple(
            Crossed(
                c.scope,
                c.limit + c.granted,
                self.spent + self.others * (c.scope == WORKSPACE),
                size,
            )
            for c in self.ceilings
            if self.spent + size > self._allowed(c)
        )
        asks = all(c.asks for c in self.ceilings if self.spent + size > self._allowed(c))
        return EgressLimit(crossed, asks=asks)


class Outgoing:
    """One request on its way: its lines, and the copies sent to the provider of the attempt
    under way (``attempts`` holds each earlier provider's)."""

    __slots__ = ("budget", "copies", "lines", "provider", "size")

    def __init__(self, lines: tuple[Line, ...], size: int, budget: Budget, provider: str) -> None:
        self.lines, self.size, self.budget, self.provider = lines, size, budget, provider
        self.copies = 0

    def to(self, provider: str) -> None:
        """The next attempt goes to ``provider``."""
        self.provider, self.copies = provider, 0

    def sending(self) -> None:
        """One copy is about to go out: counted, or refused over the limit."""
        budget = self.budget
        budget.check(self.size)
        budget.spent += self.size
        self.copies += 1

    def undelivered(self) -> None:
        """The copy just counted never reached the server."""
        if self.copies:
            self.copies -= 1
            self.budget.spent -= self.size

    def taken(self, *, answered: bool = False) -> Sent | None:
        """What the attempt under way sent (None: nothing of tool output), and a fresh count
        for the next. ``answered``: the provider answered, so it got one copy at least."""
        if answered and not self.copies:
            self.budget.spent += self.size
            self.copies = 1
        copies, self.copies = self.copies, 0
        if not copies or not self.lines:
            return None
        return tuple.__new__(Sent, (self.provider, copies, self.lines))  # the fields in order


_CURRENT: ContextVar[Outgoing | None] = ContextVar("toolwire_outgoing", default=None)


def current() -> Outgoing | None:
    """The request this task is sending, if the loop measures it."""
    return _CURRENT.get()


def sending() -> None:
    """Before an attempt's bytes go out (see :meth:`Outgoing.sending`)."""
    outgoing = _CURRENT.get()
    if outgoing is not None:
        outgoing.sending()


def undelivered() -> None:
    """After an attempt that never reached its server (see :meth:`Outgoing.undelivered`)."""
    outgoing = _CURRENT.get()
    if outgoing is not None:
        outgoing.undelivered()


def measured(outgoing: Outgoing | None) -> object:
    """Make ``outgoing`` this task's request; the token to :func:`done` with."""
    return _CURRENT.set(outgoing)


def done(token: object) -> None:
    _CURRENT.reset(token)  # type: ignore[arg-type]
