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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.pool import PoolProxiedConnection
from sqlalchemy.sql import ClauseElement


class Compiled:
    """A statement compiled once for one dialect, with its parameters in driver order."""

    def __init__(self, statement: ClauseElement, dialect: Dialect, keys: list[str]) -> None:
        compiled: Any = statement.compile(dialect=dialect, column_keys=keys)
        self.sql: str = compiled.string
        self._keys = tuple(keys)  # a row may carry more than its statement takes
        self._order = tuple(compiled.positiontup or ()) if compiled.positional else None

    def parameters(self, values: Mapping[str, Any]) -> Any:
        if self._order is None:
            return {name: values[name] for name in self._keys}
        return tuple(values[name] for name in self._order)


Batch = tuple[Compiled, list[Mapping[str, Any]]]


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
