"""Sensitive columns and tables: normalised names, words and compounds, never returned and never
usable in filters; readable cells are masked by JSON key and by the redactor."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire.tools.builtin._sensitive import SENSITIVE_PARTS, is_sensitive, safe_cell
from toolwire.workspace.config import Workspace

from .conftest import invoke

SENSITIVE_COLUMNS = [
    "pwhash", "hashed_pw", "resettoken", "sessionid", "mfasecret", "apisecret", "privkey",
    "SECRETVALUE", "pass", "p\u0430ssword", "userPw", "p\u00e4sswd", "\u03c1asswd",
    "\uff30\uff21\uff33\uff33\uff37\uff2f\uff32\uff24",  # full-width PASSWORD
    "auth", "cookie", "sid", "otp", "salt", "key", "credential", "session_data",
]  # fmt: skip
BENIGN_COLUMNS = [
    "passenger_count", "author", "keyboard_layout", "monkey", "email_verified", "created_at",
    "description", "secretary_name", "compass_heading", "authored_at", "hashtag", "side",
    "keynote", "salted", "passage", "bypass_count", "tokenizer", "pinned", "considered",
]  # fmt: skip
NOTES = "call ada at ada@example.com, api_key=zz9top"
PROFILE = json.dumps({"theme": "dark", "api_token": "tok-123", "nested": {"password": "p"}})


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Workspace]:
    database = tmp_path / "vault.db"
    columns = ", ".join(f'"{name}" TEXT' for name in [*SENSITIVE_COLUMNS, *BENIGN_COLUMNS])
    with sqlite3.connect(database) as db:
        db.execute(f"CREATE TABLE people (id INTEGER PRIMARY KEY, notes, profile, {columns})")
        values = [f"secret-{n}" for n in range(len(SENSITIVE_COLUMNS))] + ["plain"] * len(
            BENIGN_COLUMNS
        )
        marks = ", ".join("?" * (2 + len(values)))
        db.execute(f"INSERT INTO people VALUES (1, {marks})", [NOTES, PROFILE, *values])
        db.execute("CREATE TABLE usertokens (id INTEGER PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO usertokens (value) VALUES ('tok-usertokens')")
    db.close()
    workspace = Workspace(database_url=f"sqlite:///{database}")
    yield workspace
    workspace.dispose()


def test_sensitive_columns_are_never_returned(vault: Workspace) -> None:
    result = invoke(vault, "read_records", {"table": "people"})
    assert "secret-" not in result.content
    (artifact,) = result.artifacts
    assert artifact.data["columns"] == ["id", "notes", "profile", *BENIGN_COLUMNS]


@pytest.mark.parametrize("column", SENSITIVE_COLUMNS)
def test_sensitive_columns_are_refused_as_fields_and_filters(vault: Workspace, column: str) -> None:
    asked = invoke(vault, "read_records", {"table": "people", "fields": [column]})
    assert asked.content == "Error: no readable fields in table 'people'."
    filtered = invoke(vault, "count_records", {"table": "people", "where_equals": {column: "x"}})
    assert filtered.content == (
        "Error: invalid filter: at most 5 entries, each an existing, non-sensitive column "
        "with a scalar value."
    )


def test_a_table_named_for_tokens_is_not_found(vault: Workspace) -> None:
    result = invoke(vault, "read_records", {"table": "usertokens"})
    assert result.content == "Error: table 'usertokens' not found or not permitted."
    assert "usertokens" not in invoke(vault, "list_tables").content


def test_schema_withholds_sensitive_columns(vault: Workspace) -> None:
    schema = invoke(vault, "get_table_schema", {"table": "people"}).content
    for column in SENSITIVE_COLUMNS:
        assert f"- {column}: withheld (sensitive)" in schema
    for column in BENIGN_COLUMNS:
        assert f"- {column}: TEXT, nullable yes, primary key no" in schema


def test_json_cells_are_masked_by_key_and_text_cells_redacted(vault: Workspace) -> None:
    fields = ["notes", "profile"]
    result = invoke(vault, "read_records", {"table": "people", "fields": fields})
    assert result.content == (
        "Records in people (1, offset 0):\n- people row 1\n"
        "  notes: call ada at ***@***, api_key=***\n"
        '  profile: {"theme": "dark", "api_token": "***", "nested": {"password": "***"}}'
    )


@pytest.mark.parametrize("name", BENIGN_COLUMNS)
def test_benign_names_stay_readable(name: str) -> None:
    assert not is_sensitive(name)


LOOKALIKES = {
    "a": "\u0430",
    "e": "\u0435",
    "o": "\u043e",
    "p": "\u0440",
    "c": "\u0441",
    "x": "\u0445",
    "i": "\u0456",
    "s": "\u0455",
}
FULLWIDTH: dict[int, str] = {c: chr(c + 0xFEE0) for c in range(33, 127)}
words = st.sampled_from(sorted(SENSITIVE_PARTS))
benign = st.sampled_from(["user", "account", "reset", "", "primary", "x"])


@given(word=words, before=benign, after=benign, style=st.integers(0, 3))
def test_a_sensitive_word_is_found_however_it_is_spelt(
    word: str, before: str, after: str, style: int
) -> None:
    spelt = {
        0: word.upper(),
        1: "".join(LOOKALIKES.get(c, c) for c in word),
        2: word.translate(FULLWIDTH),
        3: word.capitalize(),
    }[style]
    name = "_".join(part for part in (before, spelt, after) if part)
    assert is_sensitive(name)


json_values = st.recursive(
    st.text(max_size=10),
    lambda inner: st.dictionaries(st.text(max_size=8), inner, max_size=4) | st.lists(inner),
    max_leaves=12,
)


@given(json_values)
def test_json_values_under_sensitive_keys_never_survive(value: object) -> None:
    document = {"password": "hunter2-canary", "data": value}
    masked = safe_cell(json.dumps(document))
    assert isinstance(masked, str)
    assert "hunter2-canary" not in masked
