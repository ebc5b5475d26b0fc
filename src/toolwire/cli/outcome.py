"""How a run's outcome ends a command: the answer, an error, or the command that resumes it."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import StepPrinter, cost_text, error, pause_lines, safe
from toolwire.lifecycle import RunStatus, TerminationReason

if TYPE_CHECKING:
    from toolwire.endings import LoopResult
    from toolwire.runtime import RunOutcome

# A run that waits for a person is neither a success nor a failure: scripts can tell it apart.
WAITING_EXIT_CODE = 3


def resume_command(outcome: RunOutcome, db: str | None) -> str:
    """The exact command that resumes a waiting run."""
    store = f" --db {shlex.quote(db)}" if db else ""
    if outcome.status is RunStatus.AWAITING_INPUT:
        return f"toolwire runs input {outcome.run_id}{store} --json '{{...}}'"
    return f"toolwire runs approve {outcome.run_id}{store}"


# What a reason that cut the answer short says beside it.
_CUT = {
    TerminationReason.MAX_ITERATIONS: "answer synthesised at the round cap",
    TerminationReason.MAX_TOKENS: "answer cut by the output cap",
    TerminationReason.CONTEXT_WINDOW: "the conversation outgrew the model's window",
    TerminationReason.BUDGET_EXHAUSTED: "the run's token or dollar budget was spent",
}


# Reasons the provider gave (its own word for them is worth showing), not the run's limits.
_PROVIDERS_CALL = frozenset({TerminationReason.MAX_TOKENS, TerminationReason.CONTEXT_WINDOW,
                             TerminationReason.REFUSED, TerminationReason.BLOCKED})  # fmt: skip


def report(
    console: Console,
    outcome: RunOutcome,
    *,
    recorded: bool,
    db: str | None,
    printer: StepPrinter | None = None,
) -> None:
    """Print how the run ended; exit 1 on failure and ``WAITING_EXIT_CODE`` when it waits.

    An answer ``printer`` already showed as it streamed is not printed twice."""
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
    console.print(ending_line(result), soft_wrap=True)
    if result.refusal:
        console.print(Text(f"{_said(result)}: {safe(result.refusal, None)}", style="yellow"),
                      soft_wrap=True)  # fmt: skip
    if printer is None or not printer.was_streamed(result.final_content):
        console.print(Text(safe(result.final_content, None)), soft_wrap=True)


def ending_line(result: LoopResult) -> Text:
    """Why the run stopped, the provider's own word for it, its tokens and its cost."""
    reason = str(result.reason)
    if result.reason in _CUT:
        reason += f" ({_CUT[result.reason]})"
    elif result.truncated:
        reason += " (truncated)"
    if result.finish_reason and result.reason in _PROVIDERS_CALL:
        reason += f"; the provider said {safe(result.finish_reason, 40)!r}"
    cost = cost_text(float(result.cost.usd), result.cost.complete)
    return Text(f"{reason}; {result.usage.total_tokens} tokens; {cost}", style="dim")


def _said(result: LoopResult) -> str:
    return "blocked" if result.reason is TerminationReason.BLOCKED else "the model refused"


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
