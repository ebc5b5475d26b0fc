"""A live question on the run store's board, as ``toolwire runs pending`` shows it and
``toolwire runs input`` answers it from another process than the run's.

The run's process waits in the call of its server's tool (see :mod:`toolwire.mcp.board`), so
answering writes the answer on the board and returns: the run carries on in its own process
within a poll. The answer is the operating system user's, as every decision of these
commands is; values that do not fit the form are refused naming each problem (exit 1), and
the question stays open for a better answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.ask import actor
from toolwire.cli.questions import field_line
from toolwire.cli.show import error, local_time, safe
from toolwire.core.errors import DecisionError
from toolwire.mcp.board import answer_on_board, fields_of
from toolwire.tools.api import User

if TYPE_CHECKING:
    from toolwire.runs.questions import LiveQuestion
    from toolwire.store import RunStore

SHORT = 8  # a question's id prefix, as the lines show it
ANSWER_WITH = "toolwire runs input RUN --json OBJECT | --decline | --cancel"


def question_lines(question: LiveQuestion) -> list[Text]:
    """A live question: who asks, until when the run waits, the message and the form."""
    until = local_time(question.expires_at)
    lines = [
        Text(f"live question {question.id[:SHORT]} · waits until {until}"),
        Text(f"  server {safe(question.server, 60)} asks, during {safe(question.tool, 80)}:"),
        Text(f"    {safe(question.message, None)}"),
    ]
    try:
        fields = fields_of(question)
    except DecisionError as exc:
        return [*lines, Text(f"    {safe(str(exc), None)}")]
    lines += [Text(f"    {field_line(field)}") for field in fields]
    lines.append(Text(f"  answer with: {ANSWER_WITH}"))
    return lines


def answer_live(
    console: Console,
    store: RunStore,
    run_id: str,
    questions: Sequence[LiveQuestion],
    *,
    question: str | None,
    action: str,
    values: dict[str, Any] | None,
) -> None:
    """Answer one of the run's live ``questions`` (``question``: its id or a prefix of it,
    needed when several are open)."""
    chosen = _chosen(console, questions, question)
    operator = User(actor(), is_admin=True)  # as every decision of these commands
    try:
        reply = answer_on_board(store, run_id, chosen.id, action=action, values=values,
                                operator=operator)  # fmt: skip
    except DecisionError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    fields = 0 if reply.content is None else len(reply.content)
    said = f"{reply.action}, {fields} field(s)" if reply.action == "accept" else reply.action
    console.print(Text(f"question {chosen.id[:SHORT]} of run {run_id} answered ({said}); "
                       "the run carries on in its own process"))  # fmt: skip


def _chosen(
    console: Console, questions: Sequence[LiveQuestion], wanted: str | None
) -> LiveQuestion:
    found = [q for q in questions if wanted is None or q.id.startswith(wanted.lower())]
    if len(found) == 1:
        return found[0]
    ids = ", ".join(q.id[:SHORT] for q in questions)
    if not found:
        error(console, f"the run has no open question starting {safe(wanted or '', 40)!r} "
                       f"(open: {ids})")  # fmt: skip
    else:
        error(console, f"the run has {len(found)} open questions ({ids}): name one with "
                       "--question")  # fmt: skip
    raise typer.Exit(1)
