"""How a run's outcome ends a command: the answer, an error, or the command that resumes it."""

from __future__ import annotations

import shlex
from enum import Enum
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import (
    StepPrinter,
    cost_text,
    emit_json,
    error,
    pause_lines,
    safe,
    tokens_text,
    warning,
)
from toolwire.core.lifecycle import RunStatus, TerminationReason
from toolwire.providers.base import Usage

if TYPE_CHECKING:
    from pathlib import Path

    from toolwire.loop.endings import LoopResult
    from toolwire.loop.run import RunOutcome

# A run that waits for a person is neither a success nor a failure: scripts can tell it apart.
WAITING_EXIT_CODE = 3


def resume_command(outcome: RunOutcome, db: str | None, data_dir: Path | None = None) -> str:
    """The exact command that resumes a waiting run (in the store ``--db`` or ``--data-dir``
    named, if one did)."""
    store = f" --db {shlex.quote(db)}" if db else ""
    if not db and data_dir is not None:
        store = f" --data-dir {shlex.quote(str(data_dir))}"
    if outcome.status is RunStatus.AWAITING_INPUT:
        return f"toolwire runs input {outcome.run_id}{store} --json '{{...}}'"
    return f"toolwire runs approve {outcome.run_id}{store}"


# What a reason that cut the answer short says beside it.
_CUT = {
    TerminationReason.MAX_ITERATIONS: "answer synthesised at the round cap",
    TerminationReason.MAX_TOKENS: "answer cut by the output cap",
    TerminationReason.CONTEXT_WINDOW: "the conversation outgrew the model's window",
    TerminationReason.BUDGET_EXHAUSTED: "the run's token or dollar budget was spent",
    TerminationReason.EGRESS_LIMIT: "the next request would have sent more tool output than "
    "the run's egress limit allows; it was not sent",
    TerminationReason.CONTEXT_FULL: "the conversation cannot fit the model's context window, "
    "even without its old exchanges",
    TerminationReason.OUTPUT_INVALID: "the answer does not match the required output schema, "
    "asked for twice",
}


# Reasons the provider gave (its own word for them is worth showing), not the run's limits.
_PROVIDERS_CALL = frozenset({TerminationReason.MAX_TOKENS, TerminationReason.CONTEXT_WINDOW,
                             TerminationReason.REFUSED, TerminationReason.BLOCKED})  # fmt: skip


class Output(Enum):
    """What a command prints on stdout: steps and the answer, the answer only, or JSON."""

    HUMAN = "human"
    QUIET = "quiet"  # the answer alone
    JSON = "json"  # one JSON object
    SILENT = "silent"  # --json --quiet: the exit status alone


def report(
    console: Console,
    outcome: RunOutcome,
    *,
    recorded: bool,
    db: str | None,
    data_dir: Path | None = None,
    printer: StepPrinter | None = None,
    output: Output = Output.HUMAN,
    stored_in: str | None = None,
    steps: int | None = None,
) -> None:
    """Print how the run ended; exit 1 on failure and ``WAITING_EXIT_CODE`` when it waits.

    ``console`` takes what a person reads (stderr unless ``output`` is HUMAN). An answer
    ``printer`` already showed as it streamed is not printed twice. ``steps`` counts a queued
    run's stored steps (its outcome carries none)."""
    if outcome.store_error:
        warning(console, safe(outcome.store_error, None))
    elif recorded and output is Output.HUMAN:
        where = f" in {safe(stored_in, None)}" if stored_in else ""
        console.print(Text(f"\nrun {outcome.run_id} recorded{where}", style="dim"), soft_wrap=True)
    if output is Output.JSON:
        shown = outcome_json(outcome, recorded=recorded, db=db, stored_in=stored_in)
        emit_json(shown if steps is None else shown | {"steps": steps})
    if outcome.status.waiting:
        _waiting(console, outcome, recorded=recorded, store=(db, data_dir))
    result = outcome.result
    if outcome.status not in (RunStatus.COMPLETED, RunStatus.DRY_RUN) or result is None:
        error(console, outcome.error or outcome.status.value)
        raise typer.Exit(1)
    if output is Output.QUIET:
        typer.echo(safe(result.final_content, None))
    if output is not Output.HUMAN:
        return
    console.print(ending_line(result), soft_wrap=True)
    if result.refusal:
        console.print(Text(f"{_said(result)}: {safe(result.refusal, None)}", style="yellow"),
                      soft_wrap=True)  # fmt: skip
    if printer is None or not printer.was_streamed(result.final_content):
        console.print(Text(safe(result.final_content, None)), soft_wrap=True)
    if steps is not None and not result.final_content:
        console.print(Text("(a queued run's answer is read from the store, which keeps none at "
                           "this privacy level; --privacy redacted or full keeps it)",
                           style="dim"), soft_wrap=True)  # fmt: skip


