"""The documents index takes each document on its own, within its limits: one it cannot index
is told with its reason, and the others are still searched and fetched."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.tools.builtin import _doc_index
from toolwire.tools.builtin._doc_index import DocumentIndex, Refresh
from toolwire.tools.builtin.documents import index_dir
from toolwire.workspace.config import Workspace

from .conftest import assert_artifacts_within_text, invoke

TOO_LARGE = "larger than 2000000 bytes"
# html.parser raises AssertionError on a marked section it does not know
BREAKS_HTML_PARSER = "<html><body><p>refund</p><![foo[ breaker-canary ]]></body></html>"


@pytest.fixture
def shelf(tmp_path: Path) -> Workspace:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "refunds.md").write_text("# Refunds\nA refund takes a week.\n")
    (docs / "big.md").write_text("# Big\n" + "refund and more words\n" * 100_000)
    (docs / "broken.html").write_text(BREAKS_HTML_PARSER)
    return Workspace(documents=docs, data_dir=tmp_path / "data")


def test_documents_that_cannot_be_indexed_are_told_and_the_rest_answer(shelf: Workspace) -> None:
    result = invoke(shelf, "search_documents", {"query": "refund"})
    assert result.content == (
        "Documents for 'refund' (1 of 1, best first):\n"
        "1. refunds.md: Refunds\n"
        "   # Refunds A **refund** takes a week.\n"
        "Not searched (2 documents):\n"
        f"- big.md: not indexed: {TOO_LARGE}\n"
        "- broken.html: not indexed: its reader failed on it"
    )
    hits, left = result.artifacts
    assert [row[1] for row in hits.data["rows"]] == ["refunds.md"]
    assert left.label == "documents not indexed"
    assert left.data == {
        "columns": ["path", "reason"],
        "rows": [["big.md", TOO_LARGE], ["broken.html", "its reader failed on it"]],
    }
    assert_artifacts_within_text(result)
    assert "breaker-canary" not in result.content


def test_fetching_a_document_left_out_gives_its_reason(shelf: Workspace) -> None:
    big = invoke(shelf, "fetch_document", {"path": "big.md"})
    assert big.content == f"Error: 'big.md' is not indexed: {TOO_LARGE}."
    broken = invoke(shelf, "fetch_document", {"path": "broken.html"})
    assert broken.content == "Error: 'broken.html' is not indexed: its reader failed on it."
    fine = invoke(shelf, "fetch_document", {"path": "refunds.md"})
    assert fine.content.startswith("refunds.md: Refunds (characters 1-33 of 33)\n")


def test_no_match_still_says_what_was_not_searched(shelf: Workspace) -> None:
    result = invoke(shelf, "search_documents", {"query": "zeppelin"})
    assert result.content.split("\n") == [
        "No document matches 'zeppelin'.",
        "Not searched (2 documents):",
        f"- big.md: not indexed: {TOO_LARGE}",
        "- broken.html: not indexed: its reader failed on it",
    ]
    assert [a.label for a in result.artifacts] == ["documents not indexed"]


def test_a_document_fixed_later_is_indexed(shelf: Workspace) -> None:
    invoke(shelf, "search_documents", {"query": "refund"})
    assert shelf.documents is not None
    (shelf.documents / "broken.html").write_text("<p>refund, repaired</p>")
    result = invoke(shelf, "search_documents", {"query": "repaired"})
    assert result.content.split("\n")[:2] == [
        "Documents for 'repaired' (1 of 1, best first):",
        "1. broken.html: broken",
    ]
    assert result.content.endswith(
        f"Not searched (1 documents):\n- big.md: not indexed: {TOO_LARGE}"
    )


def test_only_the_first_documents_left_out_are_listed(shelf: Workspace) -> None:
    assert shelf.documents is not None
    for n in range(5):
        (shelf.documents / f"huge{n}.txt").write_bytes(b"x" * 2_000_001)
    result = invoke(shelf, "search_documents", {"query": "refund"})
    assert result.content.split("\n")[3:] == [
        "Not searched (7 documents):",
        f"- big.md: not indexed: {TOO_LARGE}",
        "- broken.html: not indexed: its reader failed on it",
        *(f"- huge{n}.txt: not indexed: {TOO_LARGE}" for n in range(3)),
        "(2 more documents not indexed)",
    ]
    assert len(result.artifacts[1].data["rows"]) == 5


def test_a_document_slower_than_its_budget_is_not_indexed(
    shelf: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_doc_index, "DOCUMENT_SECONDS", 0.0)
    result = invoke(shelf, "fetch_document", {"path": "refunds.md"})
    assert result.content == (
        "Error: 'refunds.md' is not indexed: took longer than 0 seconds to read."
    )


def test_a_refresh_out_of_time_leaves_the_rest_for_the_next(
    shelf: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert shelf.documents is not None
    monkeypatch.setattr(_doc_index, "CALL_SECONDS", 0.0)
    result = invoke(shelf, "search_documents", {"query": "refund"})
    assert result.content == (
        "No document matches 'refund'.\n"
        "(3 new or changed documents are not indexed yet: search again.)"
    )
    monkeypatch.setattr(_doc_index, "CALL_SECONDS", 60.0)
    with DocumentIndex(shelf.documents, index_dir(shelf)) as index:
        assert index.refresh() == Refresh(added=1, changed=0, removed=0, documents=1)
