"""Tool availability in the store: sparse overrides that enable or disable a tool or a group.

No row means the registry's default; a row says enabled or disabled. Setting None removes the
override. Names are checked against their column before any SQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, Table, delete, insert, select

from toolwire.store import schema
from toolwire.store.engine import errors
from toolwire.tools.registry import Availability


def load(engine: Engine) -> Availability:
    with errors("read tool states"), engine.connect() as connection:
        tools: dict[str, Any] = dict(connection.execute(select(schema.tool_state)).all())
        groups: dict[str, Any] = dict(connection.execute(select(schema.tool_group_state)).all())
    return Availability(tools=_flags(tools), groups=_flags(groups))


def set_state(engine: Engine, table: Table, what: str, name: str, enabled: bool | None) -> None:
    """Override the state of the tool or group (``what``) ``name``; None removes the override."""
    if not name or len(name) > schema.NAME_CHARS:
        raise ValueError(f"a {what} name must be 1 to {schema.NAME_CHARS} characters long")
    with errors(f"set the state of {what} {name!r}"), engine.begin() as connection:
        connection.execute(delete(table).where(table.c.name == name))
        if enabled is not None:
            connection.execute(insert(table).values(name=name, enabled=enabled))


def _flags(rows: dict[str, Any]) -> dict[str, bool]:
    return {name: bool(enabled) for name, enabled in rows.items()}
