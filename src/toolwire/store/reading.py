"""Reading stored runs: one run with its steps, a follower's progress, pages of runs and the
values their filters can take, exports in batches, the governance log.

Each function reads through the store's engine; the store waits for its step writer first, so
a process always reads its own writes. An id that cannot name a run (``rows.is_run_id``)
finds nothing and never reaches a driver. The SQL of the runs browser is built in
:mod:`toolwire.store.browse`; this module runs it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Select, select

from toolwire.store import browse, schema
from toolwire.store.browse import RunPage, RunQuery
from toolwire.store.egress import sent_after
from toolwire.store.engine import errors
from toolwire.store.gates import GateRecord
from toolwire.store.records import Progress, RunSummary, StoredRun, step_dict
from toolwire.store.rows import is_run_id
from toolwire.store.statements import STEP_COUNT, TOKENS_UNKNOWN

EXPORT_BATCH = 200  # runs read per query while exporting
_runs, _steps = schema.runs, schema.steps
Row = Mapping[Any, Any]


def get_run(engine: Engine, run_id: str) -> StoredRun | None:
    """One run with its stored steps, or None if there is no such run."""
    found = _run_and_steps(engine, run_id)
    return None if found is None else StoredRun.from_rows(*found)


def progress(engine: Engine, run_id: str, after: int) -> Progress | None:
    """The run, and its steps stored after sequence ``after``; None without such a run."""
    found = _run_and_steps(engine, run_id, after)
    if found is None:
        return None
    row, steps = found
    # read after the steps: a step's rows are written with it, so each step read has its own
    sent = sent_after(engine, run_id, after) if steps else {}
    return Progress(run=RunSummary.from_row(row), settled=bool(row["settled"]),
                    steps=[step_dict(s) for s in steps], egress=sent)  # fmt: skip


def _run_and_steps(
    engine: Engine, run_id: str, after: int | None = None
) -> tuple[Row, list[Row]] | None:
    """The run's row, with its step count, and its steps (those after ``after`` if given)."""
    if not is_run_id(run_id):
        return None
    wanted = [_steps.c.run_id == run_id]
    if after is not None:
        wanted.append(_steps.c.sequence > after)
    run_query = select(_runs, STEP_COUNT, TOKENS_UNKNOWN).where(_runs.c.id == run_id)
    step_query = select(_steps.c.sequence, _steps.c.payload).where(*wanted)
    with errors(f"read run {run_id}"), engine.connect() as connection:
        row = connection.execute(run_query).first()
        if row is None:
            return None
        steps: list[Row] = [
            s._mapping for s in connection.execute(step_query.order_by(_steps.c.sequence))
        ]
    return row._mapping, steps


def find_runs(engine: Engine, query: RunQuery, *, total: bool) -> RunPage:
    """One page of the runs ``query`` asks for, and (with ``total``) how many match."""
    dialect = engine.dialect
    with errors("list runs"), engine.connect() as connection:
        rows = [
            RunSummary.from_row(r._mapping) for r in connection.execute(browse.page(query, dialect))
        ]
        if not total:
            return RunPage(runs=rows, total=-1)
        if query.offset == 0 and len(rows) < query.limit:
            return RunPage(runs=rows, total=len(rows))
        counted = connection.execute(browse.count(query, dialect)).scalar_one()
    return RunPage(runs=rows, total=int(counted))


def neighbours(engine: Engine, query: RunQuery, run_id: str) -> browse.Neighbours | None:
    """The runs before and after run ``run_id`` in the listing ``query`` asks for (its filters
    and order; its page is ignored), its place there and the listing's size; None without
    such a run."""
    if not is_run_id(run_id):
        return None
    dialect = engine.dialect
    with errors(f"find the neighbours of run {run_id}"), engine.connect() as connection:
        found = connection.execute(browse.anchor(query, run_id)).first()
        if found is None:
            return None
        at = (run_id, bool(found.unvalued), int(found.uid))
        near = [
            connection.execute(browse.neighbour(query, dialect, *at, after=after)).first()
            for after in (False, True)
        ]
        listed = browse.conditions(query, dialect)
        matches = connection.execute(
            select(_runs.c.uid).where(*listed, _runs.c.id == run_id)
        ).first()
        ahead = browse.count(query, dialect).where(browse.before(query, *at))
        position = None if matches is None else connection.execute(ahead).scalar_one() + 1
        total = connection.execute(browse.count(query, dialect)).scalar_one()
    previous, following = (None if row is None else RunSummary.from_row(row._mapping)
                           for row in near)  # fmt: skip
    return browse.Neighbours(previous=previous, next=following, position=position,
                             total=int(total))  # fmt: skip


def facets(engine: Engine) -> dict[str, list[str]]:
    """The values each filter of the runs browser can take (at most ``MAX_FACETS`` each)."""
    with errors("list filter values"), engine.connect() as connection:
        return {
            name: [str(v) for v in connection.execute(statement).scalars()]
            for name, statement in browse.facets().items()
        }


def first_requests(engine: Engine, run_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The first stored request step of each of ``run_ids`` that has one."""
    wanted = [i for i in run_ids if is_run_id(i)]
    if not wanted:
        return {}
    with errors("read requests"), engine.connect() as connection:
        rows = connection.execute(browse.first_requests(wanted)).all()
    return {row.run_id: step_dict({"sequence": 0, "payload": row.payload}) for row in rows}


def export(engine: Engine, query: RunQuery) -> Iterator[StoredRun]:
    """Every run ``query`` matches, oldest first, each with its steps; read in batches."""
    batch = dataclasses.replace(query, limit=EXPORT_BATCH, offset=0)
    after: tuple[datetime, int] | None = None
    while True:
        with errors("export runs"), engine.connect() as connection:
            rows = [r._mapping for r in connection.execute(
                browse.export_batch(batch, engine.dialect, after))]  # fmt: skip
            ids = [row["id"] for row in rows]
            steps = connection.execute(browse.steps_of(ids)).all() if ids else []
        by_run: dict[str, list[Row]] = {}
        for step in steps:
            by_run.setdefault(step.run_id, []).append(dict(step._mapping))
        for row in rows:
            yield StoredRun.from_rows(row, by_run.get(row["id"], []))
        if len(rows) < EXPORT_BATCH:
            return
        after = (rows[-1]["created_at"], rows[-1]["uid"])


def ids_starting(engine: Engine, prefix: str) -> list[str]:
    """Up to 100 run ids that begin with ``prefix``."""
    if not prefix or not is_run_id(prefix):
        return []
    with errors("find runs by id"), engine.connect() as connection:
        return list(connection.execute(browse.ids_starting(prefix)).scalars())


def gate_records(engine: Engine, query: Select[Any]) -> list[GateRecord]:
    """The governance log's rows ``query`` (``gates.audit_query``) selects."""
    with errors("read the governance log"), engine.connect() as connection:
        return [GateRecord.from_row(r._mapping) for r in connection.execute(query)]
