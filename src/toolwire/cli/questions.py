"""A question an MCP server asks during ``toolwire run`` on a terminal, asked there.

The run waits in the call while the person reads the server's message (as text: control
characters shown, cut to its bound) and the form's fields, then answers: a JSON object of
values accepts (checked against the form, defaults filled; a value that does not fit is
named and asked again), ``d`` declines, ``c`` or nothing cancels. Without a terminal, nobody
is asked: the question is declined (see :mod:`toolwire.mcp.elicit`). A run recorded in a
store may be answered from another process too (``toolwire runs input``): the first answer
counts, and the terminal stops asking.
"""

from __future__ import annotations

import asyncio
import os
import select
import sys
import threading

from rich.console import Console
from rich.text import Text

from toolwire.cli.ask import actor, json_object
from toolwire.cli.show import error, safe
from toolwire.core.errors import InvalidInput
from toolwire.mcp.asks import Ask, Reply
from toolwire.mcp.caller import Answerer
from toolwire.mcp.form import Field, checked_answer

PROMPT = "answer as a JSON object, d to decline, c to cancel: "
READ_POLL_SECONDS = 0.2  # how soon the terminal stops asking once answered elsewhere


def terminal_answerer(console: Console) -> Answerer:
    """An answerer asking the person at this terminal. Answered elsewhere first (another
    process, through the run store), it stops asking: the wait is cancelled."""

    async def answer(ask: Ask) -> Reply:
        stop = threading.Event()
        try:
            said = await asyncio.to_thread(ask_here, console, ask, stop)
        finally:
            stop.set()  # the reading thread ends within a poll
        return Reply(action="cancel", by=actor()) if said is None else said

    return answer


def ask_here(console: Console, ask: Ask, stop: threading.Event | None = None) -> Reply | None:
    """The person's answer to ``ask``, read from the terminal; None once ``stop`` is set."""
    console.print(Text(f"\nserver {safe(ask.server, 60)} asks, during {safe(ask.tool, 80)}:"))
    console.print(Text(f"  {safe(ask.message, None)}"))
    for field in ask.fields:
        console.print(Text(f"  {field_line(field)}"))
    while True:
        console.print(Text(PROMPT), end="")
        line = _line(stop)
        if line is None:
            console.print(Text("\n(the question was answered elsewhere, or it expired)"))
            return None
        said = line.strip()
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


def _line(stop: threading.Event | None) -> str | None:
    """One line typed at the terminal ("" at its end); None once ``stop`` is set. Without
    ``stop``, or on a standard input that cannot be watched, it waits for the line."""
    if stop is None or not _watchable():
        try:
            return input()
        except EOFError:
            return ""
    while not stop.is_set():
        ready, _, _ = select.select([sys.stdin], [], [], READ_POLL_SECONDS)
        if ready:
            return sys.stdin.readline()
    return None


def _watchable() -> bool:
    try:
        sys.stdin.fileno()
    except (OSError, ValueError, AttributeError):
        return False
    return os.name == "posix"


def field_line(field: Field) -> str:
    """One field of a form on one line: its name, kind, choices, whether required, default."""
    parts = [safe(field.name, 64), field.kind]
    if field.choices:
        parts.append("one of " + ", ".join(safe(c, 40) for c in field.choices))
    if field.required:
        parts.append("required")
    if field.default is not None:
        parts.append(f"default {safe(str(field.default), 80)}")
    title = f": {safe(field.title, 200)}" if field.title else ""
    return f"{parts[0]} ({', '.join(parts[1:])}){title}"
