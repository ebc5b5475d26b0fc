"""``toolwire egress``: the egress ledger, the bytes of tool output sent to providers.

Given a run (its id or a start naming one), what that run sent; else the totals of every run
over a time range (``--since``, ``--until``). ``--by`` chooses what the sums are split by:
``provider``, ``tool``, ``class`` (the data class) and ``label`` (the integrity label), any of
them (all by default; ``--by none``: one grand total). Each line holds ``wire`` (every tool
result each request carried, every copy sent) and ``new`` (the results new to the
conversation in each request). See :mod:`toolwire.policy.egress` for what is counted. Names
come from the store and reach the terminal through ``safe``.

With ``--workspace FILE``: what every run of that workspace sent within its window, against
its ``max_workspace_bytes`` (what the workspace's limit counts before each request).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.filters import moment, moment_option
from toolwire.cli.runs import JsonOption, guard, resolve_prefix
from toolwire.cli.show import emit_json, safe, table
from toolwire.cli.store import DbOption, open_or_exit

if TYPE_CHECKING:
    from toolwire.store.egress import EgressTotal, Group

# What ``--by`` takes, and the ledger's field for each.
_GROUPS = {"provider": "provider", "tool": "tool", "class": "data_class", "label": "label"}


def _by(value: list[str] | None) -> list[str] | None:
    if value is None:
        return None
    chosen = [part.strip() for item in value for part in item.split(",") if part.strip()]
    if chosen == ["none"]:
        return []
    unknown = [c for c in chosen if c not in _GROUPS]
    if unknown or not chosen:
        shown = safe(unknown[0], 40) if unknown else ""
        raise typer.BadParameter(f"{shown!r} is not a grouping: choose from "
                                 f"{', '.join(_GROUPS)}, or none")  # fmt: skip
    return chosen


SinceOption = Annotated[str | None, moment_option("--since", "Only requests sent at or after this")]
UntilOption = Annotated[str | None, moment_option("--until", "Only requests sent before this")]
ByOption = Annotated[
    list[str] | None,
    typer.Option("--by", metavar="GROUPS", callback=_by,
                 help="Split the sums by provider, tool, class, label (comma-separated or "
                 "repeated; default all), or none."),
]  # fmt: skip
WorkspaceFileOption = Annotated[
    Path | None,
    typer.Option("--workspace", metavar="FILE", help="Show what every run of this workspace "
                 "sent within its window, against its max_workspace_bytes."),
]  # fmt: skip
RunArgument = Annotated[
    str | None,
    typer.Argument(metavar="RUN", help="Only this run (its id, or a prefix naming one)."),
]


@app.command("egress")
def egress(
    run: RunArgument = None,
    *,
    since: SinceOption = None,
    until: UntilOption = None,
    by: ByOption = None,
    workspace: WorkspaceFileOption = None,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """Bytes of tool output sent to each provider: one run's, or totals over a time range."""
    console = Console(highlight=False, soft_wrap=True, stderr=as_json)
    if workspace is not None:
        _workspace_total(console, workspace, db, as_json=as_json)
        return
    since_at, until_at = moment(since, "--since"), moment(until, "--until")
    chosen = list(_GROUPS) if by is None else by
    groups: list[Group] = [_GROUPS[c] for c in chosen]  # type: ignore[misc]
    with open_or_exit(console, db) as store:
        run_id = None if run is None else resolve_prefix(console, store, run)
        found = guard(console, lambda: store.egress(run_id=run_id, by=groups, since=since_at,
                                                    until=until_at))  # fmt: skip
    if as_json:
        emit_json([total.to_dict() for total in found])
        return
    if not found:
        console.print(Text("no tool output sent" + (" that matches" if run or since or until
                                                     else "")))  # fmt: skip
        return
    columns = (*chosen, "new", "wire")
    table(console, columns, [_row(total, groups) for total in found])


def _workspace_total(console: Console, path: Path, db: str | None, *, as_json: bool) -> None:
    from toolwire.cli.show import error
    from toolwire.core.errors import ConfigError
    from toolwire.policy.egress import workspace_key, workspace_limit
    from toolwire.workspace.config import load_workspace

    try:
        loaded = load_workspace(path)
    except ConfigError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    window, limit = loaded.egress_window, workspace_limit(loaded)
    since = datetime.now(UTC) - timedelta(seconds=window)
    with open_or_exit(console, db) as store:
        sent = guard(console, lambda: store.workspace_egress(workspace_key(path), since=since))
    if as_json:
        emit_json({"workspace": str(path), "window_seconds": window, "wire_bytes": sent,
                   "limit_bytes": limit, "on_limit": loaded.egress_on_limit or "stop"})  # fmt: skip
        return
    against = "no limit" if limit is None else f"of its limit of {limit} bytes"
    console.print(Text(f"workspace {safe(str(path), 200)}: {sent} bytes of tool output sent "
                       f"in the last {_span(window)}, {against}"))  # fmt: skip


def _span(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _row(total: EgressTotal, groups: list[Group]) -> list[str]:
    named = [safe(getattr(total, g) or "-", 60) for g in groups]
    return [*named, str(total.new_bytes), str(total.wire_bytes)]
