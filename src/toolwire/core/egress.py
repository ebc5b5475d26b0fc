"""What one provider request carries out of the building, counted as it is sent.

The loop measures a request's tool output once (:mod:`toolwire.policy.egress`) and makes it the
:class:`Outgoing` of the task that sends it; the HTTP layer calls :func:`sending` before every
attempt it makes (a retry is another copy on the wire) and :func:`undelivered` when an attempt
never reached the server (the connection was refused); a fallback chain names the provider
each attempt goes to (:meth:`Outgoing.to`). A provider with no HTTP of its own (the scripted
one) counts one copy once it has answered.

Invariant: a copy is counted, and checked against the run's limit, before its bytes go out;
one over the limit raises :class:`EgressLimit` and is never sent.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, NamedTuple

from toolwire.core.reprs import ident, tagged

__all__ = ["EgressLimit", "Line", "Outgoing", "Sent", "current", "sending", "undelivered"]


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


class EgressLimit(Exception):
    """A request would take the run's tool output on the wire past its limit: not sent."""

    def __init__(self, limit: int, spent: int, request: int) -> None:
        super().__init__(
            f"sending {request} more bytes of tool output would pass the run's egress limit "
            f"of {limit} bytes ({spent} sent so far)"
        )
        self.limit, self.spent, self.request = limit, spent, request
        self.state: Any = None  # the run's state when it stopped (the loop sets it)


class Budget:
    """The run's bytes sent so far, against its limit (None: none); shared by its requests."""

    __slots__ = ("limit", "spent")

    def __init__(self, limit: int | None, spent: int = 0) -> None:
        self.limit, self.spent = limit, spent

    def check(self, size: int) -> None:
        if self.limit is not None and self.spent + size > self.limit:
            raise EgressLimit(self.limit, self.spent, size)


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
