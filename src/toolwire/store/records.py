"""What the store hands back: run summaries and stored runs, plain and read-only.

Times are ISO 8601 strings in UTC. ``final_answer`` is what the run's privacy level let the
store keep (None when withheld; ``final_answer_length`` still says how long it was). A stored
run's steps are the privacy-filtered payloads, each with its ``sequence`` first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from toolwire.core.jsonenc import loads
from toolwire.core.reprs import ident, size, tagged


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """One run as listed: its state, totals and (filtered) answer, without its steps."""

    id: str
    status: str
    created_at: str
    finished_at: str | None
    provider: str | None
    model: str | None
    privacy_level: str
    termination_reason: str | None
    truncated: bool
    rounds: int
    prompt_tokens: int
    completion_tokens: int
    final_answer: str | None
    error: str | None
    step_count: int
    final_answer_length: int | None = None
    cancel_requested: bool = False
    cost: float | None = None  # US dollars; None: not settled, or recorded before costs were
    cost_complete: bool | None = None  # False: a call had no price, so ``cost`` is a floor
    queued: bool = False  # executed by queue workers
    stalls: int = 0  # how often a worker executing it stopped
    options: dict[str, Any] | None = None  # limits, sampling, tools asked for (metadata)
    rerun_of: str | None = None  # the run this one was started again from
    tool_errors: int | None = None  # calls that returned an error; None until the run ends
    duration_ms: float | None = None  # from start to end; None until the run ends
    # False: some model call's provider reported no usage, so the token counts hold toolwire's
    # estimate (what budgets counted); every view then says "tokens unknown". Derived from the
    # steps' ``tokens_estimated`` (``statements.TOKENS_UNKNOWN``).
    tokens_known: bool = True
    # True: the cost was priced (in part) from those estimated counts, so it is an estimate
    # too: tokens unknown and a price counted.
    cost_estimated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(RunSummary)}

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> RunSummary:
        return cls(**_summary_values(row))

    def __repr__(self) -> str:
        return _shown(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredRun(RunSummary):
    """A run with its stored steps, in sequence order."""

    steps: list[dict[str, Any]]

    @property
    def summary(self) -> RunSummary:
        return RunSummary(**{f.name: getattr(self, f.name) for f in fields(RunSummary)})

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary.to_dict(), "steps": self.steps}

    def __repr__(self) -> str:  # its own, or the dataclass would write one with every step
        return _shown(self, steps=len(self.steps))

    @classmethod
    def from_rows(cls, row: Mapping[Any, Any], step_rows: Sequence[Mapping[Any, Any]]) -> StoredRun:
        return cls(**_summary_values(row), steps=[step_dict(s) for s in step_rows])


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """A run as a follower sees it: its summary, whether its settle is written, the steps
    stored after the ones it has seen, and what those sent of tool output, by sequence (the
    stream's ``egress`` lines, see :func:`toolwire.store.egress.sent_after`)."""

    run: RunSummary
    settled: bool
    steps: list[dict[str, Any]]
    egress: Mapping[int, dict[str, Any]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return tagged("Progress", run=self.run, settled=self.settled, steps=len(self.steps))


def _shown(run: RunSummary, **more: object) -> str:
    """A run's ids, state and counts; never its answer or its steps' payloads."""
    return tagged(
        type(run).__name__,
        id=ident(run.id),
        status=ident(run.status),
        provider=ident(run.provider),
        model=ident(run.model),
        privacy_level=ident(run.privacy_level),
        termination_reason=ident(run.termination_reason),
        rounds=run.rounds,
        step_count=run.step_count,
        final_answer_bytes=size(run.final_answer),
        error=ident(run.error),
        **more,
    )


def step_dict(row: Mapping[Any, Any]) -> dict[str, Any]:
    payload = loads(row["payload"])
    return {"sequence": row["sequence"], **(payload if isinstance(payload, dict) else {})}


def iso(moment: datetime | None) -> str | None:
    """UTC ISO 8601; SQLite hands back naive times, which the store always wrote in UTC."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


def _summary_values(row: Mapping[Any, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "status": row["status"],
        "created_at": iso(row["created_at"]) or "",
        "finished_at": iso(row["finished_at"]),
        "provider": row["provider"],
        "model": row["model"],
        "privacy_level": row["privacy_level"],
        "termination_reason": row["termination_reason"],
        "truncated": bool(row["truncated"]),
        "rounds": int(row["rounds"]),
        "prompt_tokens": int(row["prompt_tokens"]),
        "completion_tokens": int(row["completion_tokens"]),
        "final_answer": row["final_answer"],
        "error": row["error"],
        "step_count": int(row["step_count"]),
        "final_answer_length": row["final_answer_length"],
        "cancel_requested": bool(row["cancel_requested"]),
        "cost": None if row["cost"] is None else float(row["cost"]),
        "cost_complete": None if row["cost_complete"] is None else bool(row["cost_complete"]),
        "queued": bool(row.get("queued")),
        "stalls": int(row.get("stalls") or 0),
        "options": _options(row["options"]),
        "rerun_of": row["rerun_of"],
        "tool_errors": None if row["tool_errors"] is None else int(row["tool_errors"]),
        "duration_ms": None if row["duration_ms"] is None else round(float(row["duration_ms"]), 2),
        "tokens_known": not row.get("tokens_unknown"),
        "cost_estimated": bool(row.get("tokens_unknown")) and bool(row["cost"]),
    }


def _options(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
