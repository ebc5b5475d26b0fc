"""Search over what the privacy level kept: the words of each stored step, per run.

The index is built from the *filtered* step, so it holds exactly the words the store kept: at
``none`` and ``metadata`` only names (tools, errors); at ``redacted`` the redacted text; at
``full`` everything. Words are runs of letters and digits, lower-cased; the same words go to
both engines, so a query means the same on each: every word of the query must begin a word
of one of the run's steps (``"orders ada"`` finds a run whose texts hold "orders" and "Ada's").

- SQLite: an FTS5 table ``run_text(body)``. Its rowid is the run's ``uid`` times
  ``SEQUENCE_SPAN`` plus the step's sequence, so the rows of a run are one rowid range (found
  and deleted by range, with no other index).
- PostgreSQL: a table ``run_text(run_id, sequence, body tsvector)`` with a GIN index; its rows
  go when their run does (a foreign key that cascades).

Row 0 of a run holds its answer and its error, written when it settles. The request of round
1 is indexed with its messages; later requests repeat the conversation, whose new parts are
already indexed with the steps that produced them, so they add no words. The tools a request
offered, tags, digests and image data are never indexed. A step's words are cut at
``MAX_INDEXED_CHARS``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Select, TextClause, bindparam, literal_column, select, text
from sqlalchemy.engine.interfaces import Dialect
from sqlalchemy.sql.elements import ColumnElement

from toolwire.store import schema

TABLE = "run_text"
SEQUENCE_SPAN = 1 << 24  # step sequences per run in the SQLite rowid (written out in insert)
MAX_INDEXED_CHARS = 200_000  # words of one step: four full tool results and their artifacts
MAX_QUERY_WORDS = 16  # a search, not a document
_WORD = re.compile(r"[^\W_]+")
# Fields that say nothing a person would search for: tags, digests and times.
# So are the tools a request offered: every run of a setup offers the same ones.
_UNSEARCHED = frozenset(
    {"kind", "stop", "finish_reason", "turn_digest", "decided_at", "tool_call_id",
     "content_withheld", "sequence", "tool_specs"}
)  # fmt: skip


def words(value: str) -> list[str]:
    """The words of ``value``, lower-cased: runs of letters and digits."""
    return _WORD.findall(value.lower())


def query_words(value: str) -> list[str]:
    """The words of a search, at most ``MAX_QUERY_WORDS``, each once."""
    return list(dict.fromkeys(words(value)))[:MAX_QUERY_WORDS]


def step_body(step: Mapping[str, Any]) -> str:
    """The words of one filtered step, joined by spaces ('' when it has none)."""
    if step.get("kind") == "request" and step.get("round") != 1:
        return ""
    return _joined(_strings(step, 0))


def run_body(answer: str | None, error: str | None) -> str:
    """The words of a run's kept answer and its error."""
    return _joined(s for s in (answer, error) if isinstance(s, str))


def _joined(parts: Iterator[str] | Sequence[str]) -> str:
    out: list[str] = []
    size = 0
    for part in parts:
        for word in words(part):
            size += len(word) + 1
            if size > MAX_INDEXED_CHARS:
                return " ".join(out)
            out.append(word)
    return " ".join(out)


def _strings(value: Any, depth: int) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif depth > 64:
        return
    elif isinstance(value, Mapping):
        if value.get("type") == "image":  # an artifact whose data is pixels, not words
            yield from _strings(value.get("label"), depth + 1)
            return
        for key, item in value.items():
            if key not in _UNSEARCHED:
                yield from _strings(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item, depth + 1)


# -- the table, per dialect ---------------------------------------------------------------------


def create(connection: Connection) -> None:
    """Create the index table (nothing when it exists)."""
    if connection.dialect.name == "sqlite":
        # Diacritics kept, as PostgreSQL's "simple" configuration keeps them: one meaning.
        connection.execute(
            text(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING "
                "fts5(body, tokenize = 'unicode61 remove_diacritics 0')"
            )
        )
        return
    connection.execute(
        text(
            f"CREATE TABLE IF NOT EXISTS {TABLE} ("
            f"run_id VARCHAR({schema.ID_CHARS}) NOT NULL REFERENCES runs (id) ON DELETE CASCADE, "
            "sequence INTEGER NOT NULL, body TSVECTOR NOT NULL, PRIMARY KEY (run_id, sequence))"
        )
    )
    connection.execute(
        text(f"CREATE INDEX IF NOT EXISTS ix_{TABLE}_body ON {TABLE} USING gin (body)")
    )


# Built once, like the store's other frequent statements: every settle inserts with one.
_INSERT_SQLITE = text(
    "INSERT INTO run_text (rowid, body) VALUES ("
    "(SELECT uid FROM runs WHERE id = :run_id) * 16777216 + :sequence, :body)"
).bindparams(bindparam("run_id"), bindparam("sequence"), bindparam("body"))
_INSERT_POSTGRESQL = text(
    "INSERT INTO run_text (run_id, sequence, body) "
    "VALUES (:run_id, :sequence, to_tsvector('simple', :body))"
).bindparams(bindparam("run_id"), bindparam("sequence"), bindparam("body"))


def insert(dialect: Dialect) -> TextClause:
    """Insert one row: parameters ``run_id``, ``sequence`` and ``body``."""
    return _INSERT_SQLITE if dialect.name == "sqlite" else _INSERT_POSTGRESQL


def matching(dialect: Dialect, found: Sequence[str]) -> ColumnElement[bool]:
    """Runs whose indexed words begin with every one of ``found`` (from ``query_words``)."""
    runs = schema.runs
    if dialect.name == "sqlite":
        expression = " ".join(f'"{w}"*' for w in found)
        hits: Select[Any] = select(literal_column(f"rowid / {SEQUENCE_SPAN}")).select_from(
            text(TABLE)
        )
        return runs.c.uid.in_(hits.where(literal_column(TABLE).op("MATCH")(expression)))
    query = text("to_tsquery('simple', :search_terms)").bindparams(
        search_terms=" & ".join(f"{w}:*" for w in found)
    )
    hits = select(literal_column("run_id")).select_from(text(TABLE))
    return runs.c.id.in_(hits.where(literal_column("body").op("@@")(query)))


def delete_runs(connection: Connection, uids: Sequence[int]) -> None:
    """Drop the rows of runs about to be deleted (SQLite: PostgreSQL's rows cascade)."""
    if connection.dialect.name != "sqlite" or not uids:
        return
    statement = text("DELETE FROM run_text WHERE rowid >= :low AND rowid < :high")
    for uid in uids:
        low = uid * SEQUENCE_SPAN
        connection.execute(statement, {"low": low, "high": low + SEQUENCE_SPAN})
