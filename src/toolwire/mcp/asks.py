"""The questions MCP servers' calls have open in this process, and who can answer them.

A question (:class:`Ask`) is open in :data:`ASKS` under its run's id while its call waits; a
person's answer (:meth:`Asks.answer`) is taken only for that run and question, and an accepted
one only if it fits the form (:mod:`toolwire.mcp.form`). Whether a person is there to ask is
the run's context's (:func:`attending`): the inspector sets it around the runs it carries out,
``toolwire run`` on a terminal with the terminal as the answerer.

No part of the MCP SDK is imported here: the inspector and the command line read this module
without loading it (see :mod:`toolwire.mcp.elicit` for the session's side).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.core.errors import RunNotWaiting
from toolwire.core.reprs import count, ident, size, tagged
from toolwire.mcp.caller import Answerer
from toolwire.mcp.form import Field, Value, checked_answer, words

MAX_OPEN = 100  # questions open at once in one process: a server asking without end is refused
Action = Literal["accept", "decline", "cancel"]
ACTIONS: tuple[Action, ...] = ("accept", "decline", "cancel")
TOO_MANY = "too many questions are open in this process"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """One question open to a person: the run and call that asked, and the form."""

    id: str
    run_id: str
    server: str
    tool: str
    message: str
    fields: tuple[Field, ...]
    wait_s: float
    asked_at: str  # ISO 8601, UTC
    acting: str | None = None  # the user the run acts for (its charter's)

    def __repr__(self) -> str:
        return tagged("Ask", id=ident(self.id), run_id=ident(self.run_id),
                      server=ident(self.server), message_bytes=size(self.message),
                      fields=count(self.fields))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """As the inspector's panel shows it (the message as text, never as markup)."""
        return {"id": self.id, "run_id": self.run_id, "server": self.server,
                "tool": self.tool, "message": self.message, "wait_s": self.wait_s,
                "asked_at": self.asked_at,
                "fields": [f.to_dict() for f in self.fields]}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What the server is told: accepted (with the checked values), declined or cancelled;
    by whom, and why (for the run's steps)."""

    action: Action
    content: dict[str, Value] | None = None
    by: str = "toolwire"
    reason: str | None = None

    def __repr__(self) -> str:
        return tagged("Reply", action=self.action, by=ident(self.by),
                      fields=None if self.content is None else len(self.content))  # fmt: skip


@dataclass(slots=True)
class _Open:
    ask: Ask
    reply: concurrent.futures.Future[Reply] = field(default_factory=concurrent.futures.Future)


class Asks:
    """The questions open in this process. Safe from any thread: the hub's loop opens them,
    the inspector's answers them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, _Open] = {}

    def pending(self, run_id: str | None = None) -> list[Ask]:
        """The open questions (of ``run_id``), oldest first."""
        with self._lock:
            return [o.ask for o in self._open.values() if run_id in (None, o.ask.run_id)]

    def answer(
        self, run_id: str, ask_id: str, action: str, values: Mapping[str, Any] | None, by: str
    ) -> Reply:
        """Answer question ``ask_id`` of run ``run_id``; ``RunNotWaiting`` when the run has no
        such question open, ``InvalidInput`` naming what does not fit the form."""
        with self._lock:
            found = self._open.get(ask_id)
        if found is None or found.ask.run_id != run_id:
            raise RunNotWaiting("this run has no open question with this id")
        if action not in ACTIONS:
            raise RunNotWaiting(f"a question is answered with accept, decline or cancel, not "
                                f"{words(action, 20)!r}")  # fmt: skip
        content = checked_answer(found.ask.fields, values or {}) if action == "accept" else None
        reply = Reply(action=action, content=content, by=by)
        try:
            found.reply.set_result(reply)
        except concurrent.futures.InvalidStateError:
            raise RunNotWaiting("the question is answered already") from None
        return reply

    async def ask(self, ask: Ask) -> Reply | None:
        """A person's reply to ``ask``; None when nobody answered within its wait."""
        opened = _Open(ask)
        with self._lock:
            if len(self._open) >= MAX_OPEN:
                return Reply(action="decline", reason=TOO_MANY)
            self._open[ask.id] = opened
        try:
            return await asyncio.wait_for(asyncio.wrap_future(opened.reply), ask.wait_s)
        except TimeoutError:
            return None
        finally:
            with self._lock:
                self._open.pop(ask.id, None)


ASKS = Asks()
# Whether a person can answer the questions of the run carried on in this context: set by
# the inspector around the runs it carries out (see :func:`attending`).
_ATTENDED: ContextVar[bool] = ContextVar("toolwire_attended", default=False)
_ANSWERER: ContextVar[Answerer | None] = ContextVar("toolwire_answerer", default=None)


@contextmanager
def attending(answerer: Answerer | None = None) -> Iterator[None]:
    """While inside, the run carried on here has a person to ask: through the open
    questions (the inspector's page), or ``answerer`` (the terminal of ``toolwire run``)."""
    token, asking = _ATTENDED.set(True), _ANSWERER.set(answerer)
    try:
        yield
    finally:
        _ANSWERER.reset(asking)
        _ATTENDED.reset(token)


def answerer() -> Answerer | None:
    """Who answers the questions of the run carried on in this context, when it is not the
    open questions."""
    return _ANSWERER.get()


def attended() -> bool:
    """Whether the run carried on in this context has a person to ask."""
    return _ATTENDED.get()
