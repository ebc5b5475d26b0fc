"""``search_documents`` and ``fetch_document``: a real FTS5 index in the data directory."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import ArtifactType
from toolwire.core.errors import ConfigError
from toolwire.tools.builtin._doc_index import DocumentIndex, Refresh, index_file, match_expression
from toolwire.tools.builtin._doc_text import extract
from toolwire.tools.builtin.documents import index_dir
from toolwire.workspace.config import Workspace, load_workspace

from .conftest import OUTSIDE_SECRET, artifact_leaves, assert_artifacts_within_text, invoke

STRIPE_KEY = "sk_live_51Hdemo0000fakeKEYabcdef"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
REFUNDS = f"""# Refunds and returns

Customers may ask for a refund within 30 days of delivery.
Write to refunds@example.com; the payment key {STRIPE_KEY} is rotated monthly.
"""
SHIPPING = """<html><head><title>Shipping &amp; delivery</title>
<style>.refund { color: red }</style><script>var refund = "script-canary";</script></head>
<body><h1>Shipping</h1><p>We ship in <b>two</b> days.</p><!-- refund comment-canary -->
<p>Refund of shipping costs: not covered.</p></body></html>
"""


@pytest.fixture
def library(tmp_path: Path) -> Workspace:
    docs = tmp_path / "docs"
    (docs / "guides").mkdir(parents=True)
    (docs / "guides" / "refunds.md").write_text(REFUNDS)
    (docs / "guides" / "shipping.html").write_text(SHIPPING)
    (docs / "faq.txt").write_text("Frequently asked\nHow long does delivery take? Two days.\n")
    (docs / "keys.md").write_text("# Deploy keys\nrefund\n" + PEM)  # a key inside: secret
    (docs / "credentials.md").write_text("refund credentials-canary\n")  # secret by name
    (docs / ".git").mkdir()
    (docs / ".git" / "notes.md").write_text("refund hidden-canary\n")
    (docs / "blob.md").write_bytes(b"refund\x00binary-canary")
    (docs / "image.png").write_bytes(b"refund png-canary")
    (tmp_path / "outside").mkdir(exist_ok=True)
    (tmp_path / "outside" / "leak.md").write_text(f"refund {OUTSIDE_SECRET}\n")
    (docs / "leak.md").symlink_to(tmp_path / "outside" / "leak.md")
    return Workspace(documents=docs, data_dir=tmp_path / "data")


def docs_of(workspace: Workspace) -> Path:
    assert workspace.documents is not None
    return workspace.documents


CANARIES = ["script-canary", "comment-canary", "credentials-canary", "hidden-canary",
            "binary-canary", "png-canary", OUTSIDE_SECRET, "MIIEvQ", STRIPE_KEY[8:]]  # fmt: skip


def test_search_ranks_snippets_and_tables_the_hits(library: Workspace) -> None:
    result = invoke(library, "search_documents", {"query": "refund"})
    assert result.content == (
        "Documents for 'refund' (2 of 2, best first):\n"
        "1. guides/shipping.html: Shipping & delivery\n"
        "   Shipping We ship in two days. **Refund** of shipping costs: not covered.\n"
        "2. guides/refunds.md: Refunds and returns\n"
        "   # Refunds and returns Customers may ask for a **refund** within 30 days of"
        " delivery. Write to ***@***; the payment key sk…"
    )
    (table,) = result.artifacts
    assert table.type is ArtifactType.TABLE and table.label == "documents"
    assert table.data["columns"] == ["rank", "path", "title", "snippet"]
    assert [row[:3] for row in table.data["rows"]] == [
        ["1", "guides/shipping.html", "Shipping & delivery"],  # as rare, in a shorter text
        ["2", "guides/refunds.md", "Refunds and returns"],
    ]
    assert_artifacts_within_text(result)
    for canary in CANARIES:
        assert canary not in result.content


def test_a_title_match_outranks_a_body_match(library: Workspace) -> None:
    docs = docs_of(library)
    (docs / "a.md").write_text("# Notes\n" + "delivery " * 3 + "\n")
    (docs / "z.md").write_text("# Delivery\nonce\n")
    rows = invoke(library, "search_documents", {"query": "delivery"}).artifacts[0].data["rows"]
    assert rows[0][1] == "z.md"
    assert {row[1] for row in rows} == {"z.md", "a.md", "faq.txt", "guides/refunds.md",
                                        "guides/shipping.html"}  # fmt: skip


def test_every_word_first_then_any_word(library: Workspace) -> None:
    both = invoke(library, "search_documents", {"query": "delivery days"})
    assert both.content.startswith("Documents for 'delivery days' (3 of 3, best first):")
    assert {r[1] for r in both.artifacts[0].data["rows"]} == {
        "faq.txt",
        "guides/refunds.md",
        "guides/shipping.html",
    }
    widened = invoke(library, "search_documents", {"query": "refund zeppelin"})
    assert widened.content.startswith(
        "No document holds every word; documents with any of them for 'refund zeppelin' (2 of 2,"
    )
    none = invoke(library, "search_documents", {"query": "zeppelin"})
    assert none.content == "No document matches 'zeppelin'." and none.artifacts == ()


def test_prefix_words_match(library: Workspace) -> None:
    result = invoke(library, "search_documents", {"query": "frequen*"})
    assert [r[1] for r in result.artifacts[0].data["rows"]] == ["faq.txt"]


@pytest.mark.parametrize(
    "query",
    ['"', 'refund"', "refund OR", "NEAR(refund", "title:refund", "refund -days", "^refund",
     "refund AND NOT days", "{title}: refund", "refund)"],
)  # fmt: skip
def test_query_syntax_is_never_fts5_syntax(library: Workspace, query: str) -> None:
    result = invoke(library, "search_documents", {"query": query})
    if query == '"':
        assert result.content == "Error: query '\"' holds no word to search for."
    else:
        assert not result.is_error, result.content
        assert "guides/refunds.md" in result.content


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"query": ""}, "Error: query must be 1 to 200 characters."),
        ({"query": "   "}, "Error: query must be 1 to 200 characters."),
        ({"query": "x" * 201}, "Error: query must be 1 to 200 characters."),
        ({"query": "?!"}, "Error: query '?!' holds no word to search for."),
        ({"query": "refund", "limit": 0}, 'Error: invalid arguments for tool "search_documents": '
         "limit: Input should be greater than or equal to 1"),
        ({"query": ["refund"]}, 'Error: invalid arguments for tool "search_documents": '
         "query: Input should be a valid string"),
    ],
)  # fmt: skip
def test_malformed_searches_are_refused(
    library: Workspace, arguments: dict[str, object], error: str
) -> None:
    assert invoke(library, "search_documents", arguments).content == error


def test_the_limit_is_capped(library: Workspace) -> None:
    docs = docs_of(library)
    for n in range(40):
        (docs / f"n{n:02}.md").write_text(f"# Note {n}\nrefund\n")
    result = invoke(library, "search_documents", {"query": "refund", "limit": 1000})
    assert len(result.artifacts[0].data["rows"]) == 25
    assert "(25 of 42, best first)" in result.content


def test_secrets_are_masked_and_never_found(library: Workspace) -> None:
    for query in (STRIPE_KEY, STRIPE_KEY[8:], "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "example"):
        result = invoke(library, "search_documents", {"query": query})
        assert result.content == f"No document matches {query!r}.", query
    for query in ("credentials", "hidden", "binary", "png", OUTSIDE_SECRET, "script", "comment"):
        result = invoke(library, "search_documents", {"query": query})
        assert result.content == f"No document matches {query!r}.", query


def test_fetch_reads_the_plain_text(library: Workspace) -> None:
    result = invoke(library, "fetch_document", {"path": "guides/shipping.html"})
    assert result.content == (
        "guides/shipping.html: Shipping & delivery (characters 1-70 of 70)\n"
        "Shipping\n\nWe ship in two days.\n\nRefund of shipping costs: not covered."
    )
    assert result.artifacts[0].data == {
        "items": [["path", "guides/shipping.html"], ["title", "Shipping & delivery"],
                  ["characters", "1-70 of 70"]],
    }  # fmt: skip
    assert_artifacts_within_text(result)
    masked = invoke(library, "fetch_document", {"path": "guides/refunds.md"})
    assert "sk_live_***" in masked.content and STRIPE_KEY not in masked.content


def test_fetch_pages_a_long_document(library: Workspace) -> None:
    text = "".join(f"line {n:05}\n" for n in range(2000))  # 22,000 characters
    (docs_of(library) / "long.txt").write_text(text)
    first = invoke(library, "fetch_document", {"path": "long.txt"})
    assert first.content.startswith("long.txt: line 00000 (characters 1-8000 of 22000)\nline 00000")
    assert first.content.endswith("\n(more: call fetch_document with offset=8000)")
    last = invoke(library, "fetch_document", {"path": "long.txt", "offset": 16000})
    assert last.content.startswith("long.txt: line 00000 (characters 16001-22000 of 22000)\n")
    assert last.content.endswith("line 01999\n")
    past = invoke(library, "fetch_document", {"path": "long.txt", "offset": 22000})
    assert past.content == "Error: offset 22000 is past the end: long.txt has 22000 characters."


NOT_LISTED = "Error: no document at {!r}; give a path search_documents listed."


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("../outside/leak.md", "Error: path '../outside/leak.md' leaves the files folder."),
        ("/etc/passwd", "Error: path '/etc/passwd' is absolute; give a path inside the files"
         " folder."),
        ("%2e%2e/x.md", "Error: path '%2e%2e/x.md' leaves the files folder."),
        *((name, NOT_LISTED.format(name)) for name in (
            "leak.md", "keys.md", "credentials.md", ".git/notes.md", "blob.md", "image.png",
            "nowhere.md",
        )),
    ],
)  # fmt: skip
def test_fetch_refuses_what_is_not_an_indexed_document(
    library: Workspace, path: str, error: str
) -> None:
    result = invoke(library, "fetch_document", {"path": path})
    assert result.content == error
    for canary in CANARIES:
        assert canary not in result.content


def test_without_a_documents_folder_both_fail_closed(tmp_path: Path) -> None:
    workspace = Workspace(data_dir=tmp_path)
    for name, args in (("search_documents", {"query": "x"}), ("fetch_document", {"path": "x"})):
        assert invoke(workspace, name, args).content == (
            "Error: the workspace has no documents folder."
        )


def test_the_index_never_lives_inside_the_documents_folder(library: Workspace) -> None:
    docs = docs_of(library)
    inside = Workspace(documents=docs, data_dir=docs / "data")
    result = invoke(inside, "search_documents", {"query": "refund"})
    assert result.content == "Error: the documents index would live inside the documents folder."
    assert not (docs / "data").exists()


def test_the_index_lives_in_the_data_directory(library: Workspace, tmp_path: Path) -> None:
    invoke(library, "search_documents", {"query": "refund"})
    folder = index_dir(library)
    assert folder == tmp_path / "data" / "documents"
    (index,) = folder.glob("*.sqlite3")
    assert index == index_file(docs_of(library), folder)
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert oct(index.stat().st_mode & 0o777) == "0o600"
    stored = index.read_bytes()
    for canary in (*CANARIES, STRIPE_KEY.encode().decode()):
        assert canary.encode() not in stored


def test_the_default_data_directory_is_the_user_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert index_dir(Workspace()) == tmp_path / "xdg" / "toolwire" / "documents"


# -- incremental refresh ----------------------------------------------------------------


def refresh(workspace: Workspace) -> Refresh:
    with DocumentIndex(docs_of(workspace), index_dir(workspace)) as index:
        return index.refresh()


def test_refresh_reads_only_what_changed(library: Workspace) -> None:
    assert refresh(library) == Refresh(added=3, changed=0, removed=0, documents=3)
    assert refresh(library) == Refresh(added=0, changed=0, removed=0, documents=3)
    docs = docs_of(library)
    faq = docs / "faq.txt"
    faq.write_text("Frequently asked\nHow long does delivery take? Two zeppelins.\n")
    assert refresh(library) == Refresh(added=0, changed=1, removed=0, documents=3)
    assert "faq.txt" in invoke(library, "search_documents", {"query": "zeppelins"}).content
    old = invoke(library, "search_documents", {"query": "days"}).content
    assert "faq.txt" not in old


def test_a_touched_file_is_not_indexed_again(library: Workspace) -> None:
    refresh(library)
    faq = docs_of(library) / "faq.txt"
    later = faq.stat().st_mtime_ns + 5_000_000_000
    os.utime(faq, ns=(later, later))
    assert refresh(library) == Refresh(added=0, changed=0, removed=0, documents=3)


def test_added_removed_and_renamed_files(library: Workspace) -> None:
    refresh(library)
    docs = docs_of(library)
    (docs / "new.md").write_text("# New\nairship timetable\n")
    assert refresh(library) == Refresh(added=1, changed=0, removed=0, documents=4)
    assert "new.md" in invoke(library, "search_documents", {"query": "airship"}).content
    (docs / "new.md").rename(docs / "guides" / "moved.md")
    assert refresh(library) == Refresh(added=1, changed=0, removed=1, documents=4)
    found = invoke(library, "search_documents", {"query": "airship"}).content
    assert "guides/moved.md" in found and "new.md" not in found
    (docs / "guides" / "moved.md").unlink()
    assert refresh(library) == Refresh(added=0, changed=0, removed=1, documents=3)
    gone = invoke(library, "search_documents", {"query": "airship"})
    assert gone.content == "No document matches 'airship'."
    refused = invoke(library, "fetch_document", {"path": "guides/moved.md"})
    assert refused.content.startswith("Error: no document at 'guides/moved.md'")


def test_a_file_that_turns_secret_leaves_the_index(library: Workspace) -> None:
    refresh(library)
    faq = docs_of(library) / "faq.txt"
    faq.write_text(faq.read_text() + PEM)
    assert refresh(library) == Refresh(added=0, changed=0, removed=1, documents=2)
    assert invoke(library, "search_documents", {"query": "frequently"}).content == (
        "No document matches 'frequently'."
    )
    faq.write_text("Frequently asked, again\n")
    assert refresh(library) == Refresh(added=1, changed=0, removed=0, documents=3)


def test_a_hard_link_to_a_secret_file_is_not_indexed(library: Workspace) -> None:
    docs = docs_of(library)
    (docs / "id_rsa").write_text("refund hardlink-canary\n")
    os.link(docs / "id_rsa", docs / "innocent.md")
    result = invoke(library, "search_documents", {"query": "hardlink"})
    assert result.content == "No document matches 'hardlink'."


def test_another_process_writing_the_index_is_noticed(library: Workspace) -> None:
    refresh(library)
    index = index_file(docs_of(library), index_dir(library))
    with sqlite3.connect(index) as db:  # as another process would, after a change of its own
        db.execute("DELETE FROM docs")
        db.execute("DELETE FROM files")
        db.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    db.close()
    assert refresh(library) == Refresh(added=3, changed=0, removed=0, documents=3)


def test_a_damaged_index_is_rebuilt(library: Workspace) -> None:
    refresh(library)
    index = index_file(docs_of(library), index_dir(library))
    index.write_bytes(b"not a database at all" * 100)
    result = invoke(library, "search_documents", {"query": "frequently"})
    assert result.content.startswith("Documents for 'frequently' (1 of 1")
    assert index.read_bytes().startswith(b"SQLite format 3")


def test_an_index_that_cannot_be_written_is_a_clear_refusal(library: Workspace) -> None:
    folder = index_dir(library)
    folder.parent.mkdir(parents=True)
    folder.write_text("a file where the index folder should be")
    result = invoke(library, "search_documents", {"query": "refund"})
    assert result.content == "Error: the documents index could not be read or updated."


def test_a_changed_catalogue_rebuilds_the_index(library: Workspace) -> None:
    refresh(library)
    index = index_file(docs_of(library), index_dir(library))
    with sqlite3.connect(index) as db:
        db.execute("UPDATE meta SET value = 'older' WHERE key = 'fingerprint'")
    db.close()
    assert refresh(library) == Refresh(added=3, changed=0, removed=0, documents=3)


# -- text extraction and query building ----------------------------------------------------


def test_html_is_reduced_to_its_visible_text() -> None:
    from pathlib import PurePosixPath

    page = extract(PurePosixPath("a.html"), SHIPPING.encode())
    assert page.title == "Shipping & delivery"
    assert page.text == "Shipping\n\nWe ship in two days.\n\nRefund of shipping costs: not covered."
    bare = extract(PurePosixPath("b.htm"), b"<h1>Only &lt;b&gt; a heading</h1><svg>x</svg>")
    assert (bare.title, bare.text) == ("Only <b> a heading", "Only <b> a heading")
    untitled = extract(PurePosixPath("dir/c.html"), b"<p>text</p>")
    assert untitled.title == "c"


def test_titles_of_markdown_and_text() -> None:
    from pathlib import PurePosixPath

    assert extract(PurePosixPath("a.md"), b"intro\n\n## Second\n").title == "Second"
    assert extract(PurePosixPath("a.md"), b"Setext title\n=====\nbody").title == "Setext title"
    assert extract(PurePosixPath("plain.md"), b"no heading at all").title == "plain"
    assert extract(PurePosixPath("a.txt"), b"\n\n  First line  \nsecond").title == "First line"


def test_match_expressions_quote_every_word() -> None:
    assert match_expression('refund "policy" OR NEAR(x') == '"refund" "policy" "OR" "NEAR" "x"'
    assert match_expression("pay* days", any_word=True) == '"pay"* OR "days"'
    assert match_expression("?!") == ""
    assert match_expression(" ".join(f"w{n}" for n in range(30))).count('"') == 32


# -- the artifact never shows more than the text ---------------------------------------------

# Any text a document may hold; a NUL byte makes a file binary, which is never indexed.
WORDS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=60)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(bodies=st.lists(st.tuples(WORDS, WORDS), min_size=1, max_size=6), query=WORDS)
def test_every_hit_in_the_artifact_is_in_the_text(
    tmp_path_factory: pytest.TempPathFactory, bodies: list[tuple[str, str]], query: str
) -> None:
    root = tmp_path_factory.mktemp("prop")
    docs = root / "docs"
    docs.mkdir()
    for n, (title, body) in enumerate(bodies):
        suffix = (".md", ".txt", ".html")[n % 3]
        (docs / f"d{n}{suffix}").write_text(f"# {title}\n<p>{body} common</p>\n")
    workspace = Workspace(documents=docs, data_dir=root / "data")
    result = invoke(workspace, "search_documents", {"query": f"common {query}"[:200]})
    assert not result.is_error, result.content
    assert_artifacts_within_text(result)
    lines = result.content.split("\n")
    for rank, path, title, snippet in result.artifacts[0].data["rows"]:
        assert f"{rank}. {path}: {title}" in lines
        assert f"   {snippet}" in lines
    fetched = invoke(workspace, "fetch_document", {"path": "d0.md"})
    assert_artifacts_within_text(fetched)
    assert all(leaf in fetched.content for leaf in artifact_leaves(fetched))


def test_the_documents_section_loads_from_toml(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "workspace.toml").write_text('documents = "docs"\ndata_dir = "state"\n')
    workspace = load_workspace(tmp_path / "workspace.toml")
    assert workspace.documents == tmp_path / "docs"
    assert workspace.data_dir == tmp_path / "state"
    (tmp_path / "bad.toml").write_text('documents = "nowhere"\n')
    with pytest.raises(ConfigError, match=r"bad.toml: documents: .*nowhere is not a folder"):
        load_workspace(tmp_path / "bad.toml")
