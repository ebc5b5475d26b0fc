"""Document tools: ``search_documents`` and ``fetch_document`` over the workspace's documents.

The documents folder (``documents`` in the workspace TOML) holds Markdown, text and HTML files.
Both tools first bring its full-text index up to date (``_doc_index``: SQLite FTS5 in the data
directory, refreshed incrementally, secrets never indexed and every text masked), then answer
from the index alone: a file the index left out (a secrets file, a binary, one too large, one
behind a symlink that leaves the folder) cannot be searched or fetched. A search answers with
ranked snippets, and its ``table`` artifact holds exactly the hits the text shows. Documents
the index left out for a reason it may tell (too large, too slow to read, a reader failing on
it) are listed after the hits as ``not indexed: <reason>``, in a second table as well, and
``fetch_document`` gives that reason; the other documents answer all the same.

Personal data (e-mail addresses, phones, IBANs, card numbers) is searched and read as the run's
trust zone reads it (``toolwire.tools.disclosure``): a zone the workspace's policy shows it to
finds and reads it as written; any other zone searches, counts and pages a view in which it is
masked, so no query can match, count or reveal part of it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, TypeVar

import platformdirs
from pydantic import Field

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    builtin,
    echo,
    fitted,
    format_cell,
    secret_identities,
    text_bytes,
    workspace_of,
)
from toolwire.tools.builtin._doc_index import DocumentIndex, Hit, Refresh, match_expression
from toolwire.tools.builtin._paths import check_relative
from toolwire.tools.builtin._per_file import not_indexed
from toolwire.tools.disclosure import personal_data_shown
from toolwire.workspace.config import Workspace

DEFAULT_HITS = 10  # enough to choose from, short enough to read
MAX_HITS = 25  # more snippets than a model uses well in one turn
FETCH_CHARS = 8_000  # one document's share of a turn; page on with offset
MAX_QUERY_CHARS = 200  # a question, not a document
INDEX_FAILED = "the documents index could not be read or updated."
log = logging.getLogger("toolwire.tools.builtin")
T = TypeVar("T")

Hits = Annotated[int, Field(ge=1, description=f"hits to return (at most {MAX_HITS})")]
Offset = Annotated[int, Field(ge=0, description="the first character to return")]


def index_dir(workspace: Workspace) -> Path:
    """Where documents indexes live: ``data_dir/documents``, by default in the user data
    directory."""
    base = workspace.data_dir or Path(platformdirs.user_data_dir("toolwire"))
    return base / "documents"


def _open(context: ToolContext) -> tuple[DocumentIndex, Refresh]:
    workspace = workspace_of(context)
    folder = workspace.documents
    if folder is None:
        raise ToolRefusal("the workspace has no documents folder.")
    target = index_dir(workspace)
    if target.resolve().is_relative_to(folder.resolve()):
        raise ToolRefusal("the documents index would live inside the documents folder.")
    index: DocumentIndex | None = None
    try:
        index = DocumentIndex.open(folder, target, secret_identities(workspace))
        refreshed = index.refresh()
    except (OSError, sqlite3.Error):
        log.exception("the documents index failed")
        if index is not None:
            index.close()
        raise ToolRefusal(INDEX_FAILED) from None
    return index, refreshed


@builtin(group="documents", data_class="content", integrity="untrusted")
def search_documents(query: str, context: ToolContext, limit: Hits = DEFAULT_HITS) -> ToolResult:
    """Search the workspace's documents (Markdown, text, HTML) for words; best matches first.

    Each hit is a path, a title and a snippet with the matched words in **bold**; read a whole
    document with ``fetch_document``. Artifact: ``table`` ``{columns: ["rank", "path",
    "title", "snippet"], rows}``, the hits the text shows.
    """
    if not query.strip() or len(query) > MAX_QUERY_CHARS:
        raise ToolRefusal(f"query must be 1 to {MAX_QUERY_CHARS} characters.")
    expression = match_expression(query)
    if not expression:
        raise ToolRefusal(f"query {echo(query)} holds no word to search for.")
    take = min(limit, MAX_HITS)
    index, refreshed = _open(context)
    with index:
        personal = personal_data_shown(context)
        hits, total = _guarded(lambda: index.search(expression, take, personal=personal))
        widened = not hits and " " in expression
        if widened:
            any_word = match_expression(query, any_word=True)
            hits, total = _guarded(lambda: index.search(any_word, take, personal=personal))
        left, left_total = _guarded(index.unindexed)
    tail, tables = _left_out(left, left_total, refreshed.waiting)
    if not hits:
        return ToolResult.text("\n".join([f"No document matches {echo(query)}.", *tail]), *tables)
    return _render(query, hits, total, widened, tail=tail, tables=tables)


def _left_out(
    left: list[tuple[str, str]], total: int, waiting: int
) -> tuple[list[str], tuple[Artifact, ...]]:
    """The lines (and table) saying which documents a search could not look in, and why."""
    rows = [[format_cell(path), format_cell(reason)] for path, reason in left]
    lines = [f"- {path}: {not_indexed(reason)}" for path, reason in rows]
    if total > len(rows):
        lines.append(f"({total - len(rows)} more documents not indexed)")
    if lines:
        lines.insert(0, f"Not searched ({total} documents):")
    if waiting:
        lines.append(f"({waiting} new or changed documents are not indexed yet: search again.)")
    tables = (Artifact.table("documents not indexed", ["path", "reason"], rows),) if rows else ()
    return lines, tables


def _guarded(action: Callable[[], T]) -> T:
    try:
        return action()
    except sqlite3.Error:
        log.exception("a documents search failed")
        raise ToolRefusal(INDEX_FAILED) from None


def _render(
    query: str,
    hits: list[Hit],
    total: int,
    widened: bool,
    *,
    tail: list[str],
    tables: tuple[Artifact, ...],
) -> ToolResult:
    cells = (
        [str(rank), format_cell(hit.path), format_cell(hit.title), format_cell(hit.snippet)]
        for rank, hit in enumerate(hits, start=1)
    )
    blocks = (([f"{c[0]}. {c[1]}: {c[2]}", f"   {c[3]}"], c) for c in cells)
    lines, rows = fitted(blocks, 300 + text_bytes(tail))  # 300: the header, written last
    lead = "No document holds every word; documents with any of them" if widened else "Documents"
    header = f"{lead} for {echo(query)} ({len(rows)} of {total}, best first):"
    artifact = Artifact.table("documents", ["rank", "path", "title", "snippet"], rows)
    return ToolResult.text("\n".join([header, *lines, *tail]), artifact, *tables)


@builtin(group="documents", data_class="content", integrity="untrusted")
def fetch_document(path: str, context: ToolContext, offset: Offset = 0) -> ToolResult:
    """Read one document of the workspace's documents as plain text, 8,000 characters at a time.

    ``path`` is as ``search_documents`` lists it; ``offset`` pages through a long document.
    Artifact: ``key_value`` ``{items: [["path", ...], ["title", ...], ["characters", ...]]}``.
    """
    wanted = check_relative(path).as_posix()
    index, _ = _open(context)
    with index:
        personal = personal_data_shown(context)
        document = _guarded(lambda: index.fetch(wanted, personal=personal))
        reason = _guarded(lambda: index.reason(wanted)) if document is None else None
    if reason is not None:
        raise ToolRefusal(f"{echo(wanted)} is {not_indexed(reason)}.")
    if document is None:
        raise ToolRefusal(f"no document at {echo(path)}; give a path search_documents listed.")
    total = len(document.text)
    if offset and offset >= total:
        past = f"offset {offset} is past the end: {document.path} has {total} characters."
        raise ToolRefusal(past)
    end = min(total, offset + FETCH_CHARS)
    span = f"{offset + 1}-{end} of {total}" if total else "0 of 0"
    title = format_cell(document.title)
    lines = [f"{document.path}: {title} (characters {span})", document.text[offset:end]]
    if end < total:
        lines.append(f"(more: call fetch_document with offset={end})")
    items = [("path", document.path), ("title", title), ("characters", span)]
    return ToolResult.text("\n".join(lines), Artifact.key_value(document.path, items))
