"""``record_history``: one record's changes, from the history table the workspace names."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core.errors import ConfigError
from toolwire.demo._content import CUSTOMERS, HISTORY
from toolwire.workspace.config import Workspace, load_workspace
from toolwire.workspace.maps import HistoryMap

from .conftest import assert_artifacts_within_text, database_of, invoke

ADA_HASH = CUSTOMERS[0][3]
OLD_HASH = HISTORY[1][3]
HIDDEN = "the workspace's history table is not found or not permitted."
MAPPED = HistoryMap(table="record_history", field_column="field", time_column="changed_at")


@pytest.fixture
def audited(workspace: Workspace) -> Workspace:
    return dataclasses.replace(workspace, history=MAPPED)


def test_the_changes_of_one_record_oldest_first(audited: Workspace) -> None:
    result = invoke(audited, "record_history", {"table": "customers", "id": 1})
    assert result.content.startswith("History of customers row 1 (3 changes, oldest first):\n")
    table = result.artifacts[0].data
    assert table["columns"] == [
        "id", "table_name", "record_id", "field", "old_value", "new_value", "changed_by",
        "changed_at",
    ]  # fmt: skip
    assert table["rows"] == [
        ["1", "customers", "1", "city", "Paris", "London", "***@***", "2026-02-01 09:30:00"],
        ["2", "customers", "1", "password_hash", "withheld", "withheld", "withheld",
         "2026-02-11 18:02:44"],
        ["4", "customers", "1", "email", "***@***", "***@***", "***@***", "2026-03-02 08:15:10"],
    ]  # fmt: skip
    assert "  field: password_hash\n  old_value: withheld\n  new_value: withheld\n" in (
        result.content
    )
    assert ADA_HASH not in result.content and OLD_HASH not in result.content
    assert "argon2" not in result.content
    assert_artifacts_within_text(result)


def test_another_table_and_a_record_without_changes(audited: Workspace) -> None:
    result = invoke(audited, "record_history", {"table": "products", "id": "2"})
    assert result.content.startswith("History of products row '2' (1 changes, oldest first):")
    assert result.artifacts[0].data["rows"][0][3:6] == ["price_cents", "2200", "2500"]
    none = invoke(audited, "record_history", {"table": "orders", "id": 1})
    assert none.content == "No recorded changes of orders row 1." and none.artifacts == ()


def test_the_limit_is_bounded(audited: Workspace) -> None:
    one = invoke(audited, "record_history", {"table": "customers", "id": 1, "limit": 1})
    assert len(one.artifacts[0].data["rows"]) == 1
    many = invoke(audited, "record_history", {"table": "customers", "id": 1, "limit": 10**6})
    assert many.content.startswith("History of customers row 1 (3 changes")
    assert "limit capped at 50" in many.content


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"table": "sessions", "id": 1}, "Error: table 'sessions' not found or not permitted."),
        ({"table": "nowhere", "id": 1}, "Error: table 'nowhere' not found or not permitted."),
        ({"table": "customers'--", "id": 1},
         "Error: table \"customers'--\" not found or not permitted."),
        ({"table": "customers", "id": [1]},
         'Error: invalid arguments for tool "record_history": id.int: Input should be a valid'
         " integer; id.str: Input should be a valid string"),
        ({"table": "customers"},
         'Error: invalid arguments for tool "record_history": id: Field required'),
        ({"table": "customers", "id": 1, "limit": 0},
         'Error: invalid arguments for tool "record_history": limit: Input should be greater'
         " than or equal to 1"),
    ],
)  # fmt: skip
def test_refusals(audited: Workspace, arguments: dict[str, Any], error: str) -> None:
    assert invoke(audited, "record_history", arguments).content == error


def test_without_a_history_table_it_fails_closed(workspace: Workspace) -> None:
    result = invoke(workspace, "record_history", {"table": "customers", "id": 1})
    assert result.content == "Error: the workspace names no history table."


@pytest.mark.parametrize(
    ("mapping", "error"),
    [
        (HistoryMap(table="sessions"), HIDDEN),
        (HistoryMap(table="nowhere"), HIDDEN),
        (HistoryMap(table="record_history", record_column="row"),
         "the history table has no readable column for history.record_column."),
        (HistoryMap(table="record_history", field_column="what"),
         "the history table has no readable column for history.field_column."),
        (HistoryMap(table="record_history", time_column="when"),
         "the history table has no readable column for history.time_column."),
    ],
)  # fmt: skip
def test_a_bad_mapping_is_refused_clearly(
    workspace: Workspace, mapping: HistoryMap, error: str
) -> None:
    ws = dataclasses.replace(workspace, history=mapping)
    assert (
        invoke(ws, "record_history", {"table": "customers", "id": 1}).content == "Error: " + error
    )


def test_sensitive_history_columns_are_never_read(workspace: Workspace, tmp_path: Path) -> None:
    with database_of(workspace) as db:
        db.execute(
            "CREATE TABLE audit (id INTEGER PRIMARY KEY, table_name TEXT, record_id INT,"
            " diff TEXT, token_before TEXT)"
        )
        db.execute(
            "INSERT INTO audit VALUES (1, 'customers', 1,"
            ' \'{"city": "Rome", "api_token": "tok-canary-1"}\', \'tok-canary-2\')'
        )
    ws = dataclasses.replace(workspace, history=HistoryMap(table="audit"))
    result = invoke(ws, "record_history", {"table": "customers", "id": 1})
    assert result.artifacts[0].data["columns"] == ["id", "table_name", "record_id", "diff"]
    assert '"city": "Rome"' in result.content and '"api_token": "***"' in result.content
    assert "tok-canary" not in result.content


def test_the_history_section_loads_from_toml(tmp_path: Path) -> None:
    (tmp_path / "workspace.toml").write_text(
        '[history]\ntable = "audit"\nrecord_column = "row_id"\nfield_column = "column"\n'
    )
    loaded = load_workspace(tmp_path / "workspace.toml").history
    assert loaded == HistoryMap(table="audit", record_column="row_id", field_column="column")
    (tmp_path / "bad.toml").write_text('[history]\ntabel = "audit"\n')
    with pytest.raises(
        ConfigError, match=r"history\.table: Field required; history\.tabel: unknown"
    ):
        load_workspace(tmp_path / "bad.toml")


VALUES = st.one_of(
    st.text(max_size=40), st.sampled_from(["", "null", "\n\n", "…", "a" * 400]),
    st.integers(-(2**40), 2**40), st.none(),
)  # fmt: skip
FIELDS = st.sampled_from(["city", "password", "api_token", "name", "secret", "notes"])


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(changes=st.lists(st.tuples(FIELDS, VALUES, VALUES), min_size=1, max_size=8))
def test_every_artifact_cell_is_in_the_text(
    tmp_path_factory: pytest.TempPathFactory, changes: list[tuple[str, Any, Any]]
) -> None:
    database = tmp_path_factory.mktemp("history") / "h.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
        db.execute(
            "CREATE TABLE h (id INTEGER PRIMARY KEY, table_name TEXT, record_id INT,"
            " field TEXT, old_value, new_value)"
        )
        db.executemany(
            "INSERT INTO h (table_name, record_id, field, old_value, new_value)"
            " VALUES ('t', 7, ?, ?, ?)",
            changes,
        )
    db.close()
    ws = Workspace(
        database_url=f"sqlite:///{database}",
        history=HistoryMap(table="h", field_column="field"),
    )
    result = invoke(ws, "record_history", {"table": "t", "id": 7, "limit": 50})
    ws.dispose()
    assert_artifacts_within_text(result)
    lines = result.content.split("\n")
    for row in result.artifacts[0].data["rows"]:
        for column, cell in zip(result.artifacts[0].data["columns"], row, strict=True):
            assert f"  {column}: {cell}" in lines
        if row[3] in ("password", "api_token", "secret"):
            assert row[4:] == ["withheld", "withheld"]
