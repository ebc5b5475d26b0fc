"""File reference tools: ``find_missing_files`` and ``file_references``.

``find_missing_files`` reads one readable column of one readable table as file paths in a file
root and lists the rows whose file is not there. A stored path is taken relative to the root (a
leading ``/`` is the root's top); one that leaves the root (``..``, an absolute path elsewhere,
a symlink out) is reported as outside and never looked up, so the tool cannot probe the disk
beyond the root. URLs are not paths and are skipped.

``file_references`` finds where a file of a root is named: cells of readable text columns (as
shown to the run's zone, so a masked secret or masked personal data never matches; see
``_matching``) and lines of the root's other files (secrets files never read; a line counts
only when its text as the zone reads it still names the file).
It answers with locations only: table, column and row, or path and line.

Both scan bounded amounts (rows, tables, files, bytes) and stop adding to text and artifact
alike before the text budget runs out.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Sequence
from itertools import chain, islice
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Column, Engine, String, Text, select

from toolwire.core.errors import ToolRefusal
from toolwire.core.redact import mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    Root,
    builtin,
    echo,
    files_root,
    fitted,
    format_cell,
    secret_identities,
    workspace_of,
)
from toolwire.tools.builtin._matching import View, phrase_matcher, scan
from toolwire.tools.builtin._paths import check_relative, display, walk_files
from toolwire.tools.builtin._secrets import SecretIdentities, has_secret_content, is_secret_file
from toolwire.tools.builtin._sensitive import safe_cell
from toolwire.tools.builtin._sql import (
    engine_of,
    guard,
    order_columns,
    readable_column,
    readable_columns,
    readable_table,
    table_names,
)
from toolwire.tools.disclosure import personal_view
from toolwire.workspace.maps import DEFAULT_ROOT

MAX_SCANNED_ROWS = 10_000  # rows read per table: a reference check, not a full audit
MAX_REPORTED = 100  # rows or references listed per call
MAX_TABLES = 100  # tables searched by file_references
MAX_FILES = 2_000  # files searched by file_references
MAX_FILE_BYTES = 1_000_000  # larger files are data, not sources that name files
MISSING, OUTSIDE, NOT_A_FILE = "missing", "outside the root", "not a file"

Reported = Annotated[int, Field(ge=1, description=f"rows to list (at most {MAX_REPORTED})")]


@builtin(group="files", data_class="content", integrity="untrusted")
def find_missing_files(
    table: str,
    column: str,
    context: ToolContext,
    root: Root = DEFAULT_ROOT,
    limit: Reported = 50,
) -> ToolResult:
    """Rows of a table whose path column names a file that does not exist in a file root.

    Artifact: ``table`` ``{columns: ["row", "path", "problem"], rows}``, the rows the text lists.
    """
    top = files_root(context, root)
    engine = engine_of(context)
    sql_table = readable_table(engine, table.strip())
    paths = readable_column(sql_table, column)
    keys = order_columns(sql_table) or [paths]
    statement = (
        select(*keys, paths).where(paths.is_not(None)).order_by(*keys).limit(MAX_SCANNED_ROWS)
    )
    base = top.resolve()

    def broken(row: Sequence[object]) -> bool:
        return _problem(base, row[-1]) is not None

    rows, checked = guard(lambda: scan(engine, statement, broken, 0, min(limit, MAX_REPORTED)))
    found = [[_key(keys, row), format_cell(safe_cell(row[-1])), _problem(base, row[-1]) or ""]
             for row in rows]  # fmt: skip
    where = f"{sql_table.name}.{paths.name} in root {echo(root)}"
    if not found:
        return ToolResult.text(f"Every path in {where} names a file ({checked} rows checked).")
    lines, shown = _listed(found)
    header = f"Paths in {where} that name no file ({len(shown)} of {checked} rows checked):"
    artifact = Artifact.table("missing files", ["row", "path", "problem"], shown)
    return ToolResult.text("\n".join([header, *lines]), artifact)


def _problem(base: Path, value: object) -> str | None:
    """Why a stored path names no file in the root (resolved ``base``); None when it does."""
    if not isinstance(value, str) or not value.strip() or "://" in value:
        return None
    raw = value.strip().lstrip("/")
    try:
        relative = check_relative(raw or ".")
    except ToolRefusal:
        return OUTSIDE
    try:
        target = (base / relative).resolve()
        if not target.is_relative_to(base):
            return OUTSIDE
        if not target.exists():
            return MISSING
        return None if target.is_file() else NOT_A_FILE
    except OSError:  # a name too long, a loop of links: no file by that name can be read
        return MISSING


def _key(keys: list[Column[Any]], row: Sequence[object]) -> str:
    return ", ".join(
        f"{c.name}={format_cell(safe_cell(v))}" for c, v in zip(keys, row, strict=False)
    )


def _listed(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Text lines and artifact rows for ``rows``, both cut where the text budget ends (400
    bytes kept for the header, written last)."""
    entries = (([f"- {r[0]}: {r[1]} ({r[2]})"], r) for r in rows)
    return fitted(entries, 400, total=len(rows), more="({} more not shown)")


