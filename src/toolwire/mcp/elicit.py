"""A server's question to a person during one of its tools' calls (``elicitation/create``).

The server holds the call open while it waits, so the question is answered live: the run's
call waits (at most the server's ``elicitation_timeout``, and the call's own timeout is
extended by as much), the question is open in :data:`ASKS` under the run's id, and a person
answers it through the inspector (``/api/runs/{id}/questions``), or at the terminal of
``toolwire run`` (:mod:`toolwire.cli.questions`): accept with the form's values, decline, or
cancel. An answer is taken only for the run and the question that asked
(:meth:`Asks.answer`), and an accepted one only if it fits the form (:mod:`toolwire.mcp.form`),
its defaults filled in.

A question nobody can answer is declined at once, with the reason in the run's steps: a call
made outside a run, a server whose table says ``elicitation = false``, a run carried out
neither by the inspector nor at a terminal (a queue worker's, ``toolwire run`` with no
terminal), a URL-mode question (toolwire asks forms only), a form that is not flat. A
question left unanswered for the wait is cancelled.

The server's message is untrusted: cut to ``MESSAGE_CHARS``, UTF-8 coerced, shown as text
only, and never given to the model. Each question's outcome is one decision step of the run
(``elicit:accept``, ``elicit:decline``, ``elicit:cancel``), by whom and why, with the number
of fields asked and answered: never the message or the answer's values.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from mcp.client.session import ClientRequestContext
from mcp.types import (
    INVALID_PARAMS,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
)

from toolwire.core.errors import RunNotWaiting
from toolwire.core.reprs import count, ident, size, tagged
from toolwire.mcp.caller import Answerer, Caller, InFlight
from toolwire.mcp.form import Field, Value, checked_answer, form_of, words
from toolwire.workspace.mcp_servers import Launch

log = logging.getLogger("toolwire.mcp")
MESSAGE_CHARS = 2_000  # what a person reads before answering: a paragraph, not a page
MAX_OPEN = 100  # questions open at once in one process: a server asking without end is refused
Action = Literal["accept", "decline", "cancel"]
ACTIONS: tuple[Action, ...] = ("accept", "decline", "cancel")

NOT_A_RUN = "the call was not made by a toolwire run, so no person can be asked"
SWITCHED_OFF = "the workspace does not let this server ask questions (elicitation = false)"
NOBODY = (
    "no person can answer this run's questions: it runs neither in the inspector nor at a terminal"
)
URL_MODE = "toolwire asks a person to fill a form only, never to open a link"
TOO_MANY = "too many questions are open in this process"


def unanswered(seconds: float) -> str:
    return f"nobody answered within {seconds:g} s"


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


async def elicit(
    caller: Caller, params: ElicitRequestParams, *, allowed: bool, wait_s: float
) -> ElicitResult | ErrorData:
    """The answer to a server's question, asked during ``caller``'s call."""
    started = datetime.now(UTC)
    if not isinstance(params, ElicitRequestFormParams):
        reply = Reply(action="decline", reason=URL_MODE)
        return await _told(caller, reply, started, asked=0)
    try:
        fields = form_of(params.requested_schema)
    except ValueError as exc:
        log.warning("MCP server %r asked an unreadable form: %s", caller.server, exc)
        reply = Reply(action="decline", reason=f"the form cannot be shown: {exc}")
        await _told(caller, reply, started, asked=0)
        return ErrorData(code=INVALID_PARAMS, message=f"toolwire cannot show this form: {exc}")
    why = _nobody(caller, allowed)
    if why is not None:
        return await _told(caller, Reply(action="decline", reason=why), started, len(fields))
    ask = Ask(id=uuid.uuid4().hex, run_id=caller.run_id or "", server=caller.server,
              tool=caller.tool, message=words(params.message, MESSAGE_CHARS), fields=fields,
              wait_s=wait_s, asked_at=started.isoformat(), acting=_acting(caller))  # fmt: skip
    caller.extend(wait_s)
    asked = caller.answerer(ask) if caller.answerer is not None else ASKS.ask(ask)
    answer = await asked
    reply = Reply(action="cancel", reason=unanswered(wait_s)) if answer is None else answer
    return await _told(caller, reply, started, len(fields))


def _acting(caller: Caller) -> str | None:
    charter = None if caller.turn is None else caller.turn.charter
    return None if charter is None or charter.user is None else charter.user.name


def _nobody(caller: Caller, allowed: bool) -> str | None:
    """Why nobody can be asked for ``caller``; None when someone can."""
    if not allowed:
        return SWITCHED_OFF
    if caller.answerer is not None:
        return None
    if caller.turn is None:
        return NOT_A_RUN
    return None if caller.attended else NOBODY


async def _told(caller: Caller, reply: Reply, started: datetime, asked: int) -> ElicitResult:
    """``reply`` recorded as the run's step, and as the server reads it."""
    if reply.reason is not None:
        log.info("MCP server %r: its question was %sd: %s", caller.server, reply.action,
                 reply.reason)  # fmt: skip
    await _record(caller, reply, started, asked)
    if reply.action == "accept":
        return ElicitResult(action="accept", content=dict(reply.content or {}))
    return ElicitResult(action=reply.action)


async def _record(caller: Caller, reply: Reply, started: datetime, asked: int) -> None:
    turn = caller.turn
    if turn is None or not turn.trace.keeps:
        return
    answered = 0 if reply.content is None else len(reply.content)
    said = f"{caller.tool}: {answered} of {asked} field(s) answered"
    reason = said if reply.reason is None else f"{said}; {reply.reason}"

    async def record() -> None:
        turn.trace.record_decision(turn.round, f"elicit:{reply.action}", reply.by, reason,
                                   f"elicit:{caller.call_id}")  # fmt: skip

    await caller.on_run_loop(record())


class ElicitationCallback:
    """The session's ``elicitation_callback``: a question is asked for the call it belongs to."""

    def __init__(self, launch: Launch, inflight: InFlight) -> None:
        self.launch, self.inflight = launch, inflight

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        caller = self.inflight.asking()
        if caller is None:
            log.info("MCP server %r asked a question toolwire cannot tie to one call; declined",
                     self.launch.name)  # fmt: skip
            return ElicitResult(action="decline")
        return await elicit(caller, params, allowed=self.launch.elicitation,
                            wait_s=self.launch.elicitation_timeout)  # fmt: skip
