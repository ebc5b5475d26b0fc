"""Safe access to the workspace database: which tables and columns a tool may touch, and how.

Invariants:
- Identifiers (tables, columns) are never built from model input. A name the model sends is
  only ever compared, exactly, with the names SQLAlchemy reflected from the schema; the query is
  then built from the reflected objects. Values are always bound parameters.
- Sensitive tables and columns are never read, never shown and never usable in a filter, for
  any user, whatever is asked; ``_sensitive`` decides which names are (normalised: NFKC,
  look-alikes, case; words and compounds). Internal tables (``sqlite_*``, toolwire's own
  ``toolwire_*``) are sensitive too. Readable cells still pass ``safe_cell``: JSON masked by key
  name, text through the redactor.
- Refusals never confirm that a sensitive table exists: it reads "not found or not permitted".
- Driver errors never reach the model: they are logged and become one generic refusal.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy import Column, ColumnElement, CursorResult, Engine, MetaData, Table, inspect
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql import Executable

from toolwire.core.errors import ToolRefusal
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import echo, workspace_of
from toolwire.tools.builtin._sensitive import is_sensitive, latin

INTERNAL_TABLE_PREFIXES = ("sqlite_", "toolwire_")  # engine internals and our own audit store
MAX_FILTERS = 5  # enough to pin a record; more is a scan dressed up as a lookup

INVALID_FILTER = (
    f"invalid filter: at most {MAX_FILTERS} entries, each an existing, non-sensitive column "
    "with a scalar value."
)
READ_FAILED = "the workspace database could not be read."
# A constraint (NOT NULL, UNIQUE, a foreign key) or a lock; its details stay in the log.
WRITE_FAILED = "the workspace database refused the write."

Scalar = str | int | float | bool | None
T = TypeVar("T")
log = logging.getLogger("toolwire.tools.builtin")


def is_sensitive_table(name: str) -> bool:
    return latin(name).casefold().startswith(INTERNAL_TABLE_PREFIXES) or is_sensitive(name)


def table_names(engine: Engine) -> list[str]:
    """Readable tables, sorted."""
    names = guard(lambda: inspect(engine).get_table_names())
    return sorted(n for n in names if not is_sensitive_table(n))


def readable_table(engine: Engine, name: str) -> Table:
    """The reflected table called exactly ``name``, if it exists and is not sensitive."""
    if is_sensitive_table(name) or name not in table_names(engine):
        raise ToolRefusal(f"table {echo(name)} not found or not permitted.")
    return guard(lambda: Table(name, MetaData(), autoload_with=engine))


def mapped_table(engine: Engine, name: str) -> Table:
    """A table the operator's workspace names (never the model): it may carry a sensitive
    name (Django's ``auth_user``), but never an internal one; its columns stay filtered."""
    internal = latin(name).casefold().startswith(INTERNAL_TABLE_PREFIXES)
    if internal or name not in guard(lambda: inspect(engine).get_table_names()):
        raise ToolRefusal(f"the workspace's table {echo(name)} is not found or not permitted.")
    return guard(lambda: Table(name, MetaData(), autoload_with=engine))


def readable_columns(table: Table) -> list[Column[object]]:
    return [c for c in table.columns if not is_sensitive(c.name)]


def readable_column(table: Table, name: str, argument: str = "column") -> Column[object]:
    """The readable column called exactly ``name``; a refusal names the ``argument`` it was."""
    readable = {c.name: c for c in readable_columns(table)}
    if name not in readable:
        raise ToolRefusal(
            f"{argument} {echo(name)} is not a readable column of table {echo(table.name)}."
        )
    return readable[name]


def single_key(table: Table) -> Column[object]:
    """The table's primary key column; refused when the key is not exactly one column."""
    keys = list(table.primary_key.columns)
    if len(keys) != 1:
        raise ToolRefusal(f"table {echo(table.name)} has no single-column primary key.")
    return keys[0]


def pick_columns(
    table: Table, wanted: Iterable[str] | None
) -> tuple[list[Column[object]], list[str]]:
    """The readable columns named in ``wanted`` (all when None), and the names refused."""
    readable = {c.name: c for c in readable_columns(table)}
    if wanted is None:
        return list(readable.values()), []
    chosen: dict[str, Column[object]] = {}
    refused: list[str] = []
    for name in wanted:
        if name in readable:
            chosen.setdefault(name, readable[name])
        else:
            refused.append(name)
    return list(chosen.values()), refused


def equality_filters(table: Table, where: Mapping[str, Scalar] | None) -> list[ColumnElement[bool]]:
    """``column = :value`` conditions; the whole call is refused on any bad entry."""
    if not where:
        return []
    readable = {c.name: c for c in readable_columns(table)}
    if len(where) > MAX_FILTERS or any(k not in readable for k in where):
        raise ToolRefusal(INVALID_FILTER)
    return [readable[k] == v for k, v in where.items()]


def order_columns(table: Table) -> list[Column[object]]:
    """Primary key columns, for a stable order; readable ones only."""
    return [c for c in table.primary_key.columns if not is_sensitive(c.name)]


def guard(action: Callable[[], T], failure: str = READ_FAILED) -> T:
    """Run a database action; a driver failure becomes a generic refusal, details to the log."""
    try:
        return action()
    except SQLAlchemyError:
        log.exception("a built-in tool's database access failed")
        raise ToolRefusal(failure) from None


def fetch_rows(engine: Engine, statement: Executable) -> list[Sequence[object]]:
    """Every row ``statement`` returns, as a tuple; a driver failure is refused (``guard``)."""

    def read() -> list[Sequence[object]]:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(statement)]

    return guard(read)


def first_row(engine: Engine, statement: Executable) -> Sequence[object] | None:
    """The first row ``statement`` returns, as a tuple, or None; refused like ``fetch_rows``."""

    def read() -> Sequence[object] | None:
        with engine.connect() as connection:
            row = connection.execute(statement).first()
        return None if row is None else tuple(row)

    return guard(read)


def run_write(
    engine: Engine, statement: Executable, outcome: Callable[[CursorResult[Any]], T]
) -> T:
    """Run one write in its own transaction and take ``outcome`` of its result before the
    transaction ends; a failure (a constraint, a lock) is refused with ``WRITE_FAILED``."""

    def write() -> T:
        with engine.begin() as connection:
            return outcome(connection.execute(statement))

    return guard(write, WRITE_FAILED)


def engine_of(context: ToolContext) -> Engine:
    workspace = workspace_of(context)
    if not workspace.database_url:
        raise ToolRefusal("the workspace has no database.")
    return workspace.engine()
