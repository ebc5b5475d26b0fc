"""``toolwire audit``: the governance log, newest first.

Every gate decision that refused or changed something (a tool not offered, a call refused, a
person's decision, a budget or the context window cutting a run off) is one line: when, which
run and round, the gate and its reason, how many decisions the line stands for (the tools a run
was not offered are one line per reason), the tool, who decided, and a detail made of metadata.
See :mod:`toolwire.loop.governance` for the reasons. Values come from the store and may have been
chosen by a model (a tool name), so each reaches the terminal through ``safe``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.filters import moment
from toolwire.cli.options import checked_by
from toolwire.cli.runs import JsonOption, guard, resolve_prefix
from toolwire.cli.show import emit_json, local_time, safe, table
from toolwire.cli.store import DbOption, open_or_exit
from toolwire.core.moments import WHEN, parse_moment

if TYPE_CHECKING:
    from toolwire.store.gates import GateRecord

NAME_OPTION_CHARS = 255  # a tool name or a reason; the store keeps nothing longer


_COLUMNS = ("at", "run", "round", "gate/reason", "count", "tool", "by", "detail")


def _gate(value: str | None) -> str | None:
    from toolwire.loop.governance import Gate  # the seam's codes load the tool layer

    if value is not None and value not in set(Gate):
        names = ", ".join(Gate)
        raise typer.BadParameter(f"{safe(value, 40)!r} is not a gate: choose one of {names}")
    return value


def _name(value: str | None) -> str | None:
    if value is not None and not 1 <= len(value) <= NAME_OPTION_CHARS:
        raise typer.BadParameter(f"give 1 to {NAME_OPTION_CHARS} characters")
    return value


def _reason(value: str | None) -> str | None:
    from toolwire.loop.governance import REASONS  # the seam's codes load the tool layer

    if value is not None and value not in REASONS:
        raise typer.BadParameter(f"{safe(value, 40)!r} is no reason; choose one of "
                                 f"{', '.join(REASONS)}")  # fmt: skip
    return value


@app.command("audit")
def audit(
    *,
    since: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN",
            callback=checked_by(parse_moment, "--since"),
            help=f"Only decisions since then: {WHEN}.",
        ),
    ] = None,
    gate: Annotated[
        str | None,
        typer.Option(
            help="Only this gate's decisions: offer, call, approval, context, budget or rounds.",
            callback=_gate,
        ),
    ] = None,
    tool: Annotated[
        str | None, typer.Option(help="Only decisions about this tool.", callback=_name)
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option(
            help="Only this reason (not_permitted, denied, budget_exhausted, ...).",
            callback=_reason,
        ),
    ] = None,
    run: Annotated[
        str | None, typer.Option("--run", help="Only this run (its id, or a prefix naming one).")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many decisions.")] = 50,
    db: DbOption = None,
    as_json: JsonOption = False,
) -> None:
    """The governance log: every gate decision that refused or changed something."""
    from toolwire.loop.governance import Gate

    console = Console(highlight=False, soft_wrap=True, stderr=as_json)
    since_at = moment(since, "--since")
    chosen = None if gate is None else Gate(gate)
    with open_or_exit(console, db) as store:
        run_id = None if run is None else resolve_prefix(console, store, run)
        found = guard(console, lambda: store.list_gate_decisions(
            since=since_at, gate=chosen, tool=tool, reason=reason, run_id=run_id,
            limit=limit))  # fmt: skip
    if as_json:
        emit_json([record.to_dict() for record in found])
        return
    if not found:
        console.print(Text("no gate decisions recorded" + (" that match" if _filtered(
            since, gate, tool, reason, run) else "")))  # fmt: skip
        return
    table(console, _COLUMNS, [_row(record) for record in found])


def _filtered(*filters: str | None) -> bool:
    return any(f is not None for f in filters)


def _row(record: GateRecord) -> list[str]:
    return [
        local_time(record.at),
        record.run_id[:8],
        str(record.round) if record.round is not None else "end",
        f"{record.gate}/{safe(record.reason, 40)}",
        str(record.count),
        safe(record.tool, 60) if record.tool else "-",
        safe(record.actor, 60),
        safe(record.detail) if record.detail else "",
    ]
