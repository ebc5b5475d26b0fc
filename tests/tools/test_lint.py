"""``lint_schema``: schema problems from names and types, never from values."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.demo._content import CUSTOMERS
from toolwire.workspace.config import Workspace

from .conftest import assert_artifacts_within_text, database_of, invoke


def test_the_demo_schema_findings(workspace: Workspace) -> None:
    result = invoke(workspace, "lint_schema")
    assert result.content == (
        "Schema problems in 13 tables (12 shown):\n"
        "- categories.parent_id: foreign key to categories.id has no index\n"
        "- categories.parent_id: foreign key to categories may be null\n"
        "- customers.api_token: named like a secret; nothing in its name says it is hashed or"
        " encrypted\n"
        "- order_lines.product_id: foreign key to products.id has no index\n"
        "- order_lines.order_id: foreign key to orders.id has no index\n"
        "- orders.customer_id: foreign key to customers.id has no index\n"
        "- product_categories.category_id: foreign key to categories.id has no index\n"
        "- product_images.product_id: foreign key to products.id has no index\n"
        "- staff.role_id: foreign key to roles.id has no index\n"
        "- staff.role_id: foreign key to roles may be null\n"
        "- staff.mfa_secret: named like a secret; nothing in its name says it is hashed or"
        " encrypted\n"
        "- wide: no primary key"
    )
    rows = result.artifacts[0].data["rows"]
    assert rows[-1] == ["wide", "", "no primary key"]
    assert "password_hash" not in result.content  # hashed, by its name
    assert "sessions" not in result.content  # a sensitive table is never mentioned
    for customer in CUSTOMERS:
        assert customer[4] not in result.content
    assert_artifacts_within_text(result)


@pytest.fixture
def clean(tmp_path: Path) -> Workspace:
    database = tmp_path / "clean.db"
    with sqlite3.connect(database) as db:
        db.executescript(
            """
            CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, password_bcrypt TEXT,
                                api_key_sha256 TEXT, token_encrypted BLOB);
            CREATE TABLE posts (id INTEGER PRIMARY KEY,
                                user_id INTEGER NOT NULL REFERENCES users(id));
            CREATE INDEX posts_user ON posts (user_id, id);
            CREATE TABLE tags (post_id INTEGER NOT NULL REFERENCES posts(id), tag TEXT NOT NULL,
                               PRIMARY KEY (post_id, tag));
            CREATE TABLE session_keys (id INTEGER PRIMARY KEY, value TEXT);
            CREATE TABLE grants (id INTEGER PRIMARY KEY,
                                 key_id INTEGER NOT NULL UNIQUE REFERENCES session_keys(id));
            """
        )
    db.close()
    return Workspace(database_url=f"sqlite:///{database}")


def test_indexed_and_hashed_schemas_are_clean(clean: Workspace) -> None:
    result = invoke(clean, "lint_schema")
    assert result.content == "No schema problems found in 4 tables."
    assert result.artifacts == ()


def test_a_foreign_key_index_must_start_with_its_columns(clean: Workspace) -> None:
    with database_of(clean) as db:
        db.execute("CREATE TABLE likes (id INTEGER PRIMARY KEY, post_id INT REFERENCES posts(id))")
        db.execute("CREATE INDEX likes_late ON likes (id, post_id)")
        db.execute("CREATE TABLE notes (body TEXT, apitoken TEXT)")
    result = invoke(clean, "lint_schema")
    assert result.artifacts[0].data["rows"] == [
        ["likes", "post_id", "foreign key to posts.id has no index"],
        ["likes", "post_id", "foreign key to posts may be null"],
        ["notes", "", "no primary key"],
        ["notes", "apitoken", "named like a secret; nothing in its name says it is hashed or"
         " encrypted"],
    ]  # fmt: skip


def test_without_a_database_it_fails_closed() -> None:
    assert invoke(Workspace(), "lint_schema").content == "Error: the workspace has no database."


def test_arguments_are_refused() -> None:
    result = invoke(Workspace(), "lint_schema", {"table": "x"})
    assert result.content == (
        'Error: invalid arguments for tool "lint_schema": table: Extra inputs are not permitted'
    )


NAMES = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(tables=st.lists(st.tuples(NAMES, st.lists(NAMES, max_size=4), st.booleans()), max_size=6))
def test_every_finding_in_the_artifact_is_a_line_of_the_text(
    tmp_path_factory: pytest.TempPathFactory, tables: list[tuple[str, list[str], bool]]
) -> None:
    database = tmp_path_factory.mktemp("lint") / "l.db"
    with sqlite3.connect(database) as db:
        for name, columns, keyed in {t[0]: t for t in tables}.values():
            wanted = ["id INTEGER PRIMARY KEY"] if keyed else []
            wanted += [f'"{c}" TEXT' for c in dict.fromkeys(columns) if c != "id"]
            wanted += [] if wanted else ["x TEXT"]
            db.execute(f'CREATE TABLE "t_{name}" ({", ".join(wanted)})')
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}")
    result = invoke(ws, "lint_schema")
    ws.dispose()
    lines = result.content.split("\n")
    for artifact in result.artifacts:
        assert_artifacts_within_text(result)
        for table, column, problem in artifact.data["rows"]:
            assert f"- {table}{'.' + column if column else ''}: {problem}" in lines
