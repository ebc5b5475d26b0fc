"""``record_history``: the recorded changes of one record, from the history table the workspace
names (``[history]`` in the workspace TOML).

The record's table must be readable (the same rule as ``read_records``: unknown and sensitive
tables are "not found or not permitted"), and so must the history table and the columns the
workspace maps. Only readable history columns are shown, every cell passes ``safe_cell``, and a
change to a sensitive column (by the mapped ``field_column``, e.g. ``password_hash``) is listed
with every other value withheld: which record, which column and when, never what it held.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Column, Engine, Table, select

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, echo, workspace_of
from toolwire.tools.builtin._sensitive import is_sensitive
from toolwire.tools.builtin._sql import (
    engine_of,
    fetch_rows,
    order_columns,
    readable_columns,
    readable_table,
)
from toolwire.tools.builtin.records import MAX_LIMIT, render_rows
from toolwire.workspace.maps import HistoryMap

DEFAULT_CHANGES = 20  # the recent story of one record
WITHHELD = "withheld"  # every value of a change to a sensitive column

Changes = Annotated[int, Field(ge=1, description=f"changes to return (at most {MAX_LIMIT})")]
RecordId = Annotated[int | str, Field(description="the record's primary key")]


@builtin(group="records", data_class="content", integrity="untrusted")
def record_history(
    table: str, id: RecordId, context: ToolContext, limit: Changes = DEFAULT_CHANGES
) -> ToolResult:
    """The recorded changes of one record, oldest first, from the workspace's history table.

    A change to a sensitive column is listed with its values withheld. Artifact: ``table``
    ``{columns, rows}``, the same cells as the text.
    """
    mapping = workspace_of(context).history
    if mapping is None:
        raise ToolRefusal("the workspace names no history table.")
    engine = engine_of(context)
    record_table = readable_table(engine, table.strip())
    history = _history_table(engine, mapping)
    columns = readable_columns(history)
    if mapping.field_column:  # without it, a change to a secret could not be recognised
        _column(history, mapping.field_column, "field_column")
    kept = _kept(history, mapping)
    query = (
        select(*columns)
        .where(_column(history, mapping.table_column, "table_column") == record_table.name)
        .where(_column(history, mapping.record_column, "record_column") == id)
        .order_by(*_order(history, mapping))
        .limit(min(limit, MAX_LIMIT))
    )
    rows = fetch_rows(engine, query)
    names = [c.name for c in columns]
    shown = [_withheld(row, names, mapping, kept) for row in rows]
    notes = [f"limit capped at {MAX_LIMIT}"] if limit > MAX_LIMIT else []
    where = f"{record_table.name} row {id if isinstance(id, int) else echo(id)}"
    if not shown:
        return ToolResult.text("\n".join([*notes, f"No recorded changes of {where}."]))
    return render_rows(
        history.name,
        names,
        shown,
        0,
        notes,
        heading=lambda n: f"History of {where} ({n} changes, oldest first):",
    )


def _history_table(engine: Engine, mapping: HistoryMap) -> Table:
    try:
        return readable_table(engine, mapping.table)
    except ToolRefusal:
        raise ToolRefusal("the workspace's history table is not found or not permitted.") from None


def _column(table: Table, name: str | None, key: str) -> Column[Any]:
    readable = {c.name: c for c in readable_columns(table)}
    if name is None or name not in readable:
        raise ToolRefusal(f"the history table has no readable column for history.{key}.")
    return readable[name]


def _order(table: Table, mapping: HistoryMap) -> list[Column[Any]]:
    first = [_column(table, mapping.time_column, "time_column")] if mapping.time_column else []
    return [*first, *order_columns(table)]


def _kept(table: Table, mapping: HistoryMap) -> frozenset[str]:
    """The columns a change to a sensitive column still shows: which record, column and when."""
    keys = {c.name for c in table.primary_key.columns}
    named = {mapping.table_column, mapping.record_column, mapping.field_column, mapping.time_column}
    return frozenset(keys | {n for n in named if n is not None})


def _withheld(
    row: Sequence[object], names: list[str], mapping: HistoryMap, kept: frozenset[str]
) -> list[object]:
    cells = dict(zip(names, row, strict=True))
    field = cells.get(mapping.field_column or "")
    if not isinstance(field, str) or not is_sensitive(field):
        return list(row)
    return [cells[n] if n in kept else WITHHELD for n in names]
