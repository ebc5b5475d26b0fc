"""A server's question to a person during one of its tools' calls (``elicitation/create``).

The server holds the call open while it waits, so the question is answered live: the run's
call waits (at most the server's ``elicitation_timeout``, and the call's own timeout is
extended by as much), the question is open under the run's id (:mod:`toolwire.mcp.asks`),
and a person answers it through the inspector (``/api/runs/{id}/questions``), or at the
terminal of ``toolwire run`` (:mod:`toolwire.cli.questions`): accept with the form's values,
decline, or cancel. A run recorded in a store keeps the question on the store's board while
it waits (:mod:`toolwire.mcp.board`): its status is then ``awaiting_input``, and a person in
another process (``toolwire runs input``, an inspector on the same store) may answer it
too; the first answer counts. An answer is taken only for the run and the question that
asked, and an accepted one only if it fits the form (:mod:`toolwire.mcp.form`), its
defaults filled in.

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

import logging
import uuid
from datetime import UTC, datetime

from mcp.client.session import ClientRequestContext
from mcp.types import (
    INVALID_PARAMS,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
)

from toolwire.mcp.asks import ASKS, Ask, Reply
from toolwire.mcp.board import first_answer
from toolwire.mcp.caller import Caller, InFlight
from toolwire.mcp.form import form_of, words
from toolwire.workspace.mcp_servers import Launch

log = logging.getLogger("toolwire.mcp")
MESSAGE_CHARS = 2_000  # what a person reads before answering: a paragraph, not a page

NOT_A_RUN = "the call was not made by a toolwire run, so no person can be asked"
SWITCHED_OFF = "the workspace does not let this server ask questions (elicitation = false)"
NOBODY = (
    "no person can answer this run's questions: it runs neither in the inspector nor at a terminal"
)
URL_MODE = "toolwire asks a person to fill a form only, never to open a link"


def unanswered(seconds: float) -> str:
    return f"nobody answered within {seconds:g} s"


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
    answerer = caller.answerer

    async def here() -> Reply | None:  # where the run is carried out
        return await (answerer(ask) if answerer is not None else ASKS.ask(ask))

    answer = await first_answer(ask, here, caller.board)
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
