"""Record queries match personal data as the run's zone reads it: a zone shown it (local,
private_hosted) filters and searches on it as stored; an external zone can neither find it nor
learn from a count, a row or a refusal whether an address is there."""

from __future__ import annotations

import ast
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.core import personal
from toolwire.core.personal import SHAPES, cut_point, mask_personal
from toolwire.core.trust import TrustZone
from toolwire.tools.builtin._common import CELL_CHARS
from toolwire.tools.disclosure import NOT_MATCHABLE
from toolwire.workspace.config import Workspace

from .conftest import invoke

ADDRESS = "qzv.ann@wkj-mail.example"
ABSENT = "nobody.there@wkj-mail.example"
CARD = 4111111111111111  # passes Luhn; kept as an integer
LOCAL, EXTERNAL = TrustZone.LOCAL, TrustZone.EXTERNAL_GLOBAL
SHOWN_ZONES = [TrustZone.LOCAL, TrustZone.PRIVATE_HOSTED]
MASKED_ZONES = [TrustZone.EXTERNAL_EU, TrustZone.EXTERNAL_GLOBAL]
NO_ROWS = "No records in people for the given filters."


def refusal(what: str) -> str:
    return "Error: " + NOT_MATCHABLE.format(what=what)


@pytest.fixture
def people(tmp_path: Path) -> Iterator[Workspace]:
    path = tmp_path / "people.db"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT, email TEXT, card INTEGER,"
            " note TEXT)"
        )
        db.executemany(
            "INSERT INTO people (name, email, card, note) VALUES (?, ?, ?, ?)",
            [("Ann", ADDRESS, CARD, "x" * (CELL_CHARS - 10) + " " + ADDRESS),
             ("Bob", "bob@other.example", 42, "call +47 912 34 567 after six")],
        )  # fmt: skip
    db.close()
    workspace = Workspace(database_url=f"sqlite:///{path}")
    yield workspace
    workspace.dispose()


def call(workspace: Workspace, tool: str, zone: TrustZone, **arguments: Any) -> str:
    return invoke(workspace, tool, {"table": "people", **arguments}, zone=zone).content


@pytest.mark.parametrize("zone", MASKED_ZONES)
@pytest.mark.parametrize("tool", ["read_records", "count_records"])
def test_an_external_filter_on_an_address_is_refused_whether_or_not_it_is_there(
    people: Workspace, tool: str, zone: TrustZone
) -> None:
    answers = {
        call(people, tool, zone, where_equals={"email": guess})
        for guess in (ADDRESS, ABSENT, ADDRESS.upper())
    }
    assert answers == {refusal("the value given for 'email'")}


@pytest.mark.parametrize("zone", MASKED_ZONES)
def test_an_external_search_for_an_address_is_refused_whether_or_not_it_is_there(
    people: Workspace, zone: TrustZone
) -> None:
    answers = {call(people, "search_records", zone, query=q) for q in (ADDRESS, ABSENT)}
    assert answers == {refusal("the query")}


@pytest.mark.parametrize("zone", MASKED_ZONES)
def test_an_external_search_never_matches_inside_a_masked_address_or_phone(
    people: Workspace, zone: TrustZone
) -> None:
    for part in ("qzv", "wkj-mail", "wkj-mail.example", "ann@", "912 34", "+47", "bob@other"):
        assert call(people, "search_records", zone, query=part) == NO_ROWS, part
    # What the zone is shown still matches: the masks and the words around them.
    found = call(people, "search_records", zone, query="call +*** after")
    assert found.startswith("Records in people (1, offset 0):") and "name: Bob" in found


@pytest.mark.parametrize("zone", MASKED_ZONES)
def test_a_value_the_database_matches_on_a_masked_cell_never_counts(
    people: Workspace, zone: TrustZone
) -> None:
    # SQLite compares an INTEGER column with this text as a number: the card matches in SQL,
    # though the value is no card number; the row must still not count.
    where = {"card": f"{CARD}.0"}
    assert call(people, "count_records", zone, where_equals=where) == "people: 0 rows match."
    assert call(people, "read_records", zone, where_equals=where) == NO_ROWS
    assert call(people, "count_records", zone, where_equals={"card": CARD}) == refusal(
        "the value given for 'card'"
    )
    assert call(people, "count_records", zone, where_equals={"card": 42}) == (
        "people: 1 rows match."
    )


