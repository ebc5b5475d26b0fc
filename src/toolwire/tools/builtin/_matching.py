"""Matching model input against rows as the model would see them, never as they are stored.

A tool that filters rows on a phrase or value the model chooses would otherwise be an oracle:
the rows it reports (or their count) would confirm a secret, or personal data the run's zone
reads masked, that every shown cell masks. So, for the run's zone (its ``View``:
:func:`toolwire.tools.disclosure.personal_view`, personal data as it is or masked):

- ``search_records`` phrases match a cell's shown text (``_sensitive.shown_text``: JSON masked
  by key, the redactor applied, whitespace runs as one space, not yet cut; then personal data
  as the zone reads it), case-folded. A phrase without ``*`` cannot match inside a mask (a
  mask is ``*`` with at most the ``@``, ``+`` or country code of what it replaced), so a
  non-JSON cell whose stored text lacks the phrase is rejected before it is masked; every
  other cell is masked and then matched.
- ``where_equals`` values match through the database (``column = :value``), and a row counts
  only when each filtered cell is shown as stored: a cell the redactor, or the zone's view of
  personal data, would mask never matches a filter, whatever the value, so neither rows nor
  counts confirm it. (A value that is itself personal data the zone reads masked is refused
  before the query, :func:`toolwire.tools.disclosure.check_matchable`: it could never match.)

Rows are read in the statement's order and scanning stops once enough rows are kept, so limits,
offsets and order mean what they meant in SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Engine, Row
from sqlalchemy.sql import Select

from toolwire.tools.builtin._common import cell_text
from toolwire.tools.builtin._sensitive import collapse_whitespace, safe_cell, shown_text

RowTest = Callable[[Sequence[object]], bool]
View = Callable[[str], str]  # personal data in a text as the run's zone reads it


def phrase_matcher(phrase: str, view: View) -> Callable[[object], bool]:
    """Whether a cell's shown text contains ``phrase``, ignoring case and whitespace runs."""
    folded = collapse_whitespace(phrase).casefold()
    may_hit_a_mask = "*" in folded

    def matches(value: object) -> bool:
        if not isinstance(value, str):
            return False
        stored = collapse_whitespace(value).casefold()
        if not may_hit_a_mask and folded not in stored and not _json_like(value):
            return False  # masking only removes text or inserts "*": no new hit is possible
        shown = zone_text(value, view)
        return shown is not None and folded in shown.casefold()

    return matches


def zone_text(value: object, view: View) -> str | None:
    """A string cell's text as the zone reads it, before any cut; None for any other cell."""
    shown = shown_text(value)
    return None if shown is None else view(shown)


def shown_as_stored(values: Sequence[object], view: View) -> RowTest:
    """Whether the filtered cells of a row the database matched on ``values`` show unmasked."""
    verbatim = [unmasked(v, view) for v in values]

    def test(cells: Sequence[object]) -> bool:
        return all(
            verbatim[n] if cell == value else unmasked(cell, view)
            for n, (cell, value) in enumerate(zip(cells, values, strict=True))
        )

    return test


def unmasked(value: object, view: View) -> bool:
    """Whether a cell shows as it is stored: no secret masked in it, and no personal data the
    zone reads masked in its text (a number's too: a card number kept as an integer)."""
    if safe_cell(value) != value:
        return False
    if value is None or isinstance(value, bool | bytes | bytearray | memoryview):
        return True
    text = cell_text(value)
    return view(text) == text


def scan(
    engine: Engine, statement: Select[*tuple[Any, ...]], keep: RowTest, skip: int, take: int
) -> tuple[list[Row[Any]], int]:
    """The rows ``keep`` accepts, after skipping ``skip`` of them, at most ``take``; and how
    many rows were read."""
    kept: list[Row[Any]] = []
    read = 0
    with engine.connect() as connection:
        for row in connection.execution_options(stream_results=True).execute(statement):
            read += 1
            if not keep(row):
                continue
            if skip:
                skip -= 1
                continue
            kept.append(row)
            if len(kept) >= take:
                break
    return kept, read


def count_kept(engine: Engine, statement: Select[*tuple[Any, ...]], keep: RowTest) -> int:
    """How many rows of ``statement`` ``keep`` accepts."""
    with engine.connect() as connection:
        rows = connection.execution_options(stream_results=True).execute(statement)
        return sum(1 for row in rows if keep(row))


def _json_like(value: str) -> bool:
    return value.lstrip()[:1] in ("{", "[")
