"""The governance log in the store: rows written beside the steps they come from, and read back
newest first, filtered by time, gate, tool, reason or run.

Rows are derived by :mod:`toolwire.loop.governance` from each step after the store's privacy filter
(so they hold nothing the store withheld) and from a settled run's ending. Every text is cut to
its column and made storable; a detail is a sentence of metadata, cut at ``DETAIL_CHARS``.
A row stands for ``count`` decisions: the tools a run was not offered are one row per reason,
and a call refused again for a reason it was refused for before (the same tool, the same actor)
adds to the run's row (:func:`split_calls`, :data:`ADD_TO_CALL`) instead of adding one. A row
stored before the count was kept (NULL) stands for one; :func:`merge_offer_rows` and
:func:`merge_call_rows` turn the many rows older runs have for one reason into one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, bindparam, delete, func, insert, select, update

from toolwire.core.reprs import ident, tagged
from toolwire.core.text import storable
from toolwire.loop.governance import Gate, GateDecision, not_offered
from toolwire.store import schema
from toolwire.store.records import iso

_gates = schema.gate_decisions
GATE_COLUMNS = (
    "run_id", "sequence", "at", "round", "gate", "reason", "actor", "tool", "detail", "count",
)  # fmt: skip
INSERT_GATE = insert(_gates)
DETAIL_CHARS = 500  # a detail is a sentence of counts and names; more is not a detail
MAX_AUDIT_LIMIT = 1_000  # one page of the log


@dataclass(frozen=True, slots=True, kw_only=True)
class GateRecord:
    """One row of the governance log as the store hands it back (``at`` in ISO 8601, UTC)."""

    run_id: str
    sequence: int | None
    at: str
    round: int | None
    gate: str
    reason: str
    actor: str
    tool: str | None
    detail: str | None
    count: int  # how many decisions of this gate and reason the row stands for

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(GateRecord)}

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> GateRecord:
        kept = {name: row[name] for name in GATE_COLUMNS if name not in ("at", "count")}
        return cls(**kept, at=iso(row["at"]) or "", count=row["count"] or 1)

    def __repr__(self) -> str:
        return tagged("GateRecord", run_id=ident(self.run_id), gate=ident(self.gate),
                      reason=ident(self.reason), tool=ident(self.tool))  # fmt: skip


# A call refused again, as :func:`split_calls` keys it: its count is added to the run's row.
ADD_TO_CALL = (
    update(_gates)
    .where(
        _gates.c.run_id == bindparam("same_run"),
        _gates.c.gate == str(Gate.CALL),
        _gates.c.reason == bindparam("same_reason"),
        _gates.c.tool.is_not_distinct_from(bindparam("same_tool")),
        _gates.c.actor == bindparam("same_actor"),
    )
    .values(count=func.coalesce(_gates.c.count, 1) + bindparam("added"))
)


def split_calls(
    gates: Sequence[Mapping[str, Any]],
) -> tuple[list[Mapping[str, Any]], list[dict[str, Any]]]:
    """The rows of ``gates`` (from :func:`gate_rows`) to insert as they are, and their call
    refusals merged by run, reason, tool and actor: each is added to the run's row for them
    (``ADD_TO_CALL`` with :func:`addition`), or inserted when the run has none yet."""
    others: list[Mapping[str, Any]] = []
    calls: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in gates:
        if row["gate"] != str(Gate.CALL):
            others.append(row)
            continue
        key = (row["run_id"], row["reason"], row["tool"], row["actor"])
        if key in calls:
            calls[key]["count"] += row["count"]
        else:
            calls[key] = dict(row)
    return others, list(calls.values())


def addition(row: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of ``ADD_TO_CALL`` for the call refusal ``row``."""
    return {"same_run": row["run_id"], "same_reason": row["reason"], "same_tool": row["tool"],
            "same_actor": row["actor"], "added": row["count"]}  # fmt: skip