@pytest.mark.parametrize("zone", SHOWN_ZONES)
def test_a_zone_shown_personal_data_filters_and_searches_on_it(
    people: Workspace, zone: TrustZone
) -> None:
    where = {"email": ADDRESS}
    assert call(people, "count_records", zone, where_equals=where) == "people: 1 rows match."
    assert call(people, "count_records", zone, where_equals={"email": ABSENT}) == (
        "people: 0 rows match."
    )
    read = invoke(people, "read_records", {"table": "people", "where_equals": where}, zone=zone)
    assert read.artifacts[0].data["rows"][0][:4] == ["1", "Ann", ADDRESS, str(CARD)]
    assert call(people, "count_records", zone, where_equals={"card": CARD}) == (
        "people: 1 rows match."
    )
    found = call(people, "search_records", zone, query="wkj-mail")
    assert found.startswith("Records in people (1, offset 0):") and f"email: {ADDRESS}" in found
    assert "912 34 567" in call(people, "search_records", zone, query="+47 912")


@pytest.mark.parametrize("zone", MASKED_ZONES)
def test_a_long_cell_is_never_cut_through_an_address(people: Workspace, zone: TrustZone) -> None:
    read = invoke(people, "read_records", {"table": "people", "fields": ["note"]}, zone=zone)
    cell = read.artifacts[0].data["rows"][0][0]
    assert cell.endswith("x …") and "qzv" not in read.content + cell
    assert "@" not in cell


@pytest.mark.parametrize("zone", SHOWN_ZONES)
def test_a_long_cell_cut_before_an_address_in_a_shown_zone_too(
    people: Workspace, zone: TrustZone
) -> None:
    read = invoke(people, "read_records", {"table": "people", "fields": ["note"]}, zone=zone)
    assert read.artifacts[0].data["rows"][0][0] == "x" * (CELL_CHARS - 10) + " …"


SAMPLES = ["ann.lee@mail.example.org", "+47 912 34 567", "4111 1111 1111 1111",
           "GB82 WEST 1234 5698 7654 32", "(555) 123-4567", "5500-0000-0000-0004"]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(alphabet="ab 1-.:@", max_size=12),
    sample=st.sampled_from(SAMPLES),
    after=st.text(alphabet="ab 1-.", max_size=12),
)
def test_a_cut_point_never_splits_a_shape(before: str, sample: str, after: str) -> None:
    text = f"{before} {sample} {after}"
    start = text.index(sample)
    masked_whole = sample not in mask_personal(text)
    for limit in range(len(text) + 1):
        cut = cut_point(text, limit)
        assert cut <= limit
        if masked_whole and start < limit < start + len(sample):
            assert cut <= start, (text, limit, cut)


def test_every_sample_is_a_shape_that_is_masked() -> None:
    assert all(mask_personal(sample) != sample for sample in SAMPLES)
    assert [shape.name for shape in SHAPES] == ["email", "iban", "card_number", "phone"]


@pytest.mark.parametrize(("zone", "found"), [(LOCAL, True), (EXTERNAL, False)])
def test_file_references_match_a_path_as_the_zone_reads_it(
    tmp_path: Path, zone: TrustZone, found: bool
) -> None:
    named = f"scans/{ADDRESS}.pdf"  # a file named after its owner's address
    files = tmp_path / "files"
    (files / "scans").mkdir(parents=True)
    (files / named).write_text("scan")
    (files / "index.md").write_text(f"The scan is at {named}\n")
    path = tmp_path / "refs.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE uploads (id INTEGER PRIMARY KEY, stored_at TEXT)")
        db.execute("INSERT INTO uploads (stored_at) VALUES (?)", (named,))
    db.close()
    workspace = Workspace(database_url=f"sqlite:///{path}", files_root=files)
    answer = invoke(workspace, "file_references", {"path": named}, zone=zone).content
    workspace.dispose()
    if found:
        assert "uploads.stored_at id=1" in answer and "index.md:1" in answer
    else:
        assert answer.startswith("No references to ")


