"""The egress ledger in the store: rows written beside the steps they come from, and read back
per run or summed over a time range.

A step that records a provider's answer (``llm``) or a chain's failed attempt
(``provider_failed``) carries what its request sent of tool output
(:class:`~toolwire.core.egress.Sent`); its rows say so per tool, data class and label, in the
same transaction as the step. They hold counts and registered names only (an unknown name is
already ``(unregistered)``), so they are written at every privacy level. :func:`ledger_lines`
is the one shape of them: the rows, and the live stream's ``egress`` lines
(:mod:`toolwire.inspector.stream`), so that a run watched live and read back later agree.

A workspace's total (what its ``max_workspace_bytes`` counts) sums the rows of every run whose
row names the workspace (``runs.workspace``, a digest of its file's path, indexed; added by
migration 15) sent since the start of its window: the window's rows by ``ix_egress_at``, or
the workspace's runs by ``ix_runs_workspace``, whichever the database finds cheaper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Engine, func, insert, select

from toolwire.core.egress import Sent
from toolwire.core.jsonenc import loads
from toolwire.core.text import storable
from toolwire.policy.trace import FailedStep, LlmStep, RunStep
from toolwire.store import schema
from toolwire.store.engine import errors

__all__ = [
    "GROUPS",
    "EgressTotal",
    "egress_rows",
    "ledger_lines",
    "refused_calls",
    "run_ledger",
    "run_spent",
    "sent_after",
    "totals",
    "workspace_spent",
]

_egress = schema.egress
_runs = schema.runs
INSERT_EGRESS = insert(_egress)
EGRESS_COLUMNS = (
    "run_id", "sequence", "at", "round", "provider", "tool", "data_class", "label", "copies",
    "new_bytes", "wire_bytes",
)  # fmt: skip
Group = Literal["provider", "tool", "data_class", "label"]
GROUPS: tuple[Group, ...] = ("provider", "tool", "data_class", "label")


@dataclass(frozen=True, slots=True, kw_only=True)
class EgressTotal:
    """Bytes of tool output sent, summed over the rows of one group (a field is None when
    the sum is not split by it)."""

    provider: str | None = None
    tool: str | None = None
    data_class: str | None = None
    label: str | None = None
    new_bytes: int = 0
    wire_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {g: getattr(self, g) for g in GROUPS if getattr(self, g) is not None}
        return out | {"new_bytes": self.new_bytes, "wire_bytes": self.wire_bytes}


def ledger_lines(sent: Sent) -> tuple[str, list[dict[str, Any]]]:
    """What one request sent, as the ledger keeps it: its provider, and per tool, data class
    and label the bytes of every copy (names made fit for a text column and cut to its size)."""
    copies = sent.copies
    return storable(sent.provider[: schema.NAME_CHARS]), [
        {"tool": storable(line.tool[: schema.NAME_CHARS]), "data_class": line.data_class,
         "label": line.label, "new_bytes": line.new_bytes * copies,
         "wire_bytes": line.wire_bytes * copies}
        for line in sent.lines
    ]  # fmt: skip


def egress_rows(run_id: str, sequence: int, step: RunStep, at: datetime) -> list[dict[str, Any]]:
    """The ledger's rows of one step (none for a step that sent no tool output)."""
    sent = step.egress if isinstance(step, (LlmStep, FailedStep)) else None
    if sent is None:
        return []
    provider, lines = ledger_lines(sent)
    about = {"run_id": run_id, "sequence": sequence, "at": at, "round": step.round,
             "provider": provider, "copies": sent.copies}  # fmt: skip
    return [about | line for line in lines]


def sent_after(engine: Engine, run_id: str, after: int) -> dict[int, dict[str, Any]]:
    """What each of ``run_id``'s steps after sequence ``after`` sent, by sequence, as the live
    stream's ``egress`` line after it (see :func:`ledger_lines`): a followed run's."""
    c = _egress.c
    query = (
        select(c.sequence, c.round, c.provider, c.copies, c.tool, c.data_class, c.label,
               c.new_bytes, c.wire_bytes)
        .where(c.run_id == run_id, c.sequence > after)
        .order_by(c.sequence, c.id)
    )  # fmt: skip
    with errors("read the egress ledger"), engine.connect() as connection:
        found = connection.execute(query).all()
    out: dict[int, dict[str, Any]] = {}
    for row in found:
        event = out.get(row.sequence)
        if event is None:
            event = out[row.sequence] = {"type": "egress", "round": row.round,
                                         "provider": row.provider, "copies": row.copies,
                                         "lines": []}  # fmt: skip
        event["lines"].append({"tool": row.tool, "data_class": row.data_class,
                               "label": row.label, "new_bytes": row.new_bytes,
                               "wire_bytes": row.wire_bytes})  # fmt: skip
    return out