@builtin(group="files", data_class="content", integrity="untrusted")
def file_references(path: str, context: ToolContext, root: Root = DEFAULT_ROOT) -> ToolResult:
    """Where a file of a file root is named: database cells and lines of the root's other files.

    Matches the file's path or its name. Answers with locations only. Artifact: ``table``
    ``{columns: ["where", "location", "matched"], rows}``, the references the text lists.
    """
    relative = check_relative(path.strip().lstrip("/") or ".")
    if relative == PurePosixPath("."):
        raise ToolRefusal("give the path of a file in the root.")
    top = files_root(context, root)
    wanted = relative.as_posix()
    everywhere = chain(
        _database_references(context, wanted),
        _file_references(top, wanted, secret_identities(workspace_of(context)), context),
    )
    found = list(islice(everywhere, MAX_REPORTED))
    if not found:
        return ToolResult.text(
            f"No references to {echo(wanted)} or its name {echo(relative.name)}."
        )
    lines, shown = _listed(found)
    header = f"References to {echo(wanted)} ({len(shown)}):"
    artifact = Artifact.table("file references", ["where", "location", "matched"], shown)
    return ToolResult.text("\n".join([header, *lines]), artifact)


def _matchers(wanted: str, view: View) -> list[tuple[str, Callable[[object], bool]]]:
    name = PurePosixPath(wanted).name
    both = [("path", phrase_matcher(wanted, view))]
    return both + ([("name", phrase_matcher(name, view))] if name != wanted else [])


def _database_references(context: ToolContext, wanted: str) -> Iterator[list[str]]:
    if not workspace_of(context).database_url:
        return
    engine = engine_of(context)
    matchers = _matchers(wanted, personal_view(context))
    for name in table_names(engine)[:MAX_TABLES]:
        yield from guard(functools.partial(_table_references, engine, name, matchers))


def _table_references(
    engine: Engine, name: str, matchers: list[tuple[str, Callable[[object], bool]]]
) -> list[list[str]]:
    table = readable_table(engine, name)
    texts = [c for c in readable_columns(table) if isinstance(c.type, String | Text)]
    keys = order_columns(table)
    if not texts:
        return []
    statement = select(*keys, *texts).order_by(*keys).limit(MAX_SCANNED_ROWS)

    def hit(row: Sequence[object]) -> bool:
        return any(m(cell) for cell in row[len(keys) :] for _, m in matchers)

    rows, _ = scan(engine, statement, hit, 0, MAX_REPORTED)
    found = []
    for row in rows:
        where = _key(keys, row) or "a row"
        for column, cell in zip(texts, row[len(keys) :], strict=True):
            matched = next((kind for kind, m in matchers if m(cell)), None)
            if matched:
                found.append(["database", f"{table.name}.{column.name} {where}", matched])
    return found


def _file_references(
    top: Path, wanted: str, known: SecretIdentities, context: ToolContext
) -> Iterator[list[str]]:
    base = top.resolve()
    view = personal_view(context)
    needles = [("path", wanted)]
    name = PurePosixPath(wanted).name
    needles += [("name", name)] if name != wanted else []
    for count, entry in enumerate(walk_files(base, base)):
        shown = display(top, entry)
        if count >= MAX_FILES:
            break
        if shown == wanted:
            continue
        if is_secret_file(base, entry, sniff_bytes=0, known=known):
            continue
        for number, matched in _lines_naming(entry, needles, view):
            yield ["file", f"{shown}:{number}", matched]


def _lines_naming(
    entry: Path, needles: list[tuple[str, str]], view: View
) -> Iterator[tuple[int, str]]:
    try:
        if os.path.getsize(entry) > MAX_FILE_BYTES:
            return
        data = entry.read_bytes()
    except OSError:
        return
    if b"\x00" in data or has_secret_content(data):
        return
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        candidates = [(kind, n) for kind, n in needles if n in line]
        if candidates:
            masked = view(mask_secrets(line))  # masking only removes text: check what is shown
            matched = next((kind for kind, n in candidates if n in masked), None)
            if matched:
                yield number, matched
