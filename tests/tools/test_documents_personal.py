"""Documents by trust zone: a zone shown personal data searches, finds and reads it as written; an
external zone reads it masked and cannot find, count or page into any of it; a snippet never
shows part of an address, so neither the seam nor the redactor of a stored copy misses one."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import RunOptions, ToolCall, ToolContext, User
from toolwire.core.personal import mask_personal
from toolwire.core.trust import TrustZone
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import Runtime
from toolwire.store.runs import RunStore
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.builtin._doc_snippet import whole
from toolwire.tools.builtin.documents import FETCH_CHARS
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace

from .conftest import invoke

ADDRESS = "qzvx.ann@wkjy-mail.example"
PHONE = "+47 912 34 567"
CONTACT = f"# Contact\n\nWrite to {ADDRESS} or call {PHONE} about a refund.\n"
SHOWN = [TrustZone.LOCAL, TrustZone.PRIVATE_HOSTED]
MASKED = [TrustZone.EXTERNAL_EU, TrustZone.EXTERNAL_GLOBAL]


def library(tmp_path: Path, **documents: str) -> Workspace:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    for name, text in documents.items():
        (docs / f"{name}.md").write_text(text)
    return Workspace(documents=docs, data_dir=tmp_path / "data")


@pytest.fixture
def contacts(tmp_path: Path) -> Workspace:
    return library(tmp_path, contact=CONTACT, other="# Other\n\nNothing personal, a refund.\n")


def search(workspace: Workspace, query: str, zone: TrustZone) -> str:
    return invoke(workspace, "search_documents", {"query": query}, zone=zone).content


def fetch(workspace: Workspace, zone: TrustZone, offset: int = 0) -> str:
    arguments = {"path": "contact.md", "offset": offset}
    return invoke(workspace, "fetch_document", arguments, zone=zone).content


@pytest.mark.parametrize("zone", SHOWN)
def test_a_zone_shown_personal_data_finds_and_reads_it(
    contacts: Workspace, zone: TrustZone
) -> None:
    for query in (ADDRESS, "wkjy", "qzvx ann", "912"):
        found = search(contacts, query, zone)
        assert found.startswith(f"Documents for {query!r} (1 of 1, best first):\n1. contact.md"), (
            query
        )
    assert ADDRESS in search(contacts, "wkjy", zone).replace("**", "")
    assert fetch(contacts, zone) == f"contact.md: Contact (characters 1-{len(CONTACT)} of " + (
        f"{len(CONTACT)})\n{CONTACT}"
    )


@pytest.mark.parametrize("zone", MASKED)
def test_an_external_zone_neither_finds_nor_counts_nor_reads_it(
    contacts: Workspace, zone: TrustZone
) -> None:
    for query in (ADDRESS, "wkjy", "qzvx", "912", "567"):
        echoed = mask_personal(repr(query))  # the model's own words, as the zone reads them
        assert search(contacts, query, zone) == f"No document matches {echoed}.", query
    # A query with another word widens to any word: the address's words still count nowhere.
    widened = search(contacts, "wkjy refund", zone)
    assert "(2 of 2" in widened and "wkjy" not in widened.replace("'wkjy refund'", "")
    masked = CONTACT.replace(ADDRESS, "***@***").replace(PHONE, "+***")
    assert fetch(contacts, zone).endswith(f"\n{masked}")


@pytest.mark.parametrize("zone", MASKED)
def test_an_external_zone_pages_the_masked_text(tmp_path: Path, zone: TrustZone) -> None:
    # The address straddles the first page's end in the text as written.
    text = "x" * (FETCH_CHARS - 10) + f" {ADDRESS} end\n"
    workspace = library(tmp_path, contact=text)
    first, second = fetch(workspace, zone), fetch(workspace, zone, FETCH_CHARS)
    masked = text.replace(ADDRESS, "***@***")
    assert first.endswith(
        masked[:FETCH_CHARS] + f"\n(more: call fetch_document with offset={FETCH_CHARS})"
    )
    assert second.endswith(masked[FETCH_CHARS:])
    assert not any(part in first + second for part in ("qzvx", "wkjy", "ann@"))


def test_a_local_search_stored_at_redacted_keeps_no_part_of_the_address(
    contacts: Workspace, tmp_path: Path
) -> None:
    runtime_store = RunStore.open(
        f"sqlite:///{tmp_path / 'runs.db'}", privacy=PrivacyLevel.REDACTED
    )
    with runtime_store as store:
        runtime = Runtime(ToolRegistry(builtin_tools()), recorder=store)
        context = ToolContext(user=User("admin", is_admin=True), workspace=contacts)
        outcome = anyio.run(
            lambda: runtime.call(
                ToolCall.of("call_1", "search_documents", {"query": "wkjy"}),
                context=context,
                offered=frozenset({"search_documents"}),
                options=RunOptions(trust_zone="local"),
            )
        )
        (step,) = [s for s in outcome.steps if s.kind == "tool"]
        assert ADDRESS in step.tool_result  # the model read it whole, its word not marked inside
        stored = store.get_run(outcome.run_id)
    assert stored is not None
    kept = json.dumps(stored.steps)
    # Only the query's own word is kept; nothing else of the address or the phone.
    assert "***@***" in kept and not any(p in kept for p in ("qzvx", "mail.example", "912 34"))


WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "refund", "delta"]), max_size=40)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=WORDS, after=WORDS, query=st.sampled_from(["refund", "qzvx", "wkjy", "912", "gamma"]))
def test_a_snippet_shows_an_address_or_phone_whole_or_not_at_all(
    tmp_path_factory: pytest.TempPathFactory, before: list[str], after: list[str], query: str
) -> None:
    text = " ".join([*before, "write to", ADDRESS, "or", PHONE, "now", *after])
    workspace = library(tmp_path_factory.mktemp("docs"), page=f"# Page\n\n{text}\n")
    result = invoke(workspace, "search_documents", {"query": query}, zone=TrustZone.LOCAL)
    if result.content.startswith("No document"):
        assert query not in text
        return
    (row,) = result.artifacts[0].data["rows"]
    snippet: str = row[3]
    for shape, parts in ((ADDRESS, ("qzvx", "ann", "wkjy", "mail.example")),
                         (PHONE, ("+47", "912", "34 567"))):  # fmt: skip
        shown = [part in snippet.replace("**", "") for part in parts]
        assert all(shown) == (shape in snippet) == any(shown), (shape, snippet)


@pytest.mark.parametrize(
    ("snippet", "body", "expected"),
    [
        # A mark inside an address is dropped; one beside it stays.
        ("\x03Write to \x01ann\x02@x.example \x01now\x02", "A. Write to ann@x.example now",
         "…Write to ann@x.example **now**"),
        # A window that starts or ends inside an address leaves it out whole.
        ("\x03example.com says \x01hi\x02\x03", "mail ann@example.com says hi there",
         "… says **hi**…"),
        ("\x01hi\x02 from ann\x03", "hi from ann@example.com", "**hi** from …"),
        # Text not found in the body keeps its words, not its marks.
        ("\x01gone\x02 text", "something else", "gone text"),
    ],
)  # fmt: skip
def test_whole_snippets(snippet: str, body: str, expected: str) -> None:
    assert whole(snippet, body) == expected


def test_a_snippet_standing_twice_is_trimmed_where_either_place_cuts_a_shape() -> None:
    # The same words stand after an address and after a plain word: either could be the hit.
    body = "visit example.com says hi. mail ann@example.com says hi"
    assert whole("\x03example.com says \x01hi\x02", body) == "… says **hi**"
