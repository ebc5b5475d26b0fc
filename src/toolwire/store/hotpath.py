"""The statements every recorded step runs, on bare driver connections.

Inserting steps happens several times per tool round. Through SQLAlchemy's pooled
``Connection`` each costs a pool checkout, a reset on return and result processing: several
times the statement itself on SQLite. Here the statements are compiled once for the dialect
and run on driver connections taken from and returned to a small free list, so each thread gets
a connection of its own while it uses one and no more are open than there are threads using
them at once. Every call commits before the connection goes back. A connection that fails is
closed, never reused.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql import ClauseElement


class Compiled:
    """A statement compiled once for one dialect, with its parameters in driver order.

    ``keys`` are an INSERT's columns; any other statement takes the bind parameters it names
    (``bindparam``), and the constants it binds itself (a literal ``0``, a status) are kept.
    A value whose type the dialect converts (a time, a boolean on SQLite) is converted as
    SQLAlchemy would, so that a row reads back alike whichever path wrote it.
    """

    def __init__(
        self, statement: ClauseElement, dialect: Dialect, keys: list[str] | None = None
    ) -> None:
        compiled: Any = statement.compile(dialect=dialect, column_keys=keys)
        self.sql: str = compiled.string
        if "POSTCOMPILE" in self.sql:  # an IN list is rendered per execution: compare each
            raise TypeError("a hot-path statement cannot take an IN list; use OR of equals")
        taken = set(keys or ())
        self._defaults = {k: v for k, v in compiled.params.items() if k not in taken}
        self._defaults |= _column_defaults(statement, taken)
        self._names = tuple(compiled.params)  # every parameter it takes, defaults included
        self._order = tuple(compiled.positiontup or ()) if compiled.positional else None
        self._convert = _converters(compiled, dialect)

    def parameters(self, values: Mapping[str, Any]) -> Any:
        if self._defaults:
            values = {**self._defaults, **values}
        if self._convert:
            values = {**values, **{n: c(values[n]) for n, c in self._convert if n in values}}
        if self._order is None:
            return {name: values[name] for name in self._names}  # a row may carry more
        return tuple(values[name] for name in self._order)


def _column_defaults(statement: Any, taken: set[str]) -> dict[str, Any]:
    """An INSERT's column defaults (SQLAlchemy applies them as it runs a statement; a driver
    does not): only constants, as the store's schema has."""
    if not getattr(statement, "is_insert", False):
        return {}
    found = {}
    for column in statement.table.columns:
        default = column.default
        if default is None or column.key in taken:
            continue
        if not default.is_scalar:
            raise TypeError(f"column {column.key!r} has a default the hot path cannot apply")
        found[column.key] = default.arg
    return found


def _converters(compiled: Any, dialect: Dialect) -> tuple[tuple[str, Any], ...]:
    """The parameters whose values the dialect converts, with the conversion of each."""
    found = []
    for bind in compiled.binds.values():
        convert = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if convert is not None and bind.key in compiled.params:
            found.append((bind.key, convert))
    return tuple(found)


Batch = tuple[Compiled, list[Mapping[str, Any]]]


class Transaction:
    """Compiled statements run on one driver cursor: rows come back as the driver gives them."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    def first(self, statement: Compiled, values: Mapping[str, Any]) -> tuple[Any, ...] | None:
        self._cursor.execute(statement.sql, statement.parameters(values))
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)

    def rows(self, statement: Compiled, values: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        self._cursor.execute(statement.sql, statement.parameters(values))
        return [tuple(row) for row in self._cursor.fetchall()]

    def many(self, statement: Compiled, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run a write once per row."""
        self._cursor.executemany(statement.sql, [statement.parameters(row) for row in rows])

    def count(self, statement: Compiled, values: Mapping[str, Any]) -> int:
        """Run a write; the number of rows it changed."""
        self._cursor.execute(statement.sql, statement.parameters(values))
        return int(self._cursor.rowcount)


class HotPath:
    """Driver connections for the per-step statements, shared across threads."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine  # unpooled: this class keeps its own connections
        self._free: list[PoolProxiedConnection] = []
        self._lock = threading.Lock()

    def execute_many(self, compiled: Compiled, rows: list[Mapping[str, Any]], *more: Batch) -> None:
        """Run one statement once per row, then each of ``more`` (a statement and its rows),
        all in one transaction."""
        with self._connection() as connection:
            cursor = connection.cursor()
            try:
                for statement, values in ((compiled, rows), *more):
                    if values:
                        cursor.executemany(statement.sql, [statement.parameters(v) for v in values])
            finally:
                cursor.close()
            connection.commit()

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """Statements run in one transaction, committed when the block ends without an error
        (a connection that fails is closed, so nothing of it is kept)."""
        with self._connection() as connection:
            cursor = connection.cursor()
            try:
                yield Transaction(cursor)
            finally:
                cursor.close()
            connection.commit()

    def close(self) -> None:
        with self._lock:
            free, self._free = self._free, []
        for connection in free:
            connection.close()
        self._engine.dispose()

    @contextmanager
    def _connection(self) -> Iterator[PoolProxiedConnection]:
        with self._lock:
            connection = self._free.pop() if self._free else None
        if connection is None:
            connection = self._engine.raw_connection()
        try:
            yield connection
        except BaseException:
            connection.invalidate()
            raise
        with self._lock:
            self._free.append(connection)
