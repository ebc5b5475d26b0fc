"""``toolwire runs export``: stored runs as JSON lines, one export record per run.

Each line is a run as the store keeps it (privacy-filtered at its level), with its steps and
its format (``schema``, ``schema_version``; see :mod:`toolwire.store.export`), oldest first.
Runs are read from the store in batches and written as they come, so an export of any size
holds one batch in memory. Lines are ASCII JSON: a model's text stays data, never a terminal
escape. The count goes to stderr, so stdout (or ``--output``) holds only the lines.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli import filters
from toolwire.cli.runs import guard, runs_app
from toolwire.cli.show import error, plural, safe
from toolwire.cli.store import DbOption, open_or_exit

if TYPE_CHECKING:
    from toolwire.store import StoredRun


@runs_app.command("export")
def export_runs(
    *,
    since: filters.Since = None,
    until: filters.Until = None,
    db: DbOption = None,
    statuses: filters.Status = None,
    provider: filters.Provider = None,
    model: filters.Model = None,
    tool: filters.Tool = None,
    has_error: filters.Errors = None,
    privacy_level: filters.Privacy = None,
    search: filters.Search = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout."),
    ] = None,
) -> None:
    """Stored runs as JSON lines (one run with its steps per line), oldest first."""
    notices = Console(stderr=True, highlight=False, soft_wrap=True)
    query = filters.run_query(
        statuses=statuses, provider=provider, model=model, tool=tool, since=since, until=until,
        has_error=has_error, privacy_level=privacy_level, search=search, descending=False,
    )  # fmt: skip
    with open_or_exit(notices, db) as store:
        if output is None:
            count = guard(notices, lambda: _write(store.export(query), sys.stdout))
        else:
            try:
                with output.open("w", encoding="ascii") as sink:
                    count = guard(notices, lambda: _write(store.export(query), sink))
            except OSError as exc:
                error(notices, f"cannot write {safe(str(output), 200)}: {exc.strerror}")
                raise typer.Exit(1) from None
    notices.print(Text(f"exported {plural(count, 'run')}"))


def _write(runs: Iterable[StoredRun], sink: IO[str]) -> int:
    from toolwire.store.export import run_record

    count = 0
    for stored in runs:
        sink.write(json.dumps(run_record(stored), ensure_ascii=True, allow_nan=False) + "\n")
        count += 1
    sink.flush()
    return count
