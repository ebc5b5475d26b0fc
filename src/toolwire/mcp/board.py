"""A server's question on the run store's board, so a person in any process can answer it.

When the run that asks is recorded in a store (see :mod:`toolwire.runs.questions`), its
question is put on the store's board as well as asked where the run is carried out (the
inspector's open questions, or the terminal of ``toolwire run``). The waiting process takes
the first answer, whichever way it came: a person here (the answer is then written on the
board too, and if another answer was written first, that one is taken), or one written on
the board by another process (``toolwire runs input``, an inspector on the same store),
read every ``POLL_SECONDS``. The question is taken off the board when the call stops
waiting for it: answered, expired or cancelled.

An answer written on the board (:func:`answer_on_board`) is taken only from an admin or the
user the run acts for, only for the run and question that asked, and, accepted, only if it
fits the form (:mod:`toolwire.mcp.form`); an answer that does not fit is refused naming each
problem and leaves the question open.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, TypeVar

from toolwire.core.errors import InvalidInput, RunNotWaiting, StoreError
from toolwire.mcp.asks import ACTIONS, Ask, Reply
from toolwire.mcp.form import Field, checked_answer, words
from toolwire.policy.charter import CharterRefused
from toolwire.runs.questions import POLL_SECONDS, LiveQuestion, QuestionBoard, StoredAnswer
from toolwire.tools.api import User

log = logging.getLogger("toolwire.mcp")
T = TypeVar("T")

GONE = "the question was taken off the board (its run was cancelled or interrupted)"
NOT_OPEN = "this run has no open question with this id"
ANSWERED = "the question was answered already, or it is no longer open"
NOT_YOURS = "this operator may not answer for this run (it acts for someone else)"
UNFIT = "an answer on the board did not fit the form"


def live_question(ask: Ask) -> LiveQuestion:
    """``ask`` as the board keeps it, waiting until its wait runs out."""
    expires = datetime.fromisoformat(ask.asked_at) + timedelta(seconds=ask.wait_s)
    return LiveQuestion(id=ask.id, run_id=ask.run_id, server=ask.server, tool=ask.tool,
                        message=ask.message, fields=tuple(f.to_dict() for f in ask.fields),
                        acting=ask.acting, asked_at=ask.asked_at,
                        expires_at=expires.isoformat())  # fmt: skip


def fields_of(question: LiveQuestion) -> tuple[Field, ...]:
    """The form of a question on the board; ``InvalidInput`` when the stored form is not one."""
    try:
        return tuple(Field.from_dict(f) for f in question.fields)
    except ValueError as exc:
        raise InvalidInput(f"the question's stored form cannot be read: {exc}") from None


async def first_answer(
    ask: Ask, local: Callable[[], Awaitable[Reply | None]], board: QuestionBoard | None
) -> Reply | None:
    """The first answer to ``ask``: ``local``'s (a person where the run is carried out) or
    one written on ``board``; None when nobody answered within its wait."""
    if board is None or not await _off_loop(board.open_question, False, live_question(ask)):
        return await local()
    try:
        return await _raced(ask, local, board)
    finally:
        await _off_loop(board.close_question, None, ask.run_id, ask.id)


async def _raced(
    ask: Ask, local: Callable[[], Awaitable[Reply | None]], board: QuestionBoard
) -> Reply | None:
    here, there = asyncio.ensure_future(local()), asyncio.ensure_future(_polled(ask, board))
    try:
        done, _ = await asyncio.wait({here, there}, timeout=ask.wait_s,
                                     return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        if there in done:
            return there.result()
        if here not in done or here.result() is None:
            return None
        return await _kept(ask, here.result(), board)
    finally:
        here.cancel()
        there.cancel()


async def _kept(ask: Ask, reply: Reply | None, board: QuestionBoard) -> Reply | None:
    """The answer given here, once written on the board; the board's if one came first."""
    assert reply is not None
    stored = StoredAnswer(action=reply.action, content=reply.content, by=reply.by)
    if await _off_loop(board.write_answer, True, ask.run_id, ask.id, stored):
        return reply
    found = await _off_loop(board.question_answer, None, ask.run_id, ask.id)
    return _reply(ask, found) if isinstance(found, StoredAnswer) else reply


async def _polled(ask: Ask, board: QuestionBoard) -> Reply:
    """The answer written on the board, once there is one."""
    while True:
        await asyncio.sleep(POLL_SECONDS)
        found = await _off_loop(board.question_answer, None, ask.run_id, ask.id)
        if found == "gone":
            return Reply(action="cancel", reason=GONE)
        if isinstance(found, StoredAnswer):
            return _reply(ask, found)


def _reply(ask: Ask, answer: StoredAnswer) -> Reply:
    """A board's answer as the server is told it, its values checked against the form again
    (the store is shared; what reaches the server fits the form, whoever wrote it)."""
    if answer.action != "accept":
        return Reply(action=answer.action, by=answer.by)
    try:
        content = checked_answer(ask.fields, answer.content or {})
    except InvalidInput:
        return Reply(action="decline", by=answer.by, reason=UNFIT)
    return Reply(action="accept", content=content, by=answer.by)


async def _off_loop(work: Callable[..., T], fallback: T, *args: Any) -> T:
    """``work(*args)`` in a thread (it waits on the database); a store failure is logged and
    gives ``fallback``: the question is then asked where the run is carried out only."""
    try:
        return await asyncio.to_thread(work, *args)
    except StoreError:
        log.warning("the board of live questions failed", exc_info=True)
        return fallback


def answer_on_board(
    board: QuestionBoard,
    run_id: str,
    question_id: str,
    *,
    action: str,
    values: Mapping[str, Any] | None,
    operator: User,
) -> Reply:
    """Write ``operator``'s answer to question ``question_id`` of run ``run_id`` on the
    board. ``RunNotWaiting`` when it is not open there (or was answered first),
    ``CharterRefused`` for an operator who may not answer for the run, ``InvalidInput``
    naming what does not fit the form; a refused answer leaves the question open."""
    question = find_question(board, run_id, question_id)
    if question is None:
        raise RunNotWaiting(NOT_OPEN)
    if not may_answer(question, operator):
        raise CharterRefused(NOT_YOURS)
    if action not in ACTIONS:
        raise RunNotWaiting(f"a question is answered with accept, decline or cancel, not "
                            f"{words(action, 20)!r}")  # fmt: skip
    content = None
    if action == "accept":
        content = checked_answer(fields_of(question), values or {})
    reply = Reply(action=action, content=content, by=operator.name)
    stored = StoredAnswer(action=reply.action, content=content, by=operator.name)
    if not board.write_answer(run_id, question_id, stored):
        raise RunNotWaiting(ANSWERED)
    return reply


def find_question(board: QuestionBoard, run_id: str, question_id: str) -> LiveQuestion | None:
    """Question ``question_id`` of run ``run_id``, if it is open on the board."""
    return next((q for q in board.open_questions(run_id) if q.id == question_id), None)


def may_answer(question: LiveQuestion, operator: User) -> bool:
    """An admin answers any run's question; anyone else only a run that acts for them."""
    return operator.is_admin or (question.acting is not None and question.acting == operator.name)
