"""Record-editing tools: ``update_record``, ``set_field`` (one column of one row) and
``insert_record``. Each waits for an operator.

Every call pauses the run for a person, who reads the tool's preview first: the row before and
after for an update, the row to be inserted for an insert. All ship disabled. They keep the
read tools' rules, in the tool and in its preview alike: reflected identifiers only, no
sensitive table or column (a sensitive value is never shown, not even to the approver), values
always bound, and an update addresses exactly one row by its single-column primary key.

An update's preview basis (re-checked before an approved update runs) is the row's current
values, every readable column of it: a row another writer changed in between is never updated
unseen. An insert reads no row, so it has none.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Column, Engine, Table, insert, select, update

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import ToolResult
from toolwire.tools.api import Effect, ToolContext
from toolwire.tools.builtin._common import builtin, format_cell, refusal_shown
from toolwire.tools.builtin._sql import (
    MAX_FILTERS,
    Scalar,
    engine_of,
    first_row,
    readable_columns,
    readable_table,
    run_write,
    single_key,
)

MAX_INSERT_COLUMNS = 50  # a row of a real table, not a payload smuggled in as columns

Values = Annotated[dict[str, Scalar], Field(min_length=1, max_length=MAX_FILTERS)]
InsertValues = Annotated[dict[str, Scalar], Field(min_length=1, max_length=MAX_INSERT_COLUMNS)]

UPDATE_COLUMNS = "values may only name existing, non-sensitive, non-key columns."
SET_COLUMN = "column must be an existing, non-sensitive, non-key column."
INSERT_COLUMNS = "values may only name existing, non-sensitive columns."


@dataclass(frozen=True, slots=True)
class Target:
    """A write's reflected table and the columns it may set, checked before anything runs."""

    engine: Engine
    table: Table
    columns: dict[str, Column[Any]]


def _target(context: ToolContext, table: str) -> tuple[Engine, Table]:
    engine = engine_of(context)
    return engine, readable_table(engine, table.strip())


def _insert_target(context: ToolContext, table: str, values: Mapping[str, Scalar]) -> Target:
    engine, sql_table = _target(context, table)
    return _checked(engine, sql_table, values, INSERT_COLUMNS, frozenset())


def _update_target(
    context: ToolContext, table: str, values: Mapping[str, Scalar], rule: str = UPDATE_COLUMNS
) -> Target:
    engine, sql_table = _target(context, table)
    key = single_key(sql_table)
    return _checked(engine, sql_table, values, rule, frozenset({key.name}))


def _checked(
    engine: Engine, table: Table, values: Mapping[str, Scalar], rule: str, keys: frozenset[str]
) -> Target:
    columns = {c.name: c for c in readable_columns(table) if c.name not in keys}
    if any(name not in columns for name in values):
        raise ToolRefusal(rule)
    return Target(engine, table, columns)


def _key(target: Target) -> Column[Any]:
    return next(iter(target.table.primary_key.columns))


@builtin(
    integrity="trusted",
    group="editing",
    data_class="content",
    enabled_by_default=False,
    requires_approval=True,
    effect=Effect.IDEMPOTENT_WRITE,
)
def update_record(table: str, id: int, values: Values, context: ToolContext) -> ToolResult:
    """Set columns of one row, found by its single-column primary key ``id``. Needs approval."""
    return _update(context, table, id, values, UPDATE_COLUMNS)


@update_record.previewer
@refusal_shown
def _preview_update(table: str, id: int, values: Values, context: ToolContext) -> list[str]:
    return _update_preview(context, table, id, values, verb="update", rule=UPDATE_COLUMNS)


@update_record.basis
def _basis_update(table: str, id: int, values: Values, context: ToolContext) -> str:
    return _row_basis(_update_target(context, table, values), id)


@builtin(
    integrity="trusted",
    group="editing",
    data_class="content",
    enabled_by_default=False,
    requires_approval=True,
    effect=Effect.IDEMPOTENT_WRITE,
)
def set_field(table: str, id: int, column: str, value: Scalar, context: ToolContext) -> ToolResult:
    """Set one column of one row, found by its single-column primary key ``id``. Needs
    approval."""
    return _update(context, table, id, {column: value}, SET_COLUMN)


@set_field.previewer
@refusal_shown
def _preview_set(
    table: str, id: int, column: str, value: Scalar, context: ToolContext
) -> list[str]:
    return _update_preview(context, table, id, {column: value}, verb="set", rule=SET_COLUMN)


@set_field.basis
def _basis_set(table: str, id: int, column: str, value: Scalar, context: ToolContext) -> str:
    return _row_basis(_update_target(context, table, {column: value}, SET_COLUMN), id)


def _row_basis(target: Target, id: int) -> str:
    """The row ``id`` as it is now: every readable column's value, or that there is none."""
    names = [c.name for c in readable_columns(target.table)]
    query = select(*(target.table.columns[n] for n in names)).where(_key(target) == id)
    row = first_row(target.engine, query)
    return f"{target.table.name} {id}: " + ("absent" if row is None else repr(list(row)))


def _update(
    context: ToolContext, table: str, id: int, values: Mapping[str, Scalar], rule: str
) -> ToolResult:
    target = _update_target(context, table, values, rule)
    statement = update(target.table).where(_key(target) == id).values(**values)
    changed = run_write(target.engine, statement, lambda done: done.rowcount)
    return ToolResult.text(f"{target.table.name} row {id}: {changed} row updated.")


def _update_preview(
    context: ToolContext,
    table: str,
    id: int,
    values: Mapping[str, Scalar],
    *,
    verb: str,
    rule: str,
) -> list[str]:
    target = _update_target(context, table, values, rule)
    before = _current(target, id, list(values))
    heading = f"{verb} {target.table.name} row {id}:"
    if before is None:
        return [heading, f"no row of {target.table.name} has id {id}; nothing would change."]
    return [heading, *(_change(name, before[name], new) for name, new in values.items())]


def _change(name: str, before: object, after: object) -> str:
    return f"{name}: {format_cell(before)} → {format_cell(after)}"


def _current(target: Target, id: int, names: list[str]) -> Mapping[str, Any] | None:
    query = select(*(target.columns[n] for n in names)).where(_key(target) == id)
    row = first_row(target.engine, query)
    return None if row is None else dict(zip(names, row, strict=True))


@builtin(
    integrity="trusted",
    group="editing",
    data_class="content",
    enabled_by_default=False,
    requires_approval=True,
    effect=Effect.NON_IDEMPOTENT_WRITE,
)
def insert_record(table: str, values: InsertValues, context: ToolContext) -> ToolResult:
    """Insert one row into a table; answers with the new row's primary key. Needs approval."""
    target = _insert_target(context, table, values)
    statement = insert(target.table).values(**values)
    key = run_write(target.engine, statement, lambda done: tuple(done.inserted_primary_key or ()))
    return ToolResult.text(f"{target.table.name}: 1 row inserted{_key_text(target, key)}.")


def _key_text(target: Target, key: tuple[Any, ...]) -> str:
    pairs = zip(target.table.primary_key.columns, key, strict=False)
    shown = [f"{c.name} = {format_cell(v)}" for c, v in pairs if c.name in target.columns]
    return f", {', '.join(shown)}" if shown else ""


@insert_record.previewer
@refusal_shown
def _preview_insert(table: str, values: InsertValues, context: ToolContext) -> list[str]:
    target = _insert_target(context, table, values)
    ordered = [name for name in target.columns if name in values]
    lines = [f"{name}: {format_cell(values[name])}" for name in ordered]
    return [f"insert into {target.table.name}:", *lines]