CONTACTS = (
    f"OWNER = '{ADDRESS}'\n"
    "PHONE = '+47 912 34 567'\n"
    "PAYOUT_IBAN = 'GB82 WEST 1234 5698 7654 32'\n"
    "TEST_CARD = '4111 1111 1111 1111'\n"
    "ORDER = '4111 1111 1111 1112'\n"  # fails the Luhn check: an order number, not a card
)


@pytest.fixture
def source(tmp_path: Path) -> Iterator[Workspace]:
    files = tmp_path / "src"
    files.mkdir()
    (files / "contacts.py").write_text(CONTACTS)
    workspace = Workspace(files_root=files)
    yield workspace
    workspace.dispose()


def search_code(workspace: Workspace, pattern: str, zone: TrustZone, regex: bool = False) -> str:
    arguments = {"pattern": pattern, "regex": regex}
    return invoke(workspace, "search_code", arguments, zone=zone).content


@pytest.mark.parametrize("zone", MASKED_ZONES)
@pytest.mark.parametrize(
    "pattern", ["wkj-mail", "912 34", "WEST 1234", r"\+47", r"GB\d\d", r"4111 \d", "1111 1111"]
)
def test_search_code_never_matches_personal_data_an_external_zone_reads_masked(
    source: Workspace, zone: TrustZone, pattern: str
) -> None:
    answer = search_code(source, pattern, zone, regex=True)
    if "4111" in pattern or "1111" in pattern:  # only the order number, no card, is shown
        assert answer == f"Matches for {pattern!r}:\ncontacts.py:5: ORDER = '4111 1111 1111 1112'"
    else:
        assert answer == f"No matches for {pattern!r} in 1 files."


@pytest.mark.parametrize("zone", MASKED_ZONES)
def test_search_code_reports_lines_as_an_external_zone_reads_them(
    source: Workspace, zone: TrustZone
) -> None:
    assert search_code(source, " = '", zone) == (
        "Matches for \" = '\":\ncontacts.py:1: OWNER = '***@***'\n"
        "contacts.py:2: PHONE = '+***'\ncontacts.py:3: PAYOUT_IBAN = 'GB***'\n"
        "contacts.py:4: TEST_CARD = '***'\ncontacts.py:5: ORDER = '4111 1111 1111 1112'"
    )


@pytest.mark.parametrize("zone", SHOWN_ZONES)
def test_search_code_finds_personal_data_in_a_zone_shown_it(
    source: Workspace, zone: TrustZone
) -> None:
    lines = CONTACTS.splitlines()
    assert (
        search_code(source, "912 34", zone) == f"Matches for '912 34':\ncontacts.py:2: {lines[1]}"
    )
    assert search_code(source, "WKJ-MAIL", zone) == (
        f"Matches for 'WKJ-MAIL':\ncontacts.py:1: {lines[0]}"
    )
    assert search_code(source, "1111 1111", zone) == (  # the card and the order number
        f"Matches for '1111 1111':\ncontacts.py:4: {lines[3]}\ncontacts.py:5: {lines[4]}"
    )


def test_the_personal_module_the_worker_loads_imports_the_standard_library_only() -> None:
    tree = ast.parse(Path(personal.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert imported and {name.split(".")[0] for name in imported} <= sys.stdlib_module_names


@pytest.mark.parametrize(
    "text",
    [
        "owner ann.lee@example.com tail",
        "call +44 20 7946 0958 now",
        "iban GB82 WEST 1234 5698 7654 32 ok",
    ],
)
def test_text_shortened_anywhere_keeps_no_part_of_a_shape_the_mask_would_miss(text: str) -> None:
    for limit in range(1, len(text)):
        shown = mask_personal(personal.clipped(text, limit))
        assert len(shown) <= len(mask_personal(text)) + 1
        for part in ("ann", "lee@", "example", "7946", "0958", "WEST", "5698"):
            assert part not in shown, (limit, shown)