def gate_rows(
    run_id: str, sequence: int | None, decisions: Iterable[GateDecision], at: datetime
) -> list[dict[str, Any]]:
    """The rows of ``decisions``, made at ``at`` by the step ``sequence`` of ``run_id``."""
    return [
        {
            "run_id": run_id,
            "sequence": sequence,
            "at": at,
            "round": d.round,
            "gate": _cut(str(d.gate), schema.GATE_CHARS),
            "reason": _cut(d.reason, schema.REASON_CHARS),
            "actor": _cut(d.actor, schema.NAME_CHARS),
            "tool": None if d.tool is None else _cut(d.tool, schema.NAME_CHARS),
            "detail": None if d.detail is None else _cut(d.detail, DETAIL_CHARS),
            "count": d.count,
        }
        for d in decisions
    ]


def audit_query(
    *,
    since: datetime | None = None,
    gate: Gate | None = None,
    tool: str | None = None,
    reason: str | None = None,
    run_id: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> Select[Any]:
    """The log's rows, newest first, matching every filter given."""
    if not 1 <= limit <= MAX_AUDIT_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_AUDIT_LIMIT}, not {limit}")
    if offset < 0:
        raise ValueError(f"offset must be 0 or more, not {offset}")
    query = select(_gates).order_by(_gates.c.at.desc(), _gates.c.id.desc())
    if since is not None:
        query = query.where(_gates.c.at >= since)
    if gate is not None:
        query = query.where(_gates.c.gate == str(gate))
    if tool is not None:  # storable: a NUL would make PostgreSQL refuse the query
        query = query.where(_gates.c.tool == storable(tool))
    if reason is not None:
        query = query.where(_gates.c.reason == storable(reason))
    if run_id is not None:
        query = query.where(_gates.c.run_id == run_id)
    return query.limit(limit).offset(offset)


def merge_offer_rows(connection: Connection) -> None:
    """Make the rows a run's step has for the tools it was not offered, one per tool as they
    were stored before ``count`` was kept, one row per reason (its first), as
    :func:`toolwire.loop.governance.not_offered` makes them now."""
    offer = _gates.c.gate == str(Gate.OFFER)
    keys = (_gates.c.run_id, _gates.c.sequence, _gates.c.reason)
    groups = connection.execute(
        select(*keys).where(offer, _gates.c.count.is_(None)).group_by(*keys)
        .having(func.count() > 1)
    ).all()  # fmt: skip
    for run_id, sequence, reason in groups:
        same = (offer, _gates.c.run_id == run_id, _gates.c.reason == reason,
                _gates.c.sequence.is_not_distinct_from(sequence))  # fmt: skip
        rows = connection.execute(select(_gates).where(*same).order_by(_gates.c.id)).all()
        merged = not_offered([{"tool": r.tool, "reason": reason, "detail": r.detail}
                              for r in rows], rows[0].round)[0]  # fmt: skip
        detail = None if merged.detail is None else _cut(merged.detail, DETAIL_CHARS)
        connection.execute(update(_gates).where(_gates.c.id == rows[0].id)
                           .values(tool=None, detail=detail, count=merged.count))  # fmt: skip
        connection.execute(delete(_gates).where(_gates.c.id.in_([r.id for r in rows[1:]])))


def merge_call_rows(connection: Connection) -> None:
    """Make the rows a run has for one call refusal (the same reason, tool and actor), one per
    call as they were stored before a repeated refusal added to its row, its first row,
    counting them all (a row without a count stands for one)."""
    keys = (_gates.c.run_id, _gates.c.reason, _gates.c.tool, _gates.c.actor)
    call = _gates.c.gate == str(Gate.CALL)
    groups = connection.execute(
        select(*keys).where(call).group_by(*keys).having(func.count() > 1)
    ).all()
    for run_id, reason, tool, actor in groups:
        same = (call, _gates.c.run_id == run_id, _gates.c.reason == reason,
                _gates.c.tool.is_not_distinct_from(tool), _gates.c.actor == actor)  # fmt: skip
        rows = connection.execute(
            select(_gates.c.id, _gates.c.count).where(*same).order_by(_gates.c.id)
        ).all()
        total = sum(count or 1 for _, count in rows)
        connection.execute(update(_gates).where(_gates.c.id == rows[0][0]).values(count=total))
        connection.execute(delete(_gates).where(_gates.c.id.in_([id_ for id_, _ in rows[1:]])))


def _cut(text: str, chars: int) -> str:
    return storable(text if len(text) <= chars else text[: chars - 1] + "…")
