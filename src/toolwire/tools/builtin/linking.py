"""``link_records``: one row in a join table, linking existing rows. Waits for an operator.

A join table here is a readable table with at least two foreign keys to readable tables; the
call names at least two of its foreign-key columns, each with the key of an existing row
(checked here, since SQLite does not check foreign keys unless told to), and may set its other
readable columns. A link that exists already is refused rather than doubled. The approver's
preview names the linked rows by their label, as ``record_tree`` labels them; the tool and its
preview make the same checks, so a call that would be refused previews as refused. What the
preview reads is its basis, re-checked before an approved link runs: the preview itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Column, Engine, ForeignKey, Table, and_, insert, select

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import ToolResult
from toolwire.tools.api import Effect, ToolContext
from toolwire.tools.builtin._common import builtin, echo, format_cell, refusal_shown
from toolwire.tools.builtin._sensitive import safe_cell
from toolwire.tools.builtin._sql import (
    Scalar,
    engine_of,
    first_row,
    is_sensitive_table,
    readable_columns,
    readable_table,
    run_write,
)
from toolwire.tools.builtin.editing import MAX_INSERT_COLUMNS
from toolwire.tools.builtin.tree import label_of

LinkValues = Annotated[dict[str, Scalar], Field(min_length=2, max_length=MAX_INSERT_COLUMNS)]
NOT_A_JOIN = "table {} is not a join table (two or more foreign keys to readable tables)."
LINK_COLUMNS = "values must name existing, non-sensitive columns, two or more of them foreign keys."


@dataclass(frozen=True, slots=True)
class _Link:
    """A checked link: the join table, its values, and each foreign key's referenced row."""

    engine: Engine
    table: Table
    values: Mapping[str, Scalar]
    targets: dict[str, tuple[Table, Column[Any]]]  # foreign-key column -> (table, column)


def _link(context: ToolContext, table: str, values: Mapping[str, Scalar]) -> _Link:
    engine = engine_of(context)
    join = readable_table(engine, table.strip())
    keys = _foreign_keys(join)
    if len(keys) < 2:
        raise ToolRefusal(NOT_A_JOIN.format(echo(join.name)))
    readable = {c.name for c in readable_columns(join)}
    linked = [name for name in values if name in keys]
    if any(name not in readable for name in values) or len(linked) < 2:
        raise ToolRefusal(LINK_COLUMNS)
    targets = {name: _target(engine, keys[name]) for name in linked}
    return _Link(engine, join, values, targets)


def _foreign_keys(table: Table) -> dict[str, ForeignKey]:
    """Single-column foreign keys to readable tables, by their column's name."""
    readable = {c.name for c in readable_columns(table)}
    found = {}
    for key in table.foreign_keys:
        target = key.column.table.name
        if key.parent.name in readable and not is_sensitive_table(target):
            found[key.parent.name] = key
    return found


def _target(engine: Engine, key: ForeignKey) -> tuple[Table, Column[Any]]:
    table = readable_table(engine, key.column.table.name)
    column = {c.name: c for c in readable_columns(table)}.get(key.column.name)
    if column is None:
        raise ToolRefusal(LINK_COLUMNS)
    return table, column


def _label(link: _Link, name: str) -> str:
    """``table: label`` of the row a foreign-key value refers to; refused when there is none."""
    table, column = link.targets[name]
    texts = [c for c in readable_columns(table) if c.name != column.name]
    label = label_of(texts)
    selected = [column] if label is None else [column, label]
    query = select(*selected).where(column == link.values[name]).limit(1)
    row = first_row(link.engine, query)
    if row is None:
        shown = format_cell(link.values[name])
        raise ToolRefusal(f"no row of {table.name} has {column.name} {shown}.")
    return f"{table.name}: {format_cell(safe_cell(row[1]))}" if len(row) > 1 else table.name


def _refuse_a_double(link: _Link) -> None:
    columns = {c.name: c for c in link.table.columns}
    same = and_(*(columns[n] == link.values[n] for n in link.targets))
    query = select(*(columns[n] for n in link.targets)).where(same).limit(1)
    if first_row(link.engine, query) is not None:
        raise ToolRefusal(f"this link exists already in {link.table.name}.")


@builtin(
    integrity="trusted",
    group="editing",
    data_class="content",
    enabled_by_default=False,
    requires_approval=True,
    effect=Effect.NON_IDEMPOTENT_WRITE,
)
def link_records(table: str, values: LinkValues, context: ToolContext) -> ToolResult:
    """Link existing rows: insert one row into a join table, its foreign keys naming the rows.
    Needs approval."""
    link = _link(context, table, values)
    for name in link.targets:
        _label(link, name)
    _refuse_a_double(link)
    run_write(link.engine, insert(link.table).values(**values), lambda done: None)
    pairs = " and ".join(f"{n}={format_cell(values[n])}" for n in link.targets)
    return ToolResult.text(f"{link.table.name}: linked {pairs}.")


@link_records.basis
def _basis_link(table: str, values: LinkValues, context: ToolContext) -> str:
    # What the preview reads: the linked rows' labels, and whether the link exists already.
    return "\n".join(_preview_link(table, values, context))


@link_records.previewer
@refusal_shown
def _preview_link(table: str, values: LinkValues, context: ToolContext) -> list[str]:
    link = _link(context, table, values)
    lines = [f"link in {link.table.name}:"]
    for name, value in values.items():
        about = f" ({_label(link, name)})" if name in link.targets else ""
        lines.append(f"{name}: {format_cell(value)}{about}")
    _refuse_a_double(link)
    return lines
