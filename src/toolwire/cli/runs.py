"""``toolwire runs``: list, show and purge the runs in the audit store.

Everything read back from the store is untrusted text (a model wrote much of it), so every
value reaches the terminal through :func:`toolwire.cli.show.safe` inside a plain ``Text``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli import filters
from toolwire.cli.app import app
from toolwire.cli.ask import interactive
from toolwire.cli.show import cost_text, emit_json, error, plural, safe, tokens_text
from toolwire.cli.store import DbOption, open_or_exit
from toolwire.core.errors import StoreError
from toolwire.core.jsonenc import dumps

if TYPE_CHECKING:
    from toolwire.store import RunStore, RunSummary, StoredRun

runs_app = typer.Typer(
    help="Recorded runs: list, show, purge; decide on waiting runs.", no_args_is_help=True
)
app.add_typer(runs_app, name="runs")

# A value longer than this is cut in `runs show`; the store keeps it whole.
VALUE_PREVIEW_CHARS = 400
# Fields of a step shown in its heading line rather than below it.
_HEADING_FIELDS = frozenset({"sequence", "kind", "round", "duration_ms"})


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON, nothing else.")]
# The id prefix `runs list` prints; `runs show` takes it back while it names one run.
SHORT_ID_CHARS = 8


@runs_app.command("list")
def list_runs(
    *,
    db: DbOption = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many runs.")] = 20,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many of the first.")] = 0,
    statuses: filters.Status = None,
    provider: filters.Provider = None,
    model: filters.Model = None,
    tool: filters.Tool = None,
    since: filters.Since = None,
    until: filters.Until = None,
    has_error: filters.Errors = None,
    privacy_level: filters.Privacy = None,
    search: filters.Search = None,
    sort: Annotated[
        str, typer.Option(help="Order by created_at, cost, tokens, duration or rounds.")
    ] = "created_at",
    ascending: Annotated[bool, typer.Option("--asc", help="Smallest (oldest) first.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The newest runs first (or --sort), each by its short id (the full ids with --json)."""
    console = Console(highlight=False, soft_wrap=True, stderr=as_json)
    query = filters.run_query(
        limit=limit, offset=offset, statuses=statuses, provider=provider, model=model, tool=tool,
        since=since, until=until, has_error=has_error, privacy_level=privacy_level,
        search=search, sort=sort, descending=not ascending,
    )  # fmt: skip
    with open_or_exit(console, db) as store:
        found = guard(console, lambda: store.find_runs(query, total=False).runs)
    if as_json:
        emit_json([summary.to_dict() for summary in found])
        return
    if not found:
        console.print(Text("no runs recorded"))
        return
    for summary in found:  # one plain line per run, for copying and grep
        console.print(Text("  ".join(_row(summary))))


@runs_app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(help="The run's id, or a prefix of it naming one run.")],
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """One run with its stored steps."""
    console = Console(highlight=False, soft_wrap=True, stderr=as_json)
    with open_or_exit(console, db) as store:
        stored = guard(console, lambda: store.get_run(run_id))
        if stored is None:
            full_id = resolve_prefix(console, store, run_id)
            stored = guard(console, lambda: store.get_run(full_id))
    if stored is None:  # purged between the two reads
        error(console, f"no run with id {safe(run_id, 80)}")
        raise typer.Exit(1)
    if as_json:
        from toolwire.store.export import run_record

        emit_json(run_record(stored))
        return
    for line in _heading(stored):
        console.print(line)
    for step in stored.steps:
        for line in _step_lines(step):
            console.print(line)


def resolve_prefix(console: Console, store: RunStore, prefix: str) -> str:
    """The one run id starting with ``prefix``, or a one-line error and exit status 1."""
    matches = guard(console, lambda: _ids_starting(store, prefix.lower()))
    if len(matches) == 1:
        return str(matches[0])
    if not matches:
        error(console, f"no run with id {safe(prefix, 80)}")
    else:
        shown = ", ".join(m[: SHORT_ID_CHARS + 4] for m in matches[:5])
        error(console, f"{safe(prefix, 80)} is the start of {len(matches)} run ids ({shown}"
                       f"{', …' if len(matches) > 5 else ''}); give more of the id")  # fmt: skip
    raise typer.Exit(1)


def _ids_starting(store: RunStore, prefix: str) -> list[str]:
    return store.ids_starting(prefix.strip()) if prefix.strip() else []


@runs_app.command("purge")
def purge(
    older_than: Annotated[
        float, typer.Option("--older-than", min=0, help="Delete finished runs older than DAYS.")
    ],
    db: DbOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete finished runs (and their steps) created more than DAYS days ago."""
    console = Console(highlight=False, soft_wrap=True)
    if not yes:
        confirm_purge(console, older_than)
    with open_or_exit(console, db) as store:
        count = guard(console, lambda: store.purge(older_than_days=older_than))
    console.print(Text(f"purged {plural(count, 'run')}"))


def confirm_purge(console: Console, older_than: float) -> None:
    """Ask on a terminal; without one, refuse: a script says --yes."""
    question = f"delete every finished run older than {older_than:g} days?"
    if not interactive():
        error(console, f"{question} No terminal to ask on: add --yes to purge")
        raise typer.Exit(1)
    if not typer.confirm(question, default=False):
        error(console, "nothing purged")
        raise typer.Exit(1)


def guard(console: Console, action: Any) -> Any:
    try:
        return action()
    except StoreError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None


def _row(summary: RunSummary) -> list[str]:
    label = "/".join(p for p in (summary.provider, summary.model) if p) or "-"
    return [
        summary.id[:SHORT_ID_CHARS],
        summary.status + (f" ({reason})" if (reason := _reason(summary)) else ""),
        summary.created_at[:19].replace("T", " "),
        safe(label, 40),
        plural(summary.rounds, "round"),
        tokens_text(summary.prompt_tokens + summary.completion_tokens, summary.tokens_known),
        cost_text(summary.cost, summary.cost_complete, summary.cost_estimated),
        plural(summary.step_count, "step"),
        summary.privacy_level,
    ]


def _reason(summary: RunSummary) -> str | None:
    """Why the run ended, when it says more than its status (``refused`` for ``completed``)."""
    reason = summary.termination_reason
    return reason if reason and reason != summary.status else None


def _heading(stored: StoredRun) -> list[Text]:
    facts = {
        "status": stored.status,
        **({"reason": reason} if (reason := _reason(stored)) else {}),
        "created": stored.created_at,
        "finished": stored.finished_at or "-",
        "provider": "/".join(p for p in (stored.provider, stored.model) if p) or "-",
        "privacy": stored.privacy_level,
        "rounds": str(stored.rounds) + (" (truncated)" if stored.truncated else ""),
        "tokens": _tokens(stored),
        "cost": cost_text(stored.cost, stored.cost_complete, stored.cost_estimated),
    }
    if stored.error:
        facts["error"] = stored.error
    facts["answer"] = _answer(stored)
    lines = [Text(f"run {stored.id}", style="bold")]
    lines += [Text(f"  {key}: {safe(value, VALUE_PREVIEW_CHARS)}") for key, value in facts.items()]
    return lines


def _tokens(stored: StoredRun) -> str:
    split = f"{stored.prompt_tokens} prompt, {stored.completion_tokens} completion"
    if stored.tokens_known:
        return split
    total = stored.prompt_tokens + stored.completion_tokens
    return f"{tokens_text(total, known=False)}: {split}"


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
