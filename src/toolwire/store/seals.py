"""Writing a sealed value with the run's next version, and what a loader reads to check one.

A sealed value is sealed inside the transaction that stores it: :func:`write` reads the run's
``seal_version`` and last stored step, has the caller's sealer seal the value for them (see
:class:`toolwire.core.sealing.Binding`), and stores it with the version one higher in an UPDATE
guarded by the version it read, so that of two racing writes one stores and the other changes
nothing. A version is never lowered. What a loader then checks is :mod:`toolwire.core.latest`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Connection, func, select, update

from toolwire.core.binding import Binding, Sealer
from toolwire.core.jsonenc import loads
from toolwire.core.latest import StepMark
from toolwire.store import schema

_runs, _steps = schema.runs, schema.steps
VERSION = func.coalesce(_runs.c.seal_version, 0)


def last_sequence(run_id: str) -> Any:
    """The sequence of the run's last stored step (NULL without one), as a query."""
    return select(func.max(_steps.c.sequence)).where(_steps.c.run_id == run_id)


def write(
    connection: Connection,
    run_id: str,
    seal: Sealer,
    column: str,
    *where: Any,
    values: Mapping[str, Any] | None = None,
    ahead: int = 0,
) -> bool:
    """Seal a value for the run's next version and store it in ``column`` (with ``values``),
    if the run's row matches ``where``; False when it does not, or a racing write won.

    ``ahead`` counts the steps this transaction adds before it commits (a decision), so that
    the value is bound to the last of them.
    """
    version = connection.execute(select(VERSION).where(_runs.c.id == run_id, *where)).scalar()
    if version is None:
        return False
    last = int(connection.execute(last_sequence(run_id)).scalar() or 0)
    sealed = seal(Binding(version=int(version) + 1, sequence=last + ahead))
    statement = (
        update(_runs)
        .where(_runs.c.id == run_id, VERSION == version, *where)  # noqa: SIM300
        .values({column: sealed, "seal_version": int(version) + 1, **(values or {})})
    )
    return bool(connection.execute(statement).rowcount == 1)


def marks_after(connection: Connection, run_id: str, sequence: int) -> list[StepMark]:
    """The run's steps stored after ``sequence``, as :func:`toolwire.core.latest.require_progress`
    reads them (a tool step's payload only for its refusal, which is metadata)."""
    query = (
        select(_steps.c.sequence, _steps.c.kind, _steps.c.round, _steps.c.tool_name,
               _steps.c.payload)
        .where(_steps.c.run_id == run_id, _steps.c.sequence > sequence)
        .order_by(_steps.c.sequence)
    )  # fmt: skip
    return [
        StepMark(sequence=row.sequence, kind=row.kind, round=row.round, tool_name=row.tool_name,
                 refused=row.kind == "tool" and _refused(row.payload))
        for row in connection.execute(query)
    ]  # fmt: skip


def decided(connection: Connection, run_id: str) -> frozenset[str]:
    """The turn digests of the run's recorded decisions."""
    query = select(_steps.c.payload).where(_steps.c.run_id == run_id, _steps.c.kind == "decision")
    digests = (_field(payload, "turn_digest") for payload in connection.execute(query).scalars())
    return frozenset(d for d in digests if isinstance(d, str))


def _refused(payload: str) -> bool:
    return _field(payload, "tool_refused") is not None


def _field(payload: str, name: str) -> object:
    try:
        found = loads(payload)
    except ValueError:
        return None
    return found.get(name) if isinstance(found, dict) else None
