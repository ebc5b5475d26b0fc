"""``toolwire runs``: list, show and purge the runs in the audit store.

Everything read back from the store is untrusted text (a model wrote much of it), so every
value reaches the terminal through :func:`toolwire.cli.show.safe` inside a plain ``Text``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.show import cost_text, error, safe
from toolwire.cli.store import DbOption, open_or_exit
from toolwire.errors import StoreError
from toolwire.jsonenc import dumps

if TYPE_CHECKING:
    from toolwire.store import RunSummary, StoredRun

runs_app = typer.Typer(
    help="Recorded runs: list, show, purge; decide on waiting runs.", no_args_is_help=True
)
app.add_typer(runs_app, name="runs")

# A value longer than this is cut in `runs show`; the store keeps it whole.
VALUE_PREVIEW_CHARS = 400
# Fields of a step shown in its heading line rather than below it.
_HEADING_FIELDS = frozenset({"sequence", "kind", "round", "duration_ms"})


@runs_app.command("list")
def list_runs(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many runs.")] = 20,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many of the newest.")] = 0,
) -> None:
    """The newest runs first."""
    console = Console(highlight=False, soft_wrap=True)
    with open_or_exit(console, db) as store:
        found = guard(console, lambda: store.list_runs(limit=limit, offset=offset))
    if not found:
        console.print(Text("no runs recorded"))
        return
    for summary in found:  # one plain line per run: ids stay whole, for copying and grep
        console.print(Text("  ".join(_row(summary))))


@runs_app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(help="The run's id.")], db: DbOption = None
) -> None:
    """One run with its stored steps."""
    console = Console(highlight=False, soft_wrap=True)
    with open_or_exit(console, db) as store:
        stored = guard(console, lambda: store.get_run(run_id))
    if stored is None:
        error(console, f"no run with id {safe(run_id, 80)}")
        raise typer.Exit(1)
    for line in _heading(stored):
        console.print(line)
    for step in stored.steps:
        for line in _step_lines(step):
            console.print(line)


@runs_app.command("purge")
def purge(
    older_than: Annotated[
        float, typer.Option("--older-than", min=0, help="Delete finished runs older than DAYS.")
    ],
    db: DbOption = None,
) -> None:
    """Delete finished runs (and their steps) created more than DAYS days ago."""
    console = Console(highlight=False, soft_wrap=True)
    with open_or_exit(console, db) as store:
        count = guard(console, lambda: store.purge(older_than_days=older_than))
    console.print(Text(f"purged {count} run{'s' if count != 1 else ''}"))


def guard(console: Console, action: Any) -> Any:
    try:
        return action()
    except StoreError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None


def _row(summary: RunSummary) -> list[str]:
    label = "/".join(p for p in (summary.provider, summary.model) if p) or "-"
    return [
        summary.id,
        _status(summary),
        summary.created_at[:19].replace("T", " "),
        safe(label, 40),
        f"{summary.rounds} rounds",
        f"{summary.prompt_tokens + summary.completion_tokens} tokens",
        cost_text(summary.cost, summary.cost_complete),
        f"{summary.step_count} steps",
        summary.privacy_level,
    ]


def _status(summary: RunSummary) -> str:
    """The status, with the reason when it says more (``completed (refused)``)."""
    reason = summary.termination_reason
    return summary.status + (f" ({reason})" if reason and reason != summary.status else "")


def _heading(stored: StoredRun) -> list[Text]:
    facts = {
        "status": _status(stored),
        "created": stored.created_at,
        "finished": stored.finished_at or "-",
        "provider": "/".join(p for p in (stored.provider, stored.model) if p) or "-",
        "privacy": stored.privacy_level,
        "rounds": str(stored.rounds) + (" (truncated)" if stored.truncated else ""),
        "tokens": f"{stored.prompt_tokens} prompt, {stored.completion_tokens} completion",
        "cost": cost_text(stored.cost, stored.cost_complete),
    }
    if stored.error:
        facts["error"] = stored.error
    facts["answer"] = _answer(stored)
    lines = [Text(f"run {stored.id}", style="bold")]
    lines += [Text(f"  {key}: {safe(value, VALUE_PREVIEW_CHARS)}") for key, value in facts.items()]
    return lines


def _answer(stored: StoredRun) -> str:
    if stored.final_answer is not None:
        return stored.final_answer
    if stored.final_answer_length is None:
        return "-"
    return f"withheld ({stored.final_answer_length} characters)"


def _step_lines(step: dict[str, Any]) -> list[Text]:
    head = (
        f"#{step.get('sequence')} {step.get('kind')} · round {step.get('round')}"
        f" · {step.get('duration_ms', 0)} ms"
    )
    lines = [Text(""), Text(safe(head, 120), style="cyan")]
    for key, value in step.items():
        if key not in _HEADING_FIELDS:
            shown = value if isinstance(value, str) else dumps(value)
            lines.append(Text(f"  {safe(key, 60)}: {safe(shown, VALUE_PREVIEW_CHARS)}"))
    return lines
