from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import ArtifactType
from toolwire.demo._content import CUSTOMERS
from toolwire.tools.builtin._sensitive import is_sensitive
from toolwire.workspace.config import Workspace

from .conftest import invoke

SECRETS = [c[3] for c in CUSTOMERS] + [c[4] for c in CUSTOMERS]
INVALID_FILTER = (
    "Error: invalid filter: at most 5 entries, each an existing, non-sensitive column with a "
    "scalar value."
)


def assert_no_secret(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text


def test_read_records_text_and_table_from_the_same_cells(workspace: Workspace) -> None:
    result = invoke(
        workspace, "read_records", {"table": "products", "fields": ["sku", "stock"], "limit": 2}
    )
    assert not result.is_error
    assert result.content == (
        "Records in products (2, offset 0):\n"
        "- products row 1\n  sku: MUG-01\n  stock: 40\n"
        "- products row 2\n  sku: TEE-02\n  stock: 15"
    )
    (artifact,) = result.artifacts
    assert artifact.type is ArtifactType.TABLE
    assert artifact.label == "products records"
    assert artifact.data == {
        "columns": ["sku", "stock"],
        "rows": [["MUG-01", "40"], ["TEE-02", "15"]],
    }


def test_default_fields_leave_out_sensitive_columns(workspace: Workspace) -> None:
    result = invoke(workspace, "read_records", {"table": "customers"})
    assert result.artifacts[0].data["columns"] == ["id", "name", "email", "city", "created_at"]
    assert_no_secret(result.content)
    assert_no_secret(repr(result.artifacts[0].data))


@pytest.mark.parametrize(
    "field",
    ["password_hash", "PASSWORD_HASH", "Password_Hash", '"password_hash"', "`password_hash`",
     "[password_hash]", "password_hash ", "api_token", "customers.api_token", "api_token--",
     "password_hash AS name", "*", "name, password_hash"],
)  # fmt: skip
def test_sensitive_fields_are_never_read_however_asked(workspace: Workspace, field: str) -> None:
    result = invoke(workspace, "read_records", {"table": "customers", "fields": ["name", field]})
    assert not result.is_error
    assert result.artifacts[0].data["columns"] == ["name"]
    assert "Fields not readable (unknown or sensitive):" in result.content
    assert_no_secret(result.content)


def test_only_sensitive_fields_gives_no_readable_fields(workspace: Workspace) -> None:
    result = invoke(workspace, "read_records", {"table": "customers", "fields": ["api_token"]})
    assert result.is_error and result.artifacts == ()
    assert result.content == "Error: no readable fields in table 'customers'."


@pytest.mark.parametrize(
    "table",
    ["sessions", "SESSIONS", "sqlite_master", "customers; DROP TABLE customers", "customers --",
     '"customers"', "main.customers", "nope", "customers WHERE 1=1", ""],
)  # fmt: skip
def test_sensitive_unknown_or_injected_tables_are_refused(workspace: Workspace, table: str) -> None:
    result = invoke(workspace, "read_records", {"table": table})
    assert result.is_error
    assert result.content.endswith("not found or not permitted.")
    assert "sess_9f8e7d6c" not in result.content
    assert invoke(workspace, "count_records", {"table": "customers"}).content == (
        "customers: 4 rows match."
    )


@pytest.mark.parametrize(
    "value", ["1 OR 1=1", "1' OR '1'='1", "Ada Lovelace' --", "%", "'; DROP TABLE customers; --"]
)
def test_filter_values_are_bound_never_interpolated(workspace: Workspace, value: str) -> None:
    result = invoke(
        workspace, "read_records", {"table": "customers", "where_equals": {"name": value}}
    )
    assert result.content == "No records in customers for the given filters."
    assert invoke(workspace, "count_records", {"table": "customers"}).content == (
        "customers: 4 rows match."
    )


def test_equality_filter_finds_the_row(workspace: Workspace) -> None:
    result = invoke(
        workspace,
        "read_records",
        {"table": "customers", "fields": ["name"], "where_equals": {"city": "London", "id": 1}},
    )
    assert result.artifacts[0].data["rows"] == [["Ada Lovelace"]]


@pytest.mark.parametrize(
    "where",
    [
        {"password_hash": CUSTOMERS[0][3]},
        {"API_TOKEN": "x"},
        {"name = name OR 1": 1},
        {"nope": 1},
        {"": 1},
    ],
)
def test_bad_filter_keys_reject_the_whole_call(workspace: Workspace, where: dict[str, Any]) -> None:
    result = invoke(workspace, "read_records", {"table": "customers", "where_equals": where})
    assert result.is_error and result.content == INVALID_FILTER
    assert (
        invoke(workspace, "count_records", {"table": "customers", "where_equals": where}).content
        == INVALID_FILTER
    )


def test_six_filters_are_too_many(workspace: Workspace) -> None:
    where = {f"c{n}": n for n in range(1, 6)}
    ok = invoke(workspace, "read_records", {"table": "wide", "where_equals": where})
    assert ok.artifacts[0].data["rows"] == [["1", "2", "3", "4", "5", "6"]]
    where["c6"] = 6
    too_many = invoke(workspace, "read_records", {"table": "wide", "where_equals": where})
    assert too_many.content == INVALID_FILTER


@pytest.mark.parametrize("value", [[1, 2], {"$ne": 1}])
def test_non_scalar_filter_values_are_argument_errors(workspace: Workspace, value: Any) -> None:
    result = invoke(
        workspace, "read_records", {"table": "customers", "where_equals": {"id": value}}
    )
    assert result.is_error
    assert result.content.startswith(
        'Error: invalid arguments for tool "read_records": where_equals.'
    )


def test_huge_limit_is_capped_at_50(workspace: Workspace) -> None:
    result = invoke(workspace, "read_records", {"table": "notes", "limit": 10**12})
    assert len(result.artifacts[0].data["rows"]) == 50
    assert result.content.startswith("Records in notes (50, offset 0):\nlimit capped at 50\n")


def test_default_limit_is_20_and_offset_pages(workspace: Workspace) -> None:
    result = invoke(workspace, "read_records", {"table": "notes", "offset": 55})
    assert result.artifacts[0].data["rows"] == [[str(n), f"note {n - 1}"] for n in range(56, 61)]
    assert (
        len(invoke(workspace, "read_records", {"table": "notes"}).artifacts[0].data["rows"]) == 20
    )


@pytest.mark.parametrize(
    "arguments",
    [{"table": "notes", "limit": "10; DROP TABLE notes"}, {"table": "notes", "limit": 0},
     {"table": "notes", "limit": -5}, {"table": "notes", "offset": 10**6},
     {"table": ["notes"]}, {"table": "notes", "fields": "body"}, {}, {"table": "notes", "x": 1}],
)  # fmt: skip
def test_wrong_types_are_argument_errors(workspace: Workspace, arguments: dict[str, Any]) -> None:
    result = invoke(workspace, "read_records", arguments)
    assert result.is_error
    assert result.content.startswith('Error: invalid arguments for tool "read_records": ')
    assert invoke(workspace, "count_records", {"table": "notes"}).content == "notes: 60 rows match."


def test_search_escapes_like_wildcards(workspace: Workspace) -> None:
    hits = invoke(workspace, "search_records", {"table": "customers", "query": "LOVELACE"})
    assert [r[1] for r in hits.artifacts[0].data["rows"]] == ["Ada Lovelace"]
    for wildcard in ("%", "_", "\\"):
        miss = invoke(workspace, "search_records", {"table": "customers", "query": wildcard})
        assert miss.content == "No records in customers for the given filters."


def test_search_never_matches_on_sensitive_columns(workspace: Workspace) -> None:
    token = CUSTOMERS[0][4]
    result = invoke(workspace, "search_records", {"table": "customers", "query": token})
    assert result.content == "No records in customers for the given filters."
    assert invoke(workspace, "search_records", {"table": "customers", "query": ""}).content == (
        "Error: query must be 1 to 200 characters."
    )


def test_without_database_the_tools_fail_closed(tmp_path: Path) -> None:
    assert invoke(Workspace(), "read_records", {"table": "x"}).content == (
        "Error: the workspace has no database."
    )
    assert invoke(None, "count_records", {"table": "x"}).content == (
        "Error: no workspace is configured for this run."
    )


def test_a_broken_database_gives_a_generic_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database file" * 100)
    ws = Workspace(database_url=f"sqlite:///{broken}")
    result = invoke(ws, "list_tables")
    ws.dispose()
    assert result.content == "Error: the workspace database could not be read."


@pytest.mark.parametrize(
    ("name", "sensitive"),
    [("password", True), ("userPassword", True), ("pwd", True), ("api_key", True),
     ("apiKey", True), ("ACCESS_TOKEN", True), ("salt2", True), ("sessions", True),
     ("otp_seed", True), ("x_clientsecret", True), ("keyboard", False), ("monkey", False),
     ("hashtag", False), ("name", False), ("tokenizer", False), ("email", False)],
)  # fmt: skip
def test_sensitive_name_rule(name: str, sensitive: bool) -> None:
    assert is_sensitive(name) is sensitive


HOSTILE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "\n\n", "null", "'; DROP TABLE t; --", "\x00", "…", "a" * 400]),
    st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), st.none(), st.booleans(),
)  # fmt: skip


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(st.tuples(HOSTILE, HOSTILE), min_size=1, max_size=8))
def test_every_artifact_cell_appears_in_the_text(
    tmp_path: Path, rows: list[tuple[Any, Any]]
) -> None:
    database = tmp_path / "prop.db"
    database.unlink(missing_ok=True)
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, a, b)")
        db.executemany("INSERT INTO t (a, b) VALUES (?, ?)", rows)
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}")
    result = invoke(ws, "read_records", {"table": "t", "limit": 50})
    ws.dispose()
    (artifact,) = result.artifacts
    assert len(artifact.data["rows"]) == len(rows)
    lines = result.content.split("\n")
    for row in artifact.data["rows"]:
        for column, cell in zip(artifact.data["columns"], row, strict=True):
            assert f"  {column}: {cell}" in lines
