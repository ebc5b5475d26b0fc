"""The questions MCP servers ask during a live run's calls, and a person's answers to them.

``GET /api/runs/{id}/questions`` lists the run's open questions (see
:mod:`toolwire.mcp.asks`); ``POST /api/runs/{id}/questions/{question}`` answers one: accept
with the form's values, decline or cancel. An answer is taken only for the run and question
that asked, by an operator who may decide for the run (an admin, or the user it acts for);
values that do not fit the form are refused (422) naming each problem, and nothing is sent to
the server until they fit. A run this app carries out has a person to ask (see
:func:`toolwire.mcp.asks.attending`); any other run's questions are declined.

A question of a run recorded in the app's store is on the store's board too (see
:mod:`toolwire.mcp.board`), so it is listed and answered here even when another process
carries the run out (``toolwire run`` at a terminal, another inspector on the same store):
its answer is then written on the board, where the run's process reads it.
"""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import Field

from toolwire.core.errors import DecisionError
from toolwire.inspector.errors import ERROR_RESPONSES, ApiError, json_response
from toolwire.inspector.models import MAX_ARGUMENT_KEYS, _Strict
from toolwire.inspector.service import refusal
from toolwire.inspector.settings import InspectorSettings
from toolwire.inspector.stored import RunId
from toolwire.mcp.asks import ASKS
from toolwire.mcp.board import NOT_YOURS, answer_on_board, find_question
from toolwire.policy.charter import CharterRefused
from toolwire.runs.questions import QuestionBoard, board_of
from toolwire.tools.api import User


class AnswerBody(_Strict):
    """A person's answer to a server's question: ``values`` only to accept."""

    action: Literal["accept", "decline", "cancel"]
    values: dict[str, Any] | None = Field(default=None, max_length=MAX_ARGUMENT_KEYS, repr=False)


def question_routes(api: APIRouter, settings: InspectorSettings) -> None:
    """Add the question routes to ``api`` (behind its token)."""

    @api.get("/runs/{run_id}/questions", responses=ERROR_RESPONSES)
    def questions(run_id: RunId) -> Any:
        """The run's open questions, oldest first."""
        board = _board(settings)
        live = [] if board is None else [q.to_dict() for q in board.open_questions(run_id)]
        known = {q["id"] for q in live}
        here = [a.to_dict() for a in ASKS.pending(run_id) if a.id not in known]
        return json_response({"questions": live + here})

    @api.post("/runs/{run_id}/questions/{question}", responses=ERROR_RESPONSES)
    def answer(run_id: RunId, question: str, body: AnswerBody) -> Any:
        """Answer one open question of the run."""
        if len(question) != 32 or any(c not in "0123456789abcdef" for c in question):
            raise ApiError(404, "this run has no open question with this id")
        operator = settings.user
        board = _board(settings)
        try:
            if board is not None and find_question(board, run_id, question) is not None:
                reply = answer_on_board(board, run_id, question, action=body.action,
                                        values=body.values, operator=operator)  # fmt: skip
            else:
                _may_answer(run_id, question, operator)
                reply = ASKS.answer(run_id, question, body.action, body.values, operator.name)
        except CharterRefused as exc:
            raise ApiError(403, str(exc)) from None
        except DecisionError as exc:
            raise refusal(exc) from None
        fields = 0 if reply.content is None else len(reply.content)
        return json_response({"action": reply.action, "fields": fields})


def _board(settings: InspectorSettings) -> QuestionBoard | None:
    return board_of(settings.store)


def _may_answer(run_id: str, question: str, operator: User) -> None:
    """An admin answers any run's question; anyone else only a run that acts for them."""
    if operator.is_admin:
        return
    for ask in ASKS.pending(run_id):
        if ask.id == question and ask.acting != operator.name:
            raise ApiError(403, NOT_YOURS)
    # Not open here, or the operator's own: taking the answer says which.
