"""How a run's outcome ends a command: the answer, an error, or the command that resumes it."""

from __future__ import annotations

import shlex

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import error, pause_lines, safe
from toolwire.lifecycle import RunStatus
from toolwire.runtime import RunOutcome

# A run that waits for a person is neither a success nor a failure: scripts can tell it apart.
WAITING_EXIT_CODE = 3


def resume_command(outcome: RunOutcome, db: str | None) -> str:
    """The exact command that resumes a waiting run."""
    store = f" --db {shlex.quote(db)}" if db else ""
    if outcome.status is RunStatus.AWAITING_INPUT:
        return f"toolwire runs input {outcome.run_id}{store} --json '{{...}}'"
    return f"toolwire runs approve {outcome.run_id}{store}"


def report(console: Console, outcome: RunOutcome, *, recorded: bool, db: str | None) -> None:
    """Print how the run ended; exit 1 on failure and ``WAITING_EXIT_CODE`` when it waits."""
    if outcome.store_error:
        console.print(Text(f"warning: {outcome.store_error}", style="yellow"))
    elif recorded:
        console.print(Text(f"\nrun {outcome.run_id} recorded", style="dim"))
    if outcome.status.waiting:
        _waiting(console, outcome, recorded=recorded, db=db)
    result = outcome.result
    if outcome.status is not RunStatus.COMPLETED or result is None:
        error(console, outcome.error or outcome.status.value)
        raise typer.Exit(1)
    status = f"{result.reason}" + (
        " (answer synthesised at the round cap)" if result.truncated else ""
    )
    console.print(Text(f"{status}; {result.usage.total_tokens} tokens", style="dim"))
    console.print(Text(safe(result.final_content, None)))


def _waiting(console: Console, outcome: RunOutcome, *, recorded: bool, db: str | None) -> None:
    if not recorded:
        error(console, "the run waits for a person, but no store keeps it: it cannot resume")
        raise typer.Exit(1)
    if outcome.pause is not None:
        for line in pause_lines(outcome.pause):
            console.print(line)
    console.print(Text(f"run {outcome.run_id} is {outcome.status.value}"))
    console.print(Text(f"resume it with: {resume_command(outcome, db)}"), soft_wrap=True)
    if outcome.status is RunStatus.AWAITING_APPROVAL:
        deny = resume_command(outcome, db).replace(" approve ", " deny ", 1)
        console.print(Text(f"or deny it with: {deny}"), soft_wrap=True)
    raise typer.Exit(WAITING_EXIT_CODE)
