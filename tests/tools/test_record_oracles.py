"""Record tools match what the model is shown: no search, filter or count confirms a secret
that every shown cell masks."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core.personal import mask_personal
from toolwire.core.trust import TrustZone
from toolwire.tools import disclosure
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._matching import zone_text
from toolwire.workspace.config import Workspace

from .conftest import invoke

SECRET = "sk-proj-ORACLE0abcdefghijklmnopqrstuvwxyz0123"
NOTE = f"deploy with {SECRET} today"
PROFILE = json.dumps({"theme": "dark", "api_token": "ORACLE1-tok", "city": "Oslo"})
NO_ROWS = "No records in vault for the given filters."


def database(path: Path, rows: list[tuple[str, str]]) -> Workspace:
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE vault (id INTEGER PRIMARY KEY, note TEXT, profile TEXT)")
        db.executemany("INSERT INTO vault (note, profile) VALUES (?, ?)", rows)
    db.close()
    return Workspace(database_url=f"sqlite:///{path}")


@pytest.fixture
def vault(tmp_path: Path) -> Iterator[Workspace]:
    workspace = database(tmp_path / "vault.db", [(NOTE, PROFILE), ("plain note", "{}")])
    yield workspace
    workspace.dispose()


def search(workspace: Workspace, phrase: str) -> str:
    return invoke(workspace, "search_records", {"table": "vault", "query": phrase}).content


@pytest.mark.parametrize(
    ("right", "wrong"),
    [("sk-proj-ORACLE0", "sk-proj-ORACLEX"), ("ORACLE0abc", "ORACLEXabc"),
     ("ORACLE1", "ORACLEX"), ('"api_token": "ORACLE1', '"api_token": "ORACLEX'),
     ("ORACLE1-tok", "ORACLEX-tok")],
)  # fmt: skip
def test_search_gives_the_same_answer_for_a_right_and_a_wrong_guess(
    vault: Workspace, right: str, wrong: str
) -> None:
    assert search(vault, right) == search(vault, wrong) == NO_ROWS


def test_search_matches_the_shown_text_masks_included(vault: Workspace) -> None:
    shown = (
        "Records in vault (1, offset 0):\n- vault row 1\n  id: 1\n"
        "  note: deploy with sk-proj-*** today\n"
        '  profile: {"theme": "dark", "api_token": "***", "city": "Oslo"}'
    )
    assert search(vault, "with sk-proj-*** TODAY") == shown
    assert search(vault, '"api_token": "***"') == shown
    assert search(vault, "deploy   with") == shown
    assert search(vault, '"city": "Oslo"') == shown


@pytest.mark.parametrize("tool", ["count_records", "read_records"])
def test_a_filter_on_a_masked_cell_never_matches(vault: Workspace, tool: str) -> None:
    answers = {
        invoke(vault, tool, {"table": "vault", "where_equals": {"note": guess}}).content
        for guess in (NOTE, NOTE.replace("ORACLE0", "ORACLEX"))
    }
    assert answers == {"vault: 0 rows match." if tool == "count_records" else NO_ROWS}


def test_filters_on_cells_shown_as_stored_still_match(vault: Workspace) -> None:
    where = {"note": "plain note"}
    assert invoke(vault, "count_records", {"table": "vault", "where_equals": where}).content == (
        "vault: 1 rows match."
    )
    read = invoke(vault, "read_records", {"table": "vault", "where_equals": where})
    assert read.artifacts[0].data["rows"] == [["2", "plain note", "{}"]]


def test_filtered_reads_page_after_masked_rows_are_dropped(tmp_path: Path) -> None:
    rows = [(SECRET if n % 2 else "x", str(n)) for n in range(10)]
    workspace = database(tmp_path / "paged.db", rows)
    where = {"note": "x"}
    read = invoke(
        workspace, "read_records",
        {"table": "vault", "fields": ["profile"], "where_equals": where, "offset": 2, "limit": 2},
    )  # fmt: skip
    counted = invoke(workspace, "count_records", {"table": "vault", "where_equals": where})
    workspace.dispose()
    assert read.artifacts[0].data["rows"] == [["4"], ["6"]]
    assert counted.content == "vault: 5 rows match."


CELLS = st.one_of(
    st.text(alphabet="abcAB* -_=\n", max_size=12),
    st.sampled_from(
        [
            SECRET,
            NOTE,
            PROFILE,
            "token=abc123",
            "ann@example.com",
            '{"a":  1}',
            '{"mail": "ann@example.com"}',
            "call +47 912 34 567",
            "4111 1111 1111 1111",
        ]
    ),
)
PHRASES = st.one_of(
    st.text(alphabet="abcAB* -_=", min_size=1, max_size=4).filter(str.strip),
    st.sampled_from(["sk-proj-", "ORACLE0", "***", "token=", "@", '"a": 1', "example",
                     "ann@example.com", "***@***", "ann", "912 34", "+***", "4111"]),
)  # fmt: skip


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(CELLS, CELLS), min_size=1, max_size=8),
    phrase=PHRASES,
    zone=st.sampled_from([TrustZone.LOCAL, TrustZone.EXTERNAL_GLOBAL]),
)
def test_reported_rows_are_those_whose_shown_text_contains_the_phrase(
    tmp_path: Path, rows: list[tuple[str, str]], phrase: str, zone: TrustZone
) -> None:
    workspace = database(tmp_path / "prop.db", rows)
    result = invoke(workspace, "search_records", {"table": "vault", "query": phrase}, zone=zone)
    workspace.dispose()
    if zone is TrustZone.EXTERNAL_GLOBAL and mask_personal(phrase.strip()) != phrase.strip():
        assert result.content == "Error: " + disclosure.NOT_MATCHABLE.format(what="the query")
        return
    view = disclosure.personal_view(ToolContext(trust_zone=zone))
    wanted = " ".join(phrase.split()).casefold()
    expected = [
        str(n)
        for n, cells in enumerate(rows, start=1)
        if any(wanted in (zone_text(cell, view) or "").casefold() for cell in cells)
    ]
    reported = [row[0] for row in result.artifacts[0].data["rows"]] if expected else []
    assert reported == expected
    if not expected:
        assert result.content == NO_ROWS
