"""``toolwire runs pending|approve|deny|input|cancel``: deciding on waiting runs.

A run is named by its id or by the start of it that names one run (``runs list`` prints the
first eight characters), as ``runs show`` takes it. The store and the state key are the ones
every command uses, or, with ``--data-dir DIR``, those of ``toolwire demo --data-dir DIR``.
A decision quotes the pending turn's digest (``--turn``, else the turn pending right now), is
taken by the operating system's user, and resumes the run in this process: its provider is
rebuilt from the stored reference (keys from the environment), its tools' context from the
sealed state. The steps print live, as in ``toolwire run``. A run whose MCP server asks a
live question (its process waits in the call) is listed with the question and answered on the
store's board instead (see :mod:`toolwire.cli.live_questions`). A queued run's decision is queued
instead: a worker carries the run on, and the command follows its stored steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.ask import (
    NOT_AN_OBJECT,
    actor,
    carry_on,
    decision_errors,
    interactive,
    json_object,
    resumer,
)
from toolwire.cli.keys import read_key
from toolwire.cli.options import usage_error
from toolwire.cli.outcome import report
from toolwire.cli.run import registry_for
from toolwire.cli.runs import JsonOption, guard, resolve_prefix, runs_app
from toolwire.cli.show import StepPrinter, emit_json, error, local_time, pause_lines, safe
from toolwire.cli.store import DataDirOption, DbOption, open_or_exit
from toolwire.core.errors import ConfigError, DecisionError, StateError

if TYPE_CHECKING:
    from pathlib import Path

    from toolwire.core.sealing import StateKey
    from toolwire.loop.state import Pause
    from toolwire.runs.questions import LiveQuestion
    from toolwire.runs.runtime import Runtime
    from toolwire.store import RunStore, RunSummary

RunId = Annotated[
    str, typer.Argument(help="The waiting run's id, or a prefix of it naming one run.")
]
Turn = Annotated[
    str | None,
    typer.Option("--turn", help="The pending turn's digest (default: the turn pending now)."),
]
Reason = Annotated[str | None, typer.Option("--reason", help="Why; kept with the decision.")]


def runtime_for(console: Console, store: RunStore, key: StateKey | None, run_id: str) -> Runtime:
    """A runtime with the waiting run's tools: the built-ins, and the tools of the MCP servers
    of the workspace the run was given (so a remote call in its pending turn can run)."""
    from toolwire.runs.runtime import Runtime
    from toolwire.workspace.config import load_workspace

    runtime = Runtime(registry_for(console, store), recorder=store, state_key=key)
    try:
        path = runtime.workspace_of(run_id)
        workspace = None if path is None else load_workspace(path)
    except (DecisionError, StateError, ConfigError):
        return runtime  # the decision itself says what is wrong
    if workspace is None or not workspace.mcp_servers:
        return runtime
    registry = registry_for(console, store, workspace)
    return Runtime(registry, recorder=store, state_key=key)


@runs_app.command("pending")
def pending(
    db: DbOption = None, data_dir: DataDirOption = None, as_json: JsonOption = False
) -> None:
    """The runs waiting for a person, each with its pending calls and their previews."""
    from toolwire.runs.runtime import Runtime

    console = Console(highlight=False, soft_wrap=True, stderr=as_json)
    key = read_key(console, data_dir)
    with open_or_exit(console, db, data_dir) as store:
        if key is not None:  # a live question's words are sealed with it
            store.seal_with(key)
        live = guard(console, store.open_questions)  # first: a dead asker is interrupted
        found = guard(console, lambda: store.list_runs(waiting=True, limit=1000))
        runtime = Runtime(registry_for(console, store), recorder=store, state_key=key)
        asked = {q.run_id for q in live}
        waiting = [(s, None if s.id in asked else _pause_of(runtime, s.id)) for s in found]
    if as_json:
        emit_json([_pending_json(summary, pause, live) for summary, pause in waiting])
        return
    if not found:
        console.print(Text("no run is waiting"))
    for summary, pause in waiting:
        created = local_time(summary.created_at)
        console.print(Text(f"\nrun {summary.id}  {summary.status}  {created}", style="bold"))
        if pause is None:  # its process waits on a server's live question
            from toolwire.cli.live_questions import question_lines  # loads MCP's types

            lines = [line for q in live if q.run_id == summary.id for line in question_lines(q)]
        elif isinstance(pause, str):
            lines = [Text(f"  cannot show its pending turn: {safe(pause, None)}")]
        else:
            lines = pause_lines(pause)
        for line in lines:
            console.print(line)


def _pause_of(runtime: Runtime, run_id: str) -> Pause | str:
    """What ``run_id`` waits on, or why that cannot be read."""
    try:
        return runtime.pending(run_id)
    except (StateError, DecisionError) as exc:
        return str(exc)


def _pending_json(
    summary: RunSummary, pause: Pause | str | None, live: list[LiveQuestion]
) -> dict[str, Any]:
    return {
        "id": summary.id,
        "status": summary.status,
        "created_at": summary.created_at,
        "pending": None if pause is None or isinstance(pause, str) else pause.to_dict(),
        "questions": [q.to_dict() for q in live if q.run_id == summary.id],
        "error": pause if isinstance(pause, str) else None,
    }


@runs_app.command("approve")
def approve(
    run_id: RunId,
    reason: Reason = None,
    turn: Turn = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Approve the pending calls of a waiting run and carry the run on."""
    _decide(run_id, "approve", Where(db=db, data_dir=data_dir), turn=turn, reason=reason)