def run_ledger(engine: Engine, run_id: str) -> list[EgressTotal]:
    """What ``run_id`` sent, per provider, tool, data class and label."""
    return totals(engine, run_id=run_id)


def refused_calls(engine: Engine, run_id: str) -> frozenset[str]:
    """The ids of the calls ``run_id``'s stored steps say the runtime answered itself (a
    refusal), as the privacy filter kept them (see :func:`toolwire.policy.privacy.plain_id`):
    what labels their results ``runtime`` in the ledger of a later segment."""
    steps = schema.steps
    query = select(steps.c.payload).where(
        steps.c.run_id == run_id, steps.c.kind == "tool", steps.c.is_error.is_(True)
    )
    with errors("read the run's refused calls"), engine.connect() as connection:
        payloads = connection.execute(query).scalars().all()
    found = (loads(payload) for payload in payloads)
    return frozenset(
        step["tool_call_id"] for step in found
        if step.get("tool_refused") and isinstance(step.get("tool_call_id"), str)
    )  # fmt: skip


def run_spent(engine: Engine, run_id: str) -> int:
    """The bytes of tool output ``run_id`` has sent so far, every copy counted."""
    query = select(func.coalesce(func.sum(_egress.c.wire_bytes), 0)).where(
        _egress.c.run_id == run_id
    )
    with errors("read the egress ledger"), engine.connect() as connection:
        return int(connection.execute(query).scalar() or 0)


def workspace_spent(
    engine: Engine,
    workspace: str,
    *,
    since: datetime | None = None,
    excluding: str | None = None,
) -> int:
    """The bytes of tool output the runs of ``workspace`` sent since ``since`` (every copy),
    leaving out the run ``excluding``."""
    joined = _egress.join(_runs, _runs.c.id == _egress.c.run_id)
    query = (
        select(func.coalesce(func.sum(_egress.c.wire_bytes), 0))
        .select_from(joined)
        .where(_runs.c.workspace == workspace)
    )
    if since is not None:
        query = query.where(_egress.c.at >= since)
    if excluding is not None:
        query = query.where(_egress.c.run_id != excluding)
    with errors("read the egress ledger"), engine.connect() as connection:
        return int(connection.execute(query).scalar() or 0)


def totals(
    engine: Engine,
    *,
    by: Sequence[Group] = GROUPS,
    run_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> list[EgressTotal]:
    """Bytes sent, summed per ``by`` (every group when empty: one grand total), of one run or
    of every run, between ``since`` (inclusive) and ``until`` (exclusive); most bytes first."""
    keys = [_egress.c[g] for g in GROUPS if g in by]
    sums = [func.sum(_egress.c.new_bytes), func.sum(_egress.c.wire_bytes)]
    query = select(*keys, *sums)
    if run_id is not None:
        query = query.where(_egress.c.run_id == run_id)
    if since is not None:
        query = query.where(_egress.c.at >= since)
    if until is not None:
        query = query.where(_egress.c.at < until)
    if keys:
        query = query.group_by(*keys).order_by(func.sum(_egress.c.wire_bytes).desc(), *keys)
    with errors("read the egress ledger"), engine.connect() as connection:
        found = connection.execute(query).all()
    names = [g for g in GROUPS if g in by]
    out = []
    for row in found:
        if row[len(keys)] is None:  # no rows at all: the grand total of nothing
            continue
        fields: Mapping[str, Any] = dict(zip(names, row[: len(keys)], strict=True))
        new, wire = (int(v) for v in row[len(keys) :])
        out.append(EgressTotal(**fields, new_bytes=new, wire_bytes=wire))
    return out
