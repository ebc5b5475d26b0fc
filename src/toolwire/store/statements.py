"""The store's frequent statements, built once, and the row a settled run is written as.

Building a SQLAlchemy statement (and its cache key) costs more than running it on SQLite, so
the statements every run executes are module constants taking bound parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Connection,
    Float,
    bindparam,
    case,
    false,
    func,
    insert,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from toolwire.core.jsonenc import loads
from toolwire.core.lifecycle import SETTLEABLE, RunStatus
from toolwire.core.text import storable
from toolwire.loop.run import RunOutcome
from toolwire.policy.privacy import PrivacyLevel, filter_text
from toolwire.policy.trace import LlmStep
from toolwire.store import schema

_runs, _steps = schema.runs, schema.steps

STEP_COLUMNS = (
    "run_id", "sequence", "kind", "round", "duration_ms", "payload", "tool_name", "is_error",
)  # fmt: skip
INSERT_STEP = insert(_steps)
INSERT_RUN = insert(_runs)
STEP_COUNT = (
    select(func.count()).where(_steps.c.run_id == _runs.c.id).scalar_subquery().label("step_count")
)
# A run's failed calls, counted in an UPDATE of its row.
FAILED_CALLS = (
    select(func.count())
    .where(_steps.c.run_id == _runs.c.id, _steps.c.is_error == true())
    .scalar_subquery()
)
# The run's seal_version one higher (NULL counts as 0): every write of a sealed value sets it,
# and every erase raises it, so that no earlier value opens again (see toolwire.core.latest).
BUMPED_VERSION = func.coalesce(_runs.c.seal_version, 0) + 1
# What a run that stops waiting or queueing for good keeps of its sealed values: nothing.
ERASED: Mapping[str, Any] = {
    "suspended_state": None, "pending_digest": None, "queued_request": None, "checkpoint": None,
    "seal_version": BUMPED_VERSION,
}  # fmt: skip
SETTLED_COLUMNS = (
    "finished_at", "error", "final_answer_length", "termination_reason", "truncated", "rounds",
    "prompt_tokens", "completion_tokens", "final_answer", "cost", "cost_complete",
)  # fmt: skip
# The first settle wins (``settled``); a run whose cancel won stays cancelled.
SETTLE = (
    update(_runs)
    .where(_runs.c.id == bindparam("run_id"), _runs.c.settled == false())
    .where(or_(*(_runs.c.status == status.value for status in SETTLEABLE)))  # no IN: hot path
    .values(
        status=case(
            (_runs.c.status == RunStatus.CANCELLED.value, RunStatus.CANCELLED.value),
            else_=bindparam("new_status"),
        ),
        settled=True,
        **ERASED,
        **{name: bindparam(name) for name in SETTLED_COLUMNS},
    )
)
# A held queued run settles only under its claim: a worker that lost the run changes nothing.
SETTLE_HELD = SETTLE.where(_runs.c.claim == bindparam("held_claim"))
# The final answer, written once the run's status is (see ``RunStore.settle``): the one part
# of an ending that can grow a row by up to the answer's size, so the last to fail on a full disk.
SETTLE_ANSWER = (
    update(_runs)
    .where(_runs.c.id == bindparam("run_id"), _runs.c.settled == true())
    .values(final_answer=bindparam("final_answer"))
)


class top_level_true(FunctionElement[bool]):
    """Whether JSON object text (the first argument) has the key named by the second set to
    ``true`` at its top level, on either engine (a nested key of that name does not count)."""

    type = Boolean()
    inherit_cache = True
    name = "top_level_true"


@compiles(top_level_true, "sqlite")
def _top_level_true_sqlite(element: top_level_true, compiler: SQLCompiler, **kw: Any) -> str:
    text, key = (compiler.process(c, **kw) for c in element.clauses)
    return f"(json_type({text}, '$.' || {key}) = 'true')"


@compiles(top_level_true, "postgresql")
def _top_level_true_postgresql(element: top_level_true, compiler: SQLCompiler, **kw: Any) -> str:
    # PostgreSQL's JSON types refuse the escape ``\u0000`` (a NUL a model or tool wrote, kept
    # in the text at full privacy). Its four hex digits become fffd first: whether the escape
    # is real or literal text after an escaped backslash, the JSON stays valid and its keys
    # stay as they were.
    text, key = (compiler.process(c, **kw) for c in element.clauses)
    cleaned = f"REPLACE({text}, '\\u0000', '\\ufffd')"
    return f"((CAST({cleaned} AS JSONB) -> {key}) = CAST('true' AS JSONB))"


# Whether some model call of the run had no usage from its provider, so the run's token
# counts hold toolwire's estimate (the step's ``tokens_estimated``, kept at every privacy
# level): true, else NULL. Derived from the steps: no column to keep in step. The LIKE passes
# over the payload text only; the JSON check (a top-level key, not one nested in a raw body)
# runs on the few steps it lets through. A scalar subquery with LIMIT, not EXISTS: PostgreSQL
# may run an EXISTS as one hashed pass over every step of every run, where this looks up only
# the listed runs' steps by the key's index.
_ESTIMATED_TEXT = '%"tokens\\_estimated":true%'
TOKENS_UNKNOWN = (
    select(true())
    .where(
        _steps.c.run_id == _runs.c.id,
        _steps.c.kind == "llm",
        case(
            (_steps.c.payload.like(_ESTIMATED_TEXT, escape="\\"),
             top_level_true(_steps.c.payload, "tokens_estimated")),
            else_=false(),
        ),
    )
    .limit(1)
    .scalar_subquery()
    .label("tokens_unknown")
)  # fmt: skip


class elapsed_ms(FunctionElement[float]):
    """Milliseconds from the second argument (a time) to the first, on either engine."""

    type = Float()
    inherit_cache = True
    name = "elapsed_ms"


@compiles(elapsed_ms, "sqlite")
def _elapsed_sqlite(element: elapsed_ms, compiler: SQLCompiler, **kw: Any) -> str:
    end, start = (compiler.process(c, **kw) for c in element.clauses)
    return f"((julianday({end}) - julianday({start})) * 86400000.0)"


@compiles(elapsed_ms, "postgresql")
def _elapsed_postgresql(element: elapsed_ms, compiler: SQLCompiler, **kw: Any) -> str:
    end, start = (compiler.process(c, **kw) for c in element.clauses)
    return f"(EXTRACT(EPOCH FROM ({end} - {start})) * 1000)"


def _finish_totals(*where: Any) -> Any:
    """Once a run has ended: how long it took and how many of its calls failed (its steps are
    written by then: the store flushes them first)."""
    return (
        update(_runs)
        .where(*where, _runs.c.finished_at.is_not(None))
        .values(
            duration_ms=elapsed_ms(_runs.c.finished_at, _runs.c.created_at),
            tool_errors=FAILED_CALLS,
        )
    )


FINISH_TOTALS = _finish_totals(_runs.c.id == bindparam("run_id"))  # one run
FINISH_ALL_TOTALS = _finish_totals()  # every ended run (the migration's backfill)


def step_columns(kind: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tool_name`` and ``is_error`` columns of a stored step, from its filtered payload."""
    if kind != "tool":
        return {"tool_name": None, "is_error": None}
    name = payload.get("tool_name")
    return {
        "tool_name": storable(name[: schema.NAME_CHARS]) if isinstance(name, str) else None,
        "is_error": payload.get("tool_is_error") is True,
    }


