"""The questions MCP servers ask during a live run's calls, and a person's answers to them.

``GET /api/runs/{id}/questions`` lists the run's open questions (see
:mod:`toolwire.mcp.asks`); ``POST /api/runs/{id}/questions/{question}`` answers one: accept
with the form's values, decline or cancel. An answer is taken only for the run and question
that asked, by an operator who may decide for the run (an admin, or the user it acts for);
values that do not fit the form are refused (422) naming each problem, and nothing is sent to
the server until they fit. A run this app carries out has a person to ask (see
:func:`toolwire.mcp.asks.attending`); any other run's questions are declined.
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
        return json_response({"questions": [a.to_dict() for a in ASKS.pending(run_id)]})

    @api.post("/runs/{run_id}/questions/{question}", responses=ERROR_RESPONSES)
    def answer(run_id: RunId, question: str, body: AnswerBody) -> Any:
        """Answer one open question of the run."""
        if len(question) != 32 or any(c not in "0123456789abcdef" for c in question):
            raise ApiError(404, "this run has no open question with this id")
        operator = settings.user
        try:
            _may_answer(run_id, question, operator)
            reply = ASKS.answer(run_id, question, body.action, body.values, operator.name)
        except DecisionError as exc:
            raise refusal(exc) from None
        fields = 0 if reply.content is None else len(reply.content)
        return json_response({"action": reply.action, "fields": fields})


def _may_answer(run_id: str, question: str, operator: User) -> None:
    """An admin answers any run's question; anyone else only a run that acts for them."""
    if operator.is_admin:
        return
    for ask in ASKS.pending(run_id):
        if ask.id == question and ask.acting == operator.name:
            return
    raise ApiError(403, "this operator may not answer for this run (it acts for someone else)")
