"""Deciding on a waiting run from the command line: who decides, what they typed, and asking
inline on a terminal.

Every error a decision can meet (a run that is not waiting, a stale turn, input that does not
fit, an unreadable state, a provider that cannot be rebuilt) is one line and exit status 1.
"""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import StepPrinter, error, pause_lines, safe
from toolwire.core.errors import InvalidInput, StaleDecision, ToolwireError
from toolwire.core.lifecycle import RunStatus

if TYPE_CHECKING:
    from toolwire.loop.state import Pause
    from toolwire.runs.runtime import OperatorDecision, RunOutcome, Runtime

FALLBACK_ACTOR = "cli"
NOT_AN_OBJECT = '--json is not a JSON object (write it like \'{"key": "value"}\')'
_APPROVE = frozenset({"a", "approve", "y", "yes"})
_DENY = frozenset({"d", "deny", "n", "no"})
_LEAVE = frozenset({"l", "leave", "q", "quit"})


def actor() -> str:
    """Who decides: the operating system's user name, else ``cli``."""
    try:
        return getpass.getuser() or FALLBACK_ACTOR
    except (KeyError, OSError):  # no user name in the environment nor the password database
        return FALLBACK_ACTOR


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None when it is not one."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def interactive() -> bool:
    """Whether a person is at the terminal: stdin and stdout both are one."""
    return sys.stdin.isatty() and sys.stdout.isatty()


@contextmanager
def decision_errors(console: Console) -> Iterator[None]:
    """Any error a decision can meet as one line and exit status 1."""
    try:
        yield
    except StaleDecision as exc:
        error(console, f"the pending turn changed ({exc}); see the current one with: "
                       "toolwire runs pending")  # fmt: skip
        raise typer.Exit(1) from None
    except ToolwireError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None


Resume = Callable[[str, "OperatorDecision"], "RunOutcome"]


def resumer(runtime: Runtime, printer: StepPrinter) -> Resume:
    """Resume a run in this process, printing its steps."""

    def resume(run_id: str, decision: OperatorDecision) -> RunOutcome:
        return runtime.resume_sync(run_id, decision, observers=[printer], deltas=[printer.delta])

    return resume


def carry_on(console: Console, outcome: RunOutcome, resume: Resume) -> RunOutcome:
    """Ask about each pause and ``resume``, until the run ends or the person leaves it
    waiting."""
    while outcome.pause is not None:
        decision = ask(console, outcome.pause)
        if decision is None:
            return outcome
        try:
            outcome = resume(outcome.run_id, decision)
        except InvalidInput as exc:  # nothing changed: ask again
            error(console, safe(str(exc), None))
    return outcome


def ask(console: Console, pause: Pause) -> OperatorDecision | None:
    """The person's decision on ``pause``; None to leave the run waiting."""
    from toolwire.runs.runtime import OperatorDecision

    for line in pause_lines(pause):
        console.print(line)
    if pause.status is RunStatus.AWAITING_INPUT:
        return _ask_input(console, pause)
    while True:
        answer = _read(console, "approve, deny or leave it waiting? [a/d/l] ")
        if answer is None or answer.lower() in _LEAVE:
            return None
        if answer.lower() in _APPROVE:
            return OperatorDecision(action="approve", digest=pause.digest, actor=actor())
        if answer.lower() in _DENY:
            reason = _read(console, "reason (optional): ") or None
            return OperatorDecision(
                action="deny", digest=pause.digest, actor=actor(), reason=reason
            )
        console.print(Text("answer a (approve), d (deny) or l (leave it waiting)"))


def _ask_input(console: Console, pause: Pause) -> OperatorDecision | None:
    from toolwire.runs.runtime import OperatorDecision

    while True:
        text = _read(console, "input as a JSON object (empty: leave it waiting): ")
        if not text:
            return None
        values = json_object(text)
        if values is not None:
            return OperatorDecision(
                action="input", digest=pause.digest, actor=actor(), values=values
            )
        error(console, "that is not a JSON object; try again")


def _read(console: Console, prompt: str) -> str | None:
    console.print(Text(prompt), end="")
    try:
        return input().strip()
    except EOFError:
        return None
