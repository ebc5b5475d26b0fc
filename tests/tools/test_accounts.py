"""``list_users``, ``list_users_raw`` and ``list_roles``: credentials are never read."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.demo._content import STAFF
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace, load_workspace
from toolwire.workspace.maps import AccountMap

from .conftest import assert_artifacts_within_text, database_of, invoke

CREDENTIALS = [s[4] for s in STAFF] + [s[5] for s in STAFF if s[5]]


@pytest.fixture
def staffed(workspace: Workspace) -> Workspace:
    return dataclasses.replace(workspace, accounts=AccountMap(users="staff", roles="roles"))


def test_users_show_identity_columns_only(staffed: Workspace) -> None:
    result = invoke(staffed, "list_users")
    table = result.artifacts[0].data
    assert table["columns"] == [
        "id", "username", "display_name", "email", "role_id", "active", "last_login",
    ]  # fmt: skip
    assert table["rows"][0] == ["1", "grace", "Grace Hopper", "***@***", "1", "1",
                                "2026-03-09 10:02:40"]  # fmt: skip
    assert result.content.startswith("Users in staff (3, offset 0):\n- staff row 1\n  id: 1\n")
    assert "phone" not in result.content and "Owner" not in result.content
    for secret in CREDENTIALS:
        assert secret not in result.content
    assert "password_hash" not in result.content and "mfa_secret" not in result.content
    assert_artifacts_within_text(result)


def test_raw_users_show_every_readable_column_but_credentials(staffed: Workspace) -> None:
    result = invoke(staffed, "list_users_raw", {"limit": 1, "offset": 1})
    table = result.artifacts[0].data
    assert table["columns"] == [
        "id", "username", "display_name", "email", "role_id", "active", "last_login", "phone",
        "notes",
    ]  # fmt: skip
    assert table["rows"] == [["2", "linus", "Linus", "***@***", "2", "1", "null", "null",
                              "Edits the catalogue"]]  # fmt: skip
    for secret in CREDENTIALS:
        assert secret not in result.content
    assert_artifacts_within_text(result)


def test_the_raw_variant_is_off_by_default_and_every_one_is_admin_only() -> None:
    registry = ToolRegistry(builtin_tools())
    for name in ("list_users", "list_users_raw", "list_roles"):
        tool = registry.get(name)
        assert tool is not None
        assert (tool.group, tool.data_class, tool.requires_admin) == (
            "accounts", "secret_adjacent", True,
        )  # fmt: skip
        assert tool.enabled_by_default is (name != "list_users_raw")


def test_chosen_user_columns(staffed: Workspace) -> None:
    columns = ("username", "notes", "password_hash", "nope")
    ws = dataclasses.replace(staffed, accounts=AccountMap(users="staff", user_columns=columns))
    result = invoke(ws, "list_users")
    assert result.artifacts[0].data["columns"] == ["username", "notes"]
    assert result.content.startswith(
        "Users in staff (3, offset 0):\nColumns not readable: 'password_hash', 'nope'\n"
    )


def test_roles_with_their_member_counts(staffed: Workspace) -> None:
    with database_of(staffed) as db:
        db.execute("UPDATE staff SET role_id = 1 WHERE id = 2")
    result = invoke(staffed, "list_roles")
    assert result.artifacts[0].data == {
        "columns": ["id", "name", "description", "users"],
        "rows": [["1", "admin", "Everything", "2"], ["2", "editor", "Products and orders", "0"],
                 ["3", "support", "Read only", "1"]],
    }  # fmt: skip
    assert result.content.startswith("Roles in roles (3):\n- roles row 1\n  id: 1\n  name: admin")
    assert_artifacts_within_text(result)
    alone = dataclasses.replace(staffed, accounts=AccountMap(roles="roles"))
    assert invoke(alone, "list_roles").artifacts[0].data["columns"] == ["id", "name", "description"]


def test_a_table_with_a_sensitive_name_may_be_mapped(tmp_path: Path) -> None:
    database = tmp_path / "django.db"
    with sqlite3.connect(database) as db:
        db.execute(
            "CREATE TABLE auth_user (id INTEGER PRIMARY KEY, username TEXT, password TEXT,"
            " is_superuser INT, last_login TEXT)"
        )
        db.execute("INSERT INTO auth_user VALUES (1, 'ada', 'pbkdf2_sha256$x$y', 1, NULL)")
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}", accounts=AccountMap(users="auth_user"))
    result = invoke(ws, "list_users")
    ws.dispose()
    assert result.artifacts[0].data["columns"] == ["id", "username", "is_superuser", "last_login"]
    assert "pbkdf2" not in result.content
    asked = invoke(ws, "read_records", {"table": "auth_user"})
    assert asked.content == "Error: table 'auth_user' not found or not permitted."


@pytest.mark.parametrize(
    ("accounts", "tool", "error"),
    [
        (None, "list_users", "the workspace names no users table."),
        (AccountMap(roles="roles"), "list_users", "the workspace names no users table."),
        (AccountMap(users="staff"), "list_roles", "the workspace names no roles table."),
        (AccountMap(users="nowhere"), "list_users",
         "the workspace's table 'nowhere' is not found or not permitted."),
        (AccountMap(users="sqlite_master"), "list_users",
         "the workspace's table 'sqlite_master' is not found or not permitted."),
    ],
)  # fmt: skip
def test_refusals(workspace: Workspace, accounts: AccountMap | None, tool: str, error: str) -> None:
    ws = dataclasses.replace(workspace, accounts=accounts)
    assert invoke(ws, tool).content == "Error: " + error


def test_sessions_mapped_as_users_still_never_show_the_token(workspace: Workspace) -> None:
    ws = dataclasses.replace(workspace, accounts=AccountMap(users="sessions"))
    result = invoke(ws, "list_users_raw")
    assert result.artifacts[0].data["columns"] == ["id", "customer_id"]
    assert "sess_9f8e7d6c" not in result.content


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ({"offset": -1}, "offset: Input should be greater than or equal to 0"),
        ({"table": "customers"}, "table: Extra inputs are not permitted"),
    ],
)
def test_malformed_arguments(staffed: Workspace, arguments: dict[str, Any], error: str) -> None:
    result = invoke(staffed, "list_users", arguments)
    assert result.content == f'Error: invalid arguments for tool "list_users": {error}'


def test_the_accounts_section_loads_from_toml(tmp_path: Path) -> None:
    (tmp_path / "workspace.toml").write_text(
        '[accounts]\nusers = "auth_user"\nroles = "auth_group"\nuser_columns = ["username"]\n'
    )
    assert load_workspace(tmp_path / "workspace.toml").accounts == AccountMap(
        users="auth_user", roles="auth_group", user_columns=("username",)
    )


CELLS = st.one_of(
    st.text(max_size=30), st.integers(-(2**63), 2**63 - 1), st.none(),
    st.sampled_from(["a@b.example", "sk-abcdefghijklmnopqrstuv", "x" * 400]),
)  # fmt: skip


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(st.tuples(CELLS, CELLS, CELLS), min_size=1, max_size=10))
def test_every_artifact_cell_is_in_the_text(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[Any, Any, Any]]
) -> None:
    database = tmp_path_factory.mktemp("users") / "u.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE u (id INTEGER PRIMARY KEY, name, email, password)")
        db.executemany("INSERT INTO u (name, email, password) VALUES (?, ?, ?)", rows)
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}", accounts=AccountMap(users="u"))
    for tool in ("list_users", "list_users_raw"):
        result = invoke(ws, tool, {"limit": 50})
        assert_artifacts_within_text(result)
        lines = result.content.split("\n")
        for row in result.artifacts[0].data["rows"]:
            for column, cell in zip(result.artifacts[0].data["columns"], row, strict=True):
                assert f"  {column}: {cell}" in lines
        assert "password" not in result.artifacts[0].data["columns"]
    ws.dispose()
