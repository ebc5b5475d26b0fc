"""Record tools: ``read_records``, ``search_records``, ``count_records``.

``read_records`` builds its text and its ``table`` artifact in one pass from the same formatted
cells, and stops adding rows before the text would outgrow ``TEXT_BUDGET_BYTES``: the artifact
can therefore never show a cell the text does not. Sensitive tables and columns are never
selected (see ``_sql``); filters bind their values; the limit is clamped to ``MAX_LIMIT``.
Search phrases and filter values match what the model would be shown, never masked text (see
``_matching``), so neither the rows reported nor a count confirms a secret, nor personal data
the run's trust zone reads masked. In such a zone (external, by default) a phrase or filter
value that is itself personal data is refused: it could never match a shown cell, and
"nothing found" would read as a fact about the data. A zone shown personal data (``local``
and ``private_hosted``, by default) filters and searches on it as stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Engine, Select, String, Table, Text, func, select
from sqlalchemy.sql import ColumnElement, Executable

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    builtin,
    cell_text,
    echo,
    fitted,
    format_cell,
    text_bytes,
)
from toolwire.tools.builtin._matching import (
    View,
    count_kept,
    phrase_matcher,
    scan,
    shown_as_stored,
)
from toolwire.tools.builtin._sensitive import safe_cell
from toolwire.tools.builtin._sql import (
    Scalar,
    engine_of,
    equality_filters,
    fetch_rows,
    guard,
    order_columns,
    pick_columns,
    readable_columns,
    readable_table,
)
from toolwire.tools.disclosure import check_matchable, personal_view

DEFAULT_LIMIT = 20  # a screenful: enough to answer, cheap to send
MAX_LIMIT = 50  # more rows than a model can use well in one turn
MAX_OFFSET = 10_000  # paging deeper than this is a dump, not a lookup
MAX_QUERY_CHARS = 200  # a search phrase, not a document
# Searching masks each candidate cell in Python; past this many rows a search is a dump.
MAX_SEARCHED_ROWS = 100_000

Where = Annotated[dict[str, Scalar] | None, Field(description="column = value filters")]
Limit = Annotated[int, Field(ge=1, description=f"rows to return (at most {MAX_LIMIT})")]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET)]


@builtin(group="records", data_class="content", integrity="untrusted")
def read_records(
    *,
    table: str,
    context: ToolContext,
    fields: list[str] | None = None,
    where_equals: Where = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> ToolResult:
    """Read rows of one database table, optionally filtered by column equality.

    Sensitive columns (passwords, hashes, tokens, keys, ...) are never returned. A filter
    matches only cells shown unmasked to this run's zone; a filter value that is personal data
    the zone reads masked is refused. Artifact: ``table`` ``{columns: [field, ...], rows:
    [[cell, ...], ...]}``, the same cells as the text.
    """
    engine = engine_of(context)
    sql_table = readable_table(engine, table.strip())
    columns, refused = pick_columns(sql_table, [f.strip() for f in fields] if fields else None)
    if not columns:
        raise ToolRefusal(f"no readable fields in table {echo(sql_table.name)}.")
    query = (
        select(*columns)
        .where(*_filters(sql_table, where_equals, context))
        .order_by(*order_columns(sql_table))
    )
    take = min(limit, MAX_LIMIT)
    if where_equals:
        view = personal_view(context)
        rows = _filtered(
            engine, query, table=sql_table, where=where_equals, view=view, offset=offset, take=take
        )
    else:
        rows = fetch_rows(engine, query.limit(take).offset(offset))
    notes = _notes(refused, limit)
    return render_rows(sql_table.name, [c.name for c in columns], rows, offset, notes)


@builtin(group="records", data_class="content", integrity="untrusted")
def search_records(
    table: str, query: str, context: ToolContext, limit: Limit = DEFAULT_LIMIT
) -> ToolResult:
    """Find rows whose readable text columns show ``query`` (case-insensitive).

    Cells are matched as this run's zone is shown them: masked secrets, and personal data the
    zone reads masked, never match; a query that is personal data such a zone reads masked is
    refused. Artifact: ``table`` ``{columns, rows}``, the same cells as the text.
    """
    phrase = query.strip()
    if not phrase or len(phrase) > MAX_QUERY_CHARS:
        raise ToolRefusal(f"query must be 1 to {MAX_QUERY_CHARS} characters.")
    check_matchable(phrase, context, "the query")
    engine = engine_of(context)
    sql_table = readable_table(engine, table.strip())
    columns = readable_columns(sql_table)
    texts = [c for c in columns if isinstance(c.type, String | Text)]
    if not texts:
        raise ToolRefusal(f"table {echo(sql_table.name)} has no readable text columns.")
    searched = [n for n, c in enumerate(columns) if isinstance(c.type, String | Text)]
    statement = select(*columns).order_by(*order_columns(sql_table)).limit(MAX_SEARCHED_ROWS)
    matches = phrase_matcher(phrase, personal_view(context))
    take = min(limit, MAX_LIMIT)
    rows, read = guard(
        lambda: scan(engine, statement, lambda row: any(matches(row[n]) for n in searched), 0, take)
    )
    notes = _notes([], limit)
    if read >= MAX_SEARCHED_ROWS and len(rows) < take:
        notes.append(f"searched the first {MAX_SEARCHED_ROWS} rows only")
    return render_rows(sql_table.name, [c.name for c in columns], rows, 0, notes)


@builtin(group="records", data_class="content", integrity="trusted")
def count_records(table: str, context: ToolContext, where_equals: Where = None) -> ToolResult:
    """Count the rows of one table, optionally filtered by column equality.

    A row counts for a filter only when its filtered cells are shown unmasked to this run's
    zone; a filter value that is personal data the zone reads masked is refused.
    """
    engine = engine_of(context)
    sql_table = readable_table(engine, table.strip())
    filters = _filters(sql_table, where_equals, context)
    if where_equals:
        keys = [sql_table.columns[k] for k in where_equals]
        statement = select(*keys).select_from(sql_table).where(*filters)
        keep = shown_as_stored(list(where_equals.values()), personal_view(context))
        total = guard(lambda: count_kept(engine, statement, keep))
    else:
        total = guard(lambda: _scalar(engine, select(func.count()).select_from(sql_table)))
    return ToolResult.text(f"{sql_table.name}: {total} rows match.")


def _filters(
    table: Table, where: dict[str, Scalar] | None, context: ToolContext
) -> list[ColumnElement[bool]]:
    """The ``column = :value`` conditions, once no value is personal data the zone reads
    masked (a number's text counts: a card number given as an integer)."""
    conditions = equality_filters(table, where)
    for key, value in (where or {}).items():
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            check_matchable(cell_text(value), context, f"the value given for {echo(key)}")
    return conditions


def _filtered(
    engine: Engine,
    query: Select[*tuple[Any, ...]],
    *,
    table: Table,
    where: dict[str, Scalar],
    view: View,
    offset: int,
    take: int,
) -> list[Sequence[object]]:
    """Rows matching ``where`` whose filtered cells show unmasked, paged in Python."""
    width = len(query.selected_columns)
    keys = [table.columns[k].label(f"filter_{n}") for n, k in enumerate(where)]
    keep = shown_as_stored(list(where.values()), view)
    rows, _ = guard(
        lambda: scan(engine, query.add_columns(*keys), lambda r: keep(r[width:]), offset, take)
    )
    return [tuple(row[:width]) for row in rows]


def _scalar(engine: Engine, statement: Executable) -> int:
    with engine.connect() as connection:
        return int(connection.execute(statement).scalar_one())


def _notes(refused: list[str], limit: int) -> list[str]:
    notes = []
    if refused:
        shown = ", ".join(echo(name) for name in refused[:10])
        notes.append(f"Fields not readable (unknown or sensitive): {shown}")
    if limit > MAX_LIMIT:
        notes.append(f"limit capped at {MAX_LIMIT}")
    return notes


def render_rows(
    table: str,
    fields: list[str],
    rows: Sequence[Sequence[object]],
    offset: int,
    notes: Sequence[str] = (),
    *,
    heading: Callable[[int], str] | None = None,
) -> ToolResult:
    """Text and table artifact in one pass, from the same cells, within the text budget.

    ``heading`` writes the first line from the number of rows shown."""
    lines = [*notes]
    if not rows:
        lines.append(f"No records in {table} for the given filters.")
        return ToolResult.text("\n".join(lines))
    used = text_bytes(lines) + 300  # the header, written last
    blocks, shown = row_blocks(table, fields, rows, offset, used)
    header = (
        heading(len(shown)) if heading else f"Records in {table} ({len(shown)}, offset {offset}):"
    )
    artifact = Artifact.table(f"{table} records", fields, shown)
    return ToolResult.text("\n".join([header, *lines, *blocks]), artifact)


def row_blocks(
    table: str, fields: list[str], rows: Sequence[Sequence[object]], offset: int, used: int
) -> tuple[list[str], list[list[str]]]:
    """One block of lines per row (``- table row N`` and ``  field: cell``) and the rows'
    cells, both ending where the text, ``used`` bytes so far, would outgrow the budget."""
    cells = ([format_cell(safe_cell(v)) for v in row] for row in rows)
    blocks = (_block(table, fields, number, row) for number, row in enumerate(cells, offset + 1))
    more = "({} more rows not shown: narrow the query)"
    return fitted(blocks, used, total=len(rows), more=more)


def _block(
    table: str, fields: list[str], number: int, cells: list[str]
) -> tuple[list[str], list[str]]:
    lines = [f"- {table} row {number}"]
    lines += [f"  {f}: {c}" for f, c in zip(fields, cells, strict=True)]
    return lines, cells
