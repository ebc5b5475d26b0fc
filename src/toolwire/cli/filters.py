"""The filters ``toolwire runs list`` and ``toolwire runs export`` share, as command options,
and the time options of any command (``moment_option``: ``toolwire egress`` says its own).

``--since`` and ``--until`` (and ``audit --since``, ``runs purge --older-than``) take what
:mod:`toolwire.core.moments` reads: an ISO 8601 date or time (UTC unless it names an offset)
or a duration (``30m``, ``12h``, ``7d``, ``2w`` before now). Every other filter means what
the inspector's filter of the same name means (see :mod:`toolwire.store.browse`).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import typer

from toolwire.cli.options import checked_by, usage_error
from toolwire.core.moments import WHEN, parse_moment

if TYPE_CHECKING:
    from toolwire.store.browse import RunQuery


def moment_option(name: str, what: str) -> Any:
    """The option ``name`` taking a time (checked as it is read); ``what`` its help, of what
    it keeps (``Runs created before this``), the forms it takes said after it."""
    return typer.Option(name, metavar="WHEN", callback=checked_by(parse_moment, name),
                        help=f"{what}: {WHEN}.")  # fmt: skip


Since = Annotated[str | None, moment_option("--since", "Runs created at or after this")]
Until = Annotated[str | None, moment_option("--until", "Runs created before this")]
Status = Annotated[
    list[str] | None, typer.Option("--status", help="Only runs with this status (repeatable).")
]
Provider = Annotated[str | None, typer.Option(help="Only runs of this provider.")]
Model = Annotated[str | None, typer.Option(help="Only runs of this model.")]
Tool = Annotated[str | None, typer.Option(help="Only runs that called this tool.")]
Errors = Annotated[
    bool | None,
    typer.Option(
        "--errors/--no-errors",
        help="Only runs that failed or had a call return an error (or only those without).",
    ),
]
Privacy = Annotated[
    str | None,
    typer.Option(
        "--privacy", help="Only runs stored at this privacy level (none, metadata, redacted, full)."
    ),
]
Search = Annotated[
    str | None, typer.Option(help="Only runs whose kept text has words beginning with these.")
]


def moment(value: str | None, option: str) -> datetime | None:
    """``value`` as a time; a ``typer.BadParameter`` naming ``option`` when it is none."""
    if value is None:
        return None
    try:
        return parse_moment(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=f"'{option}'") from None


def run_query(
    *, statuses: list[str] | None, since: str | None, until: str | None, **fields: Any
) -> RunQuery:
    """A ``RunQuery`` from the shared options, each named for its ``RunQuery`` field (and
    ``limit``, ``offset``, ``sort``...); a ``typer.BadParameter`` for a value the store refuses."""
    from toolwire.store.browse import RunQuery

    since_at, until_at = moment(since, "--since"), moment(until, "--until")
    try:
        return RunQuery(statuses=tuple(statuses or ()), since=since_at, until=until_at, **fields)
    except ValueError as exc:
        raise usage_error(str(exc)) from None
