"""Live questions kept in the run store, so a person in another process can answer them.

A question an MCP server asks during one of its tools' calls is live: the server holds the
call open, so the run's process stays in the call and waits (it cannot be suspended and sealed
like a paused turn). While it waits, the question is also on the run store's board
(:class:`QuestionBoard`): the run's status is ``awaiting_input`` (see
:mod:`toolwire.core.lifecycle`), and any process sharing the store lists the question and
writes its answer there; the waiting process polls the board and carries on with the first
answer, whichever way it came. Closing the question (answered, expired, or its call ended)
deletes its row, and the run is ``running`` again once it has no question open.

What the row holds is what the answering person needs: the server's name, the tool, the
server's message (untrusted text, already cut) and the form, and the user the run acts for;
then the answer. It is kept only while the question is open, at every privacy level: the
person must read it to answer, and nothing of it outlives the question (the run's steps keep
the outcome as counts only).

The board's values are plain (the form's fields as the dictionaries the inspector shows):
this layer knows nothing of MCP, whose side is :mod:`toolwire.mcp.board`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from toolwire.core.reprs import count, ident, size, tagged

# How often a process waiting on a live question reads its row: a person answers in seconds,
# and one read by primary key per poll is nothing to a database.
POLL_SECONDS = 0.2
Action = Literal["accept", "decline", "cancel"]
Gone = Literal["gone"]  # the question is off the board: its run was cancelled or interrupted


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveQuestion:
    """One open question on the board: who asks, during which call, and the form."""

    id: str
    run_id: str
    server: str
    tool: str
    message: str
    fields: tuple[Mapping[str, Any], ...]  # each as the form's ``Field.to_dict`` gives it
    acting: str | None  # the user the run acts for (its charter's)
    asked_at: str  # ISO 8601, UTC
    expires_at: str  # ISO 8601, UTC: when the waiting process stops waiting

    def __repr__(self) -> str:
        return tagged("LiveQuestion", id=ident(self.id), run_id=ident(self.run_id),
                      server=ident(self.server), message_bytes=size(self.message),
                      fields=count(self.fields))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """As ``runs pending --json`` and the inspector's panel show it (``live``: the run's
        process waits on it)."""
        return {"id": self.id, "run_id": self.run_id, "server": self.server,
                "tool": self.tool, "message": self.message, "asked_at": self.asked_at,
                "expires_at": self.expires_at, "live": True,
                "fields": [dict(f) for f in self.fields]}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredAnswer:
    """A person's answer written on the board: accepted with checked values, declined or
    cancelled, and by whom."""

    action: Action
    content: Mapping[str, Any] | None
    by: str

    def __repr__(self) -> str:
        fields = None if self.content is None else len(self.content)
        return tagged("StoredAnswer", action=self.action, by=ident(self.by), fields=fields)


@runtime_checkable
class QuestionBoard(Protocol):
    """Where live questions wait for an answer from any process (the run store)."""

    def open_question(self, question: LiveQuestion) -> bool:
        """Put ``question`` on the board and move its run to ``awaiting_input``; False when
        the run is not running (cancelled meanwhile, say): then it is not on the board."""
        ...

    def question_answer(self, run_id: str, question_id: str) -> StoredAnswer | Gone | None:
        """The question's answer; None while it has none, ``"gone"`` once it is off the board
        (its run was cancelled or interrupted)."""
        ...

    def write_answer(self, run_id: str, question_id: str, answer: StoredAnswer) -> bool:
        """Write ``answer`` if the question is open, unanswered and not expired; False when
        another answer came first or the question is no longer open."""
        ...

    def close_question(self, run_id: str, question_id: str) -> None:
        """Take the question off the board (its row deleted); its run is ``running`` again
        once it has no question open."""
        ...

    def open_questions(self, run_id: str | None = None) -> list[LiveQuestion]:
        """The questions open on the board (of ``run_id``), oldest first, of live runs only."""
        ...


_BOARD: ContextVar[QuestionBoard | None] = ContextVar("toolwire_question_board", default=None)


@contextmanager
def on_board(board: QuestionBoard | None) -> Iterator[None]:
    """While inside, the run carried on here keeps its live questions on ``board``."""
    token = _BOARD.set(board)
    try:
        yield
    finally:
        _BOARD.reset(token)


def board() -> QuestionBoard | None:
    """The board the run carried on in this context keeps its live questions on."""
    return _BOARD.get()


def board_of(recorder: object) -> QuestionBoard | None:
    """``recorder`` as a board, when it is one (the run store; a memory recorder is not)."""
    return recorder if isinstance(recorder, QuestionBoard) else None