@runs_app.command("deny")
def deny(
    run_id: RunId,
    reason: Reason = None,
    turn: Turn = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Deny the pending calls (the model reads that they were denied) and carry the run on."""
    _decide(run_id, "deny", Where(db=db, data_dir=data_dir), turn=turn, reason=reason)


@runs_app.command("input")
def give_input(  # noqa: PLR0917 (a command: typer passes its options by name)
    run_id: RunId,
    values: Annotated[
        str | None,
        typer.Option("--json", metavar="OBJECT", help="The input, as a JSON object."),
    ] = None,
    decline: Annotated[
        bool, typer.Option("--decline", help="Decline a server's live question.")
    ] = False,
    cancel: Annotated[
        bool, typer.Option("--cancel", help="Cancel a server's live question.")
    ] = False,
    question: Annotated[
        str | None,
        typer.Option("--question", help="The live question's id (when several are open)."),
    ] = None,
    turn: Turn = None,
    db: DbOption = None,
    data_dir: DataDirOption = None,
) -> None:
    """Answer a run waiting for input: a paused tool's (checked against the tool's schema)
    or a server's live question (checked against its form; --decline and --cancel too)."""
    if sum((values is not None, decline, cancel)) != 1:
        raise usage_error("give exactly one of --json OBJECT, --decline or --cancel")
    parsed = None if values is None else json_object(values)
    if values is not None and parsed is None:
        raise usage_error(NOT_AN_OBJECT)
    action = "decline" if decline else "cancel" if cancel else "accept"
    where = Where(db=db, data_dir=data_dir)
    if _answered_live(run_id, where, question=question, action=action, values=parsed):
        return
    if parsed is None:
        error(Console(highlight=False, soft_wrap=True), "this run has no live question: "
              "only a server's question is declined or cancelled; a paused tool's input is "
              "given with --json")  # fmt: skip
        raise typer.Exit(1)
    _decide(run_id, "input", where, turn=turn, values=parsed)


def _answered_live(
    run_id: str, where: Where, *, question: str | None, action: str, values: dict[str, Any] | None
) -> bool:
    """Answer the run's live question, if it has one open (False: it has none)."""
    console = Console(highlight=False, soft_wrap=True)
    key = read_key(console, where.data_dir)
    with open_or_exit(console, where.db, where.data_dir) as store:
        if key is not None:  # a live question's words and answer are sealed with it
            store.seal_with(key)
        run_id = resolve_prefix(console, store, run_id)
        live = guard(console, lambda: store.open_questions(run_id))
        if not live:
            return False
        if key is None:
            from toolwire.store.questions import NO_KEY

            error(console, NO_KEY)
            raise typer.Exit(1)
        from toolwire.cli.live_questions import answer_live  # loads MCP's types

        answer_live(console, store, run_id, live, question=question, action=action,
                    values=values)  # fmt: skip
    return True


@runs_app.command("cancel")
def cancel(run_id: RunId, db: DbOption = None, data_dir: DataDirOption = None) -> None:
    """Cancel a running or waiting run; a waiting run never resumes."""
    console = Console(highlight=False, soft_wrap=True)
    with open_or_exit(console, db, data_dir) as store:
        run_id = resolve_prefix(console, store, run_id)
        cancelled = guard(console, lambda: store.request_cancel(run_id))
    if not cancelled:
        error(console, f"no running or waiting run has the id {safe(run_id, 80)}")
        raise typer.Exit(1)
    console.print(Text(f"run {run_id} cancelled"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Where:
    """Where a decision's store and state key are: ``--db`` and ``--data-dir``, as given."""

    db: str | None
    data_dir: Path | None


def _decide(
    run_id: str,
    action: Literal["approve", "deny", "input"],
    where: Where,
    *,
    turn: str | None,
    reason: str | None = None,
    values: dict[str, Any] | None = None,
) -> None:
    from toolwire.cli.queued import Follower, open_queue
    from toolwire.runs.runtime import OperatorDecision

    console = Console(highlight=False, soft_wrap=True)
    key = read_key(console, where.data_dir)
    follower: Follower | None = None
    with open_or_exit(console, where.db, where.data_dir) as store:
        run_id = resolve_prefix(console, store, run_id)
        runtime = runtime_for(console, store, key, run_id)
        printer = StepPrinter(console)
        with decision_errors(console):
            digest = turn or runtime.pending(run_id).digest
            decision = OperatorDecision(action=action, digest=digest, actor=actor(),
                                        reason=reason, values=values)  # fmt: skip
            waiting = store.waiting(run_id)
            if waiting is not None and waiting.queued:  # a worker carries it on
                follower = Follower(console, open_queue(console, store, key), runtime)
            resume = resumer(runtime, printer) if follower is None else follower.decide
            outcome = resume(run_id, decision)
            if outcome.status.waiting and interactive():
                outcome = carry_on(console, outcome, resume)
    steps = None if follower is None else follower.steps
    report(console, outcome, recorded=True, db=where.db, data_dir=where.data_dir,
           printer=printer, steps=steps)  # fmt: skip