def settle_values(
    outcome: RunOutcome, privacy: PrivacyLevel, *, finished_at: datetime
) -> dict[str, Any]:
    """The parameters of ``SETTLE`` for ``outcome``: totals, and the answer at ``privacy``."""
    values: dict[str, Any] = {
        "run_id": outcome.run_id,
        "new_status": outcome.status.value,
        "finished_at": finished_at,
        "error": None if outcome.error is None else storable(outcome.error),
    }
    result = outcome.result
    if result is None:  # failed or cancelled: this segment's steps (the store adds the others')
        llm = [s for s in outcome.steps if isinstance(s, LlmStep)]
        return values | {
            "termination_reason": "cancelled" if outcome.status is RunStatus.CANCELLED else None,
            "truncated": False,
            "rounds": max((s.round for s in llm), default=0),
            "prompt_tokens": sum(s.prompt_tokens or 0 for s in llm),
            "completion_tokens": sum(s.completion_tokens or 0 for s in llm),
            "final_answer": None,
            "final_answer_length": None,
            **steps_cost(llm),
        }
    return values | {
        "termination_reason": result.reason.value,
        "truncated": result.truncated,
        "rounds": result.iterations,
        "prompt_tokens": result.usage.prompt_tokens,
        "completion_tokens": result.usage.completion_tokens,
        "final_answer": _storable_or_none(filter_text(result.final_content, privacy)),
        "final_answer_length": len(result.final_content),
        "cost": float(result.cost.usd),
        "cost_complete": result.cost.complete,
    }


def steps_cost(llm: Sequence[LlmStep]) -> dict[str, Any]:
    """A run's cost from its recorded model calls: the sum of the priced ones, complete only
    when every call had a price. Cost is metadata: kept at every privacy level."""
    return {
        "cost": sum((s.cost for s in llm if s.cost is not None), 0.0),
        "cost_complete": all(s.cost is not None for s in llm),
    }


def stored_totals(llm_rows: Sequence[tuple[int, Any]]) -> dict[str, Any]:
    """A run's totals from its stored model calls, ``(round, decoded payload)`` each, as
    ``settle_values`` counts them from a failed run's steps: for a run that never settled.

    Token counts and cost are metadata, kept in the payload at every privacy level; a payload
    that lacks one counts 0 (and an unpriced call leaves the cost incomplete).
    """
    payloads = [p if isinstance(p, dict) else {} for _, p in llm_rows]
    costs = [p.get("cost") for p in payloads]
    priced = [c for c in costs if isinstance(c, int | float) and not isinstance(c, bool)]
    return {
        "rounds": max((round_ for round_, _ in llm_rows), default=0),
        "prompt_tokens": sum(_count(p.get("prompt_tokens")) for p in payloads),
        "completion_tokens": sum(_count(p.get("completion_tokens")) for p in payloads),
        "cost": float(sum(priced)) if costs else None,
        "cost_complete": len(priced) == len(costs) if costs else None,
    }


def recorded_totals(connection: Connection, run_id: str) -> dict[str, Any]:
    """The totals of a run's stored model calls, over all its segments (see ``stored_totals``)."""
    query = select(_steps.c.round, _steps.c.payload).where(
        _steps.c.run_id == run_id, _steps.c.kind == "llm"
    )
    return stored_totals([(r.round, loads(r.payload)) for r in connection.execute(query)])


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _storable_or_none(text: str | None) -> str | None:
    return None if text is None else storable(text)
