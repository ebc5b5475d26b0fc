"""Account tools: ``list_users``, ``list_users_raw`` and ``list_roles``, from the tables the
workspace maps (``[accounts] users = "...", roles = "..."``).

Credential columns are never read: the same sensitive-name rule as every database tool drops
password hashes, MFA secrets, tokens and keys from every query, raw or not. ``list_users`` shows
the identity columns (the workspace's ``user_columns``, or the usual ones: key, name, e-mail,
role, active, last login); ``list_users_raw`` shows every other readable column too, is off by
default and admin-only like the others. The tables are the operator's choice, so their names
may look sensitive (Django's ``auth_user``); internal tables stay out of reach.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Column, Engine, Table, func, select

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, echo, workspace_of
from toolwire.tools.builtin._sql import (
    engine_of,
    fetch_rows,
    mapped_table,
    order_columns,
    readable_columns,
)
from toolwire.tools.builtin.records import MAX_LIMIT, MAX_OFFSET, render_rows
from toolwire.workspace.maps import AccountMap

IDENTITY_COLUMNS = (
    "id", "uid", "username", "user_name", "login", "name", "display_name", "full_name",
    "first_name", "last_name", "email", "role", "roles", "role_id", "group", "group_id",
    "is_admin", "admin", "is_staff", "is_superuser", "active", "is_active", "enabled",
    "disabled", "locked", "is_locked", "last_login", "last_login_at", "created_at", "date_joined",
)  # fmt: skip

Limit = Annotated[int, Field(ge=1, description=f"rows to return (at most {MAX_LIMIT})")]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]


def _accounts(context: ToolContext, part: str) -> tuple[Engine, Table, AccountMap]:
    mapping = workspace_of(context).accounts
    name = getattr(mapping, part, None) if mapping else None
    if mapping is None or name is None:
        raise ToolRefusal(f"the workspace names no {part} table.")
    engine = engine_of(context)
    return engine, mapped_table(engine, name), mapping


@builtin(group="accounts", data_class="secret_adjacent", integrity="untrusted", requires_admin=True)
def list_users(context: ToolContext, limit: Limit = 20, offset: Offset = 0) -> ToolResult:
    """The application's users: who they are, their role and whether they are active; never a
    credential.

    Artifact: ``table`` ``{columns, rows}``, the same cells as the text.
    """
    engine, table, mapping = _accounts(context, "users")
    readable = {c.name: c for c in readable_columns(table)}
    wanted = mapping.user_columns or tuple(c for c in readable if c.lower() in IDENTITY_COLUMNS)
    columns = [readable[n] for n in wanted if n in readable]
    missing = [echo(n) for n in wanted if n not in readable]
    notes = [f"Columns not readable: {', '.join(missing)}"] if missing else []
    chosen = columns or list(readable.values())
    return _list(engine, table, chosen, limit=limit, offset=offset, notes=notes)


@builtin(
    integrity="untrusted",
    group="accounts",
    data_class="secret_adjacent",
    requires_admin=True,
    enabled_by_default=False,
)
def list_users_raw(context: ToolContext, limit: Limit = 20, offset: Offset = 0) -> ToolResult:
    """Every readable column of the application's users; credential columns are still never
    read. Disabled unless an operator enables it.

    Artifact: ``table`` ``{columns, rows}``, the same cells as the text.
    """
    engine, table, _ = _accounts(context, "users")
    return _list(engine, table, readable_columns(table), limit=limit, offset=offset, notes=[])


def _list(
    engine: Engine,
    table: Table,
    columns: Sequence[Column[Any]],
    *,
    limit: int,
    offset: int,
    notes: list[str],
) -> ToolResult:
    if not columns:
        raise ToolRefusal(f"no readable columns in the users table {echo(table.name)}.")
    take = min(limit, MAX_LIMIT)
    query = select(*columns).order_by(*order_columns(table)).limit(take).offset(offset)
    rows = fetch_rows(engine, query)
    notes = [*notes, *([f"limit capped at {MAX_LIMIT}"] if limit > MAX_LIMIT else [])]
    names = [c.name for c in columns]
    heading = f"Users in {table.name}"
    return render_rows(
        table.name,
        names,
        rows,
        offset,
        notes,
        heading=lambda n: f"{heading} ({n}, offset {offset}):",
    )


@builtin(group="accounts", data_class="secret_adjacent", integrity="untrusted", requires_admin=True)
def list_roles(context: ToolContext) -> ToolResult:
    """The application's roles (or groups), with how many users have each when the users
    table refers to the roles table.

    Artifact: ``table`` ``{columns, rows}``, the same cells as the text.
    """
    engine, roles, mapping = _accounts(context, "roles")
    columns = readable_columns(roles)
    if not columns:
        raise ToolRefusal(f"no readable columns in the roles table {echo(roles.name)}.")
    members = _member_count(engine, roles, mapping)
    selected = [*columns, members] if members is not None else columns
    query = select(*selected).order_by(*order_columns(roles)).limit(MAX_LIMIT)
    rows = fetch_rows(engine, query)
    names = [c.name for c in columns] + (["users"] if members is not None else [])
    return render_rows(
        roles.name, names, rows, 0, heading=lambda n: f"Roles in {roles.name} ({n}):"
    )


def _member_count(engine: Engine, roles: Table, mapping: AccountMap) -> Any:
    """How many users refer to each role, as a correlated count; None when the users table
    is not mapped or has no readable single-column foreign key to the roles table."""
    if mapping.users is None:
        return None
    users = mapped_table(engine, mapping.users)
    readable = {c.name for c in readable_columns(users)} | {c.name for c in readable_columns(roles)}
    for key in users.foreign_keys:
        if key.column.table.name == roles.name and {key.parent.name, key.column.name} <= readable:
            link = users.c[key.parent.name] == roles.c[key.column.name]
            count = select(func.count()).select_from(users).where(link)
            return count.scalar_subquery().label("users")
    return None
