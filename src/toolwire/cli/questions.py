"""A question an MCP server asks during ``toolwire run`` on a terminal, asked there.

The run waits in the call while the person reads the server's message (as text: control
characters shown, cut to its bound) and the form's fields, then answers: a JSON object of
values accepts (checked against the form, defaults filled; a value that does not fit is
named and asked again), ``d`` declines, ``c`` or nothing cancels. Without a terminal, nobody
is asked: the question is declined (see :mod:`toolwire.mcp.elicit`).
"""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.text import Text

from toolwire.cli.ask import actor, json_object
from toolwire.cli.show import error, safe
from toolwire.core.errors import InvalidInput
from toolwire.mcp.asks import Ask, Reply
from toolwire.mcp.caller import Answerer
from toolwire.mcp.form import Field, checked_answer

PROMPT = "answer as a JSON object, d to decline, c to cancel: "


def terminal_answerer(console: Console) -> Answerer:
    """An answerer asking the person at this terminal."""

    async def answer(ask: Ask) -> Reply:
        return await asyncio.to_thread(ask_here, console, ask)

    return answer


def ask_here(console: Console, ask: Ask) -> Reply:
    """The person's answer to ``ask``, read from the terminal."""
    console.print(Text(f"\nserver {safe(ask.server, 60)} asks, during {safe(ask.tool, 80)}:"))
    console.print(Text(f"  {safe(ask.message, None)}"))
    for field in ask.fields:
        console.print(Text(f"  {_shown(field)}"))
    while True:
        console.print(Text(PROMPT), end="")
        try:
            said = input().strip()
        except EOFError:
            said = ""
        if said.lower() in ("", "c", "cancel"):
            return Reply(action="cancel", by=actor())
        if said.lower() in ("d", "decline"):
            return Reply(action="decline", by=actor())
        values = json_object(said)
        if values is None:
            error(console, "that is not a JSON object; try again")
            continue
        try:
            return Reply(action="accept", content=checked_answer(ask.fields, values), by=actor())
        except InvalidInput as exc:
            error(console, safe(str(exc), None))


def _shown(field: Field) -> str:
    parts = [safe(field.name, 64), field.kind]
    if field.choices:
        parts.append("one of " + ", ".join(safe(c, 40) for c in field.choices))
    if field.required:
        parts.append("required")
    if field.default is not None:
        parts.append(f"default {safe(str(field.default), 80)}")
    title = f": {safe(field.title, 200)}" if field.title else ""
    return f"{parts[0]} ({', '.join(parts[1:])}){title}"
