"""Editing tools: ``update_record``, the one built-in that writes.

It needs an operator's approval and ships disabled. Until runs can be suspended for approval,
the invoke seam refuses it before ``execute`` is ever reached; the implementation below is what
will run once approval exists, and it keeps the read tools' rules: reflected identifiers only,
no sensitive table or column, bound values, exactly one row addressed by its primary key.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field
from sqlalchemy import update

from toolwire.errors import ToolRefusal
from toolwire.result import ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, echo
from toolwire.tools.builtin._sql import (
    MAX_FILTERS,
    Scalar,
    engine_of,
    guard,
    readable_columns,
    readable_table,
)

Values = Annotated[dict[str, Scalar], Field(min_length=1, max_length=MAX_FILTERS)]


@builtin(
    group="editing",
    data_class="content",
    enabled_by_default=False,
    requires_approval=True,
)
def update_record(table: str, id: int, values: Values, context: ToolContext) -> ToolResult:
    """Set columns of one row, found by its single-column primary key ``id``. Needs approval."""
    engine = engine_of(context)
    sql_table = readable_table(engine, table.strip())
    keys = list(sql_table.primary_key.columns)
    if len(keys) != 1:
        raise ToolRefusal(f"table {echo(sql_table.name)} has no single-column primary key.")
    writable = {c.name for c in readable_columns(sql_table)} - {keys[0].name}
    if any(name not in writable for name in values):
        raise ToolRefusal("values may only name existing, non-sensitive, non-key columns.")
    statement = update(sql_table).where(keys[0] == id).values(**values)

    def write() -> int:
        with engine.begin() as connection:
            return connection.execute(statement).rowcount

    changed = guard(write)
    return ToolResult.text(f"{sql_table.name} row {id}: {changed} row updated.")
