"""The board of live questions in the store (see :mod:`toolwire.runs.questions`).

A question is put on the board and its run moved from ``running`` to ``awaiting_input`` in
one transaction (a run cancelled meanwhile is not asked); taken off it, with its run moved
back to ``running`` once it has no other question open, in another. A live question's run
has no sealed state: that is what tells it from a paused turn in the same status. An answer
is written once (of racing answers, the first wins) and only while the question is open and
not expired. On SQLite the row is deleted with ``secure_delete`` on, so the message and the
answer's values are overwritten in the database file, not only unlinked.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, and_, delete, exists, insert, or_, select, text, update

from toolwire.core.jsonenc import dumps, loads
from toolwire.core.lifecycle import ASKING, RunStatus
from toolwire.runs.questions import Gone, LiveQuestion, StoredAnswer
from toolwire.store import liveness, schema
from toolwire.store.engine import errors
from toolwire.store.rows import is_run_id, now

_runs, _questions = schema.runs, schema.questions
# A run whose process waits on a live question: asking, with no sealed state (a paused turn
# in the same status has one).
LIVE_QUESTION = and_(_runs.c.status == ASKING.value, _runs.c.suspended_state.is_(None))
_MAY_ASK = or_(_runs.c.status == RunStatus.RUNNING.value, LIVE_QUESTION)
_OPEN = exists().where(_questions.c.run_id == _runs.c.id)


def open_question(engine: Engine, question: LiveQuestion) -> bool:
    """Put ``question`` on the board and its run in ``awaiting_input``; False if the run was
    not running."""
    asking = update(_runs).where(_runs.c.id == question.run_id, _MAY_ASK)
    row = {"id": question.id, "run_id": question.run_id, "server": question.server,
           "tool": question.tool, "message": question.message,
           "fields": dumps([dict(f) for f in question.fields]), "acting": question.acting,
           "asked_at": _instant(question.asked_at),
           "expires_at": _instant(question.expires_at)}  # fmt: skip
    with errors(f"ask for run {question.run_id}"), engine.begin() as connection:
        if connection.execute(asking.values(status=ASKING.value)).rowcount != 1:
            return False
        connection.execute(insert(_questions).values(row))
    return True


def question_answer(engine: Engine, run_id: str, question_id: str) -> StoredAnswer | Gone | None:
    """The question's answer, None while it has none, ``"gone"`` once it is off the board."""
    query = select(_questions.c.answer).where(
        _questions.c.id == question_id, _questions.c.run_id == run_id
    )
    with errors(f"read a question of run {run_id}"), engine.connect() as connection:
        found = connection.execute(query).first()
    if found is None:
        return "gone"
    return None if found.answer is None else _answer(found.answer)


def write_answer(engine: Engine, run_id: str, question_id: str, answer: StoredAnswer) -> bool:
    """Write ``answer`` once, while the question is open and not expired."""
    body = dumps({"action": answer.action, "content": answer.content, "by": answer.by})
    statement = (
        update(_questions)
        .where(_questions.c.id == question_id, _questions.c.run_id == run_id,
               _questions.c.answer.is_(None), _questions.c.expires_at > now())
        .values(answer=body)
    )  # fmt: skip
    with errors(f"answer a question of run {run_id}"), engine.begin() as connection:
        return connection.execute(statement).rowcount == 1


def close_question(engine: Engine, run_id: str, question_id: str) -> None:
    """Delete the question's row; its run is ``running`` again once none is left open."""
    gone = delete(_questions).where(_questions.c.id == question_id, _questions.c.run_id == run_id)
    resumed = (
        update(_runs)
        .where(_runs.c.id == run_id, LIVE_QUESTION, ~_OPEN)
        .values(status=RunStatus.RUNNING.value)
    )
    with errors(f"close a question of run {run_id}"), engine.begin() as connection:
        _erasing(connection, gone)
        connection.execute(resumed)


def asker(engine: Engine, run_id: str) -> liveness.Owner | None:
    """The process ``run_id`` waits in on a live question; None when it waits on none."""
    if not is_run_id(run_id):
        return None
    columns = (_runs.c.owner_host, _runs.c.owner_pid, _runs.c.owner_started)
    query = select(*columns).where(_runs.c.id == run_id, LIVE_QUESTION)
    with errors(f"read run {run_id}"), engine.connect() as connection:
        row = connection.execute(query).first()
    if row is None:
        return None
    return liveness.Owner(host=row.owner_host, pid=row.owner_pid or 0, started=row.owner_started)


def drop_questions(connection: Connection, run_id: str) -> None:
    """Delete every question of ``run_id`` (its run was cancelled or interrupted)."""
    _erasing(connection, delete(_questions).where(_questions.c.run_id == run_id))


def open_questions(engine: Engine, run_id: str | None = None) -> list[LiveQuestion]:
    """The unanswered questions of runs that wait on them (of ``run_id``), oldest first."""
    if run_id is not None and not is_run_id(run_id):
        return []
    query = (
        select(_questions)
        .join(_runs, _runs.c.id == _questions.c.run_id)
        .where(LIVE_QUESTION, _questions.c.answer.is_(None))
        .order_by(_questions.c.asked_at, _questions.c.id)
    )
    if run_id is not None:
        query = query.where(_questions.c.run_id == run_id)
    with errors("read the open questions"), engine.connect() as connection:
        return [_question(row) for row in connection.execute(query)]


def _erasing(connection: Connection, statement: Any) -> None:
    """``statement`` (a delete) with SQLite overwriting what it deletes."""
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        connection.execute(text("PRAGMA secure_delete = ON"))
    try:
        connection.execute(statement)
    finally:
        if sqlite:
            connection.execute(text("PRAGMA secure_delete = OFF"))


def _question(row: Any) -> LiveQuestion:
    fields = loads(row.fields)
    return LiveQuestion(id=row.id, run_id=row.run_id, server=row.server, tool=row.tool,
                        message=row.message,
                        fields=tuple(f for f in fields if isinstance(f, dict)),
                        acting=row.acting, asked_at=_iso(row.asked_at),
                        expires_at=_iso(row.expires_at))  # fmt: skip


def _answer(body: str) -> StoredAnswer | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    action, content, by = data.get("action"), data.get("content"), data.get("by")
    if action not in ("accept", "decline", "cancel") or not isinstance(by, str):
        return None
    return StoredAnswer(action=action, content=content if isinstance(content, dict) else None,
                        by=by)  # fmt: skip


def _instant(iso: str) -> datetime:
    found = datetime.fromisoformat(iso)
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _iso(value: datetime) -> str:
    """A stored instant as ISO 8601 in UTC (SQLite gives it back without its zone)."""
    aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat()
