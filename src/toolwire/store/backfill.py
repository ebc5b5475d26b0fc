"""Migration 9's backfill: what the runs browser reads, for runs stored before it existed.

Every stored step is read once, in key order and in batches (a database of any size fits in
memory a batch at a time), for its tool name, its error flag and its words (see
:mod:`toolwire.store.search`); then every finished run gets its answer's words, its count of
failed calls and its duration. Payloads are decoded in Python, the same way on both engines.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, bindparam, or_, select, update

from toolwire.core.jsonenc import loads
from toolwire.store import schema, search
from toolwire.store.statements import FINISH_ALL_TOTALS, step_columns

BATCH = 1_000  # steps read per query
_steps, _runs = schema.steps, schema.runs


def backfill(connection: Connection) -> None:
    """Fill the step columns, the search index and the run totals of every stored run."""
    insert = search.insert(connection.dialect)
    mark = (
        update(_steps)
        .where(_steps.c.run_id == bindparam("key_run"), _steps.c.sequence == bindparam("key_seq"))
        .values(tool_name=bindparam("tool_name"), is_error=bindparam("is_error"))
    )
    for rows in _step_batches(connection):
        decoded = [(row, _payload(row.payload)) for row in rows]
        marks = [_mark(row, payload) for row, payload in decoded if row.kind == "tool"]
        if marks:
            connection.execute(mark, marks)
        texts = [_text(row, payload) for row, payload in decoded]
        if any(texts):
            connection.execute(insert, [t for t in texts if t])
    finished = select(_runs.c.id, _runs.c.final_answer, _runs.c.error).where(
        _runs.c.finished_at.is_not(None), or_(_runs.c.final_answer.is_not(None),
                                              _runs.c.error.is_not(None))
    )  # fmt: skip
    result = connection.execute(finished)
    while rows := result.fetchmany(BATCH):
        answers = [{"run_id": r.id, "sequence": 0, "body": search.run_body(r.final_answer,
                                                                          r.error)}
                   for r in rows]  # fmt: skip
        if bodies := [a for a in answers if a["body"]]:
            connection.execute(insert, bodies)
    connection.execute(FINISH_ALL_TOTALS)


def _step_batches(connection: Connection) -> Any:
    query = select(_steps.c.run_id, _steps.c.sequence, _steps.c.kind, _steps.c.payload)
    query = query.order_by(_steps.c.run_id, _steps.c.sequence).limit(BATCH)
    after: tuple[str, int] | None = None
    while True:
        page = query
        if after is not None:
            run_id, sequence = after
            page = query.where(
                or_(
                    _steps.c.run_id > run_id,
                    and_(_steps.c.run_id == run_id, _steps.c.sequence > sequence),
                )
            )
        rows = connection.execute(page).all()
        if not rows:
            return
        yield rows
        after = (rows[-1].run_id, rows[-1].sequence)


def _payload(text: str) -> dict[str, Any]:
    try:
        value = loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _mark(row: Any, payload: dict[str, Any]) -> dict[str, Any]:
    return {"key_run": row.run_id, "key_seq": row.sequence, **step_columns("tool", payload)}


def _text(row: Any, payload: dict[str, Any]) -> dict[str, Any] | None:
    body = search.step_body(payload)
    return {"run_id": row.run_id, "sequence": row.sequence, "body": body} if body else None