def outcome_json(
    outcome: RunOutcome, *, recorded: bool, db: str | None, stored_in: str | None
) -> dict[str, Any]:
    """The outcome as ``run --json`` prints it: plain values, the answer as data."""
    result = outcome.result
    usage = None if result is None else result.usage
    return {
        "run_id": outcome.run_id,
        "status": outcome.status.value,
        "reason": None if result is None else str(result.reason),
        "answer": None if result is None or outcome.status.waiting else result.final_content,
        # the answer's JSON value, when the run required an output schema and it matched
        "output": None if result is None else plain_output(result.output),
        "error": outcome.error,
        "usage": None if usage is None else {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            # False: the provider reported no usage for some turn; the counts are estimates
            "tokens_known": usage.known,
        },
        "cost": None if result is None else {
            "usd": float(result.cost.usd), "complete": result.cost.complete,
            # True: priced from toolwire's estimate of tokens a provider did not report
            "estimated": result.cost.estimated,
        },
        "steps": len(outcome.steps),
        "stored_in": stored_in if recorded else None,
        "resume": resume_command(outcome, db) if outcome.status.waiting and recorded else None,
    }  # fmt: skip


def plain_output(value: Any) -> Any:
    """A run's checked answer as plain JSON (a pydantic model's dump, or the value itself)."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


def ending_line(result: LoopResult) -> Text:
    """Why the run stopped, the provider's own word for it, its tokens and its cost."""
    reason = str(result.reason)
    if result.reason in _CUT:
        reason += f" ({_CUT[result.reason]})"
    elif result.truncated:
        reason += " (truncated)"
    if result.finish_reason and result.reason in _PROVIDERS_CALL:
        reason += f"; the provider said {safe(result.finish_reason, 40)!r}"
    cost = cost_text(float(result.cost.usd), result.cost.complete, result.cost.estimated)
    return Text(f"{reason}; {tokens_of(result.usage)}; {cost}", style="dim")


def tokens_of(usage: Usage) -> str:
    """The run's tokens, or "tokens unknown" (with the estimate budgets counted) when the
    provider did not report them all."""
    return tokens_text(usage.total_tokens, usage.known)


def _said(result: LoopResult) -> str:
    return "blocked" if result.reason is TerminationReason.BLOCKED else "the model refused"


def _waiting(
    console: Console, outcome: RunOutcome, *, recorded: bool, store: tuple[str | None, Path | None]
) -> None:
    if not recorded:
        error(console, "the run waits for a person, but no store keeps it: it cannot resume")
        raise typer.Exit(1)
    if outcome.pause is not None:
        for line in pause_lines(outcome.pause):
            console.print(line)
    console.print(Text(f"run {outcome.run_id} is {outcome.status.value}"))
    command = resume_command(outcome, *store)
    console.print(Text(f"resume it with: {command}"), soft_wrap=True)
    if outcome.status is RunStatus.AWAITING_APPROVAL:
        deny = command.replace(" approve ", " deny ", 1)
        console.print(Text(f"or deny it with: {deny}"), soft_wrap=True)
    raise typer.Exit(WAITING_EXIT_CODE)
