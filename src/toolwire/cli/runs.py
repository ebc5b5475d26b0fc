"""``toolwire runs``: list, show and purge the runs in the audit store.

Everything read back from the store is untrusted text (a model wrote much of it), so every
value reaches the terminal through :func:`toolwire.cli.show.safe` inside a plain ``Text``.
A run is named by its id or by any start of it that names one run (:func:`resolve_prefix`,
which every command taking a run id uses): a start that names several is a usage error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli import filters
from toolwire.cli.app import app
from toolwire.cli.ask import interactive
from toolwire.cli.options import checked_by, usage_error
from toolwire.cli.show import (
    cost_value,
    emit_json,
    error,
    local_time,
    plural,
    safe,
    table,
    tokens_text,
)
from toolwire.cli.store import DbOption, open_or_exit
from toolwire.core.errors import StoreError
from toolwire.core.jsonenc import dumps
from toolwire.core.moments import WHEN, parse_moment

if TYPE_CHECKING:
    from toolwire.store import RunStore, RunSummary, StoredRun

runs_app = typer.Typer(
    help="Recorded runs: list, show, export, purge; pending, approve, deny, input, cancel "
    "decide on waiting runs.",
    no_args_is_help=True,
)
app.add_typer(runs_app, name="runs")

# A value longer than this is cut in `runs show`; the store keeps it whole.
VALUE_PREVIEW_CHARS = 400
# Fields of a step shown in its heading line rather than below it.
_HEADING_FIELDS = frozenset({"sequence", "kind", "round", "duration_ms"})
# A step's time fields that hold milliseconds since the epoch (``--json`` keeps them so).
_EPOCH_MS_SUFFIX = "_ms"
_EPOCH_MS_FIELDS = frozenset({"start_ms"})
_LIST_COLUMNS = ("id", "status", "created", "provider", "rounds", "tokens", "cost", "steps",
                 "privacy")  # fmt: skip


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON, nothing else.")]
# The id prefix `runs list` prints; every command taking a run id takes it back.
SHORT_ID_CHARS = 8
ID_MATCHES_READ = 100  # the store hands back this many ids starting alike, at most


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
    table(console, _LIST_COLUMNS, [_row(summary) for summary in found])


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
    """The one run id starting with ``prefix``: none is a one-line error and exit status 1
    (nothing matched), several a usage error (exit status 2) saying how many."""
    matches = guard(console, lambda: _ids_starting(store, prefix.lower()))
    if len(matches) == 1:
        return str(matches[0])
    if not matches:
        error(console, f"no run with id {safe(prefix, 80)}")
        raise typer.Exit(1)
    count = f"{'at least ' if len(matches) >= ID_MATCHES_READ else ''}{len(matches)}"
    shown = ", ".join(m[: SHORT_ID_CHARS + 4] for m in matches[:5])
    raise usage_error(f"{safe(prefix, 80)} is the start of {count} run ids ({shown}"
                      f"{', …' if len(matches) > 5 else ''}); give more of the id")  # fmt: skip


def _ids_starting(store: RunStore, prefix: str) -> list[str]:
    return store.ids_starting(prefix.strip()) if prefix.strip() else []


@runs_app.command("purge")
def purge(
    older_than: Annotated[
        str,
        typer.Option("--older-than", metavar="WHEN", callback=checked_by(parse_moment,
                     "--older-than"), help=f"Delete finished runs created before this: {WHEN}."),
    ],
    db: DbOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:  # fmt: skip
    """Delete finished runs (and their steps) created before --older-than (30d: 30 days ago)."""
    console = Console(highlight=False, soft_wrap=True)
    cutoff = parse_moment(older_than)
    if not yes:
        confirm_purge(console, older_than, cutoff)
    days = max(0.0, (datetime.now(UTC) - cutoff).total_seconds() / 86_400)
    with open_or_exit(console, db) as store:
        count = guard(console, lambda: store.purge(older_than_days=days))
    console.print(Text(f"purged {plural(count, 'run')}"))


def confirm_purge(console: Console, older_than: str, cutoff: datetime) -> None:
    """Ask on a terminal; without one, refuse: a script says --yes."""
    question = (
        f"delete every finished run created before {local_time(cutoff.isoformat())} "
        f"(--older-than {safe(older_than, 40)})?"
    )
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
    tokens = summary.prompt_tokens + summary.completion_tokens
    return [
        summary.id[:SHORT_ID_CHARS],
        summary.status + (f" ({reason})" if (reason := _reason(summary)) else ""),
        local_time(summary.created_at),
        safe(label, 40),
        str(summary.rounds),
        str(tokens) if summary.tokens_known else f"unknown (about {tokens})",
        cost_value(summary.cost, summary.cost_complete, summary.cost_estimated),
        str(summary.step_count),
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
        "created": local_time(stored.created_at),
        "finished": local_time(stored.finished_at),
        "provider": "/".join(p for p in (stored.provider, stored.model) if p) or "-",
        "privacy": stored.privacy_level,
        "rounds": str(stored.rounds) + (" (truncated)" if stored.truncated else ""),
        "tokens": _tokens(stored),
        "cost": cost_value(stored.cost, stored.cost_complete, stored.cost_estimated),
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
            name, shown = _field(key, value)
            lines.append(Text(f"  {safe(name, 60)}: {safe(shown, VALUE_PREVIEW_CHARS)}"))
    return lines


def _field(key: str, value: Any) -> tuple[str, str]:
    """A step's field as ``runs show`` names and shows it: a time in the local zone."""
    if key in _EPOCH_MS_FIELDS and isinstance(value, int | float):
        return key.removesuffix(_EPOCH_MS_SUFFIX), local_time(value, precise=True)
    if key.endswith("_at") and isinstance(value, str):
        return key, local_time(value, precise=True)
    return key, value if isinstance(value, str) else dumps(value)
