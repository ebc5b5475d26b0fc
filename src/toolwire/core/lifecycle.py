"""The run lifecycle: statuses, the transitions between them, which ones end a run, and why.

This module is the one owner of the vocabulary. The store records transitions (its guarded
UPDATEs are built from the sets below), the runtime decides them, and the NDJSON stream, the
API and the page speak the same status names: a stream's last line is ``{"type": "end",
"status": <status>}``.

    running ──> completed | dry_run | refused | failed | cancelled | interrupted
       │  ^
       v  │ (resume: an atomic claim, so two racing resumes execute a turn at most once)
    awaiting_approval | awaiting_input ──> cancelled | interrupted (a held call's caller died)

    running ──> awaiting_input ──> running  (a live question: see below)

    queued ──> running | cancelled           (queued runs only; see below)
    running ──> queued                       (its worker stopped or shut down)
    awaiting_approval | awaiting_input ──> queued   (a decision on a queued run)

A queued run (PostgreSQL, executed by workers: :mod:`toolwire.queue`) waits in ``queued`` for a
worker, and goes back there when its worker stopped (its heartbeats ceased) or shut down: the
next worker carries it on from its last checkpoint.

A run whose MCP server asks a person a question during a call (a live question, see
:mod:`toolwire.runs.questions`) is ``awaiting_input`` while the question is open, though
nothing is sealed: its process waits in the call and carries the run on itself, so it goes
back to ``running`` when the question is answered or expires, never through a resume. If
that process dies, the run is ``interrupted``, like a running run; a cancel cancels it.

Rules:
- A terminal status is final. The first settle wins; a later one changes nothing.
- A cancel wins over a settle that comes after it: a cancelled run stays cancelled.
- A cancel applies to a running run (it stops at its next step boundary) and to a waiting
  run (it never resumes); both settle ``cancelled`` and the sealed state is erased.
- Only a waiting run can be resumed, and only by the decision its pause asks for.
- A held call (see :mod:`toolwire.runs.held`) waits for its caller as much as for a person: once
  the caller's process is provably dead, nobody would get its answer, so it is ``interrupted``
  instead of being decided.
- A queued run is cancelled at once (it never starts). A run whose workers stopped
  ``max_stalls`` times fails with ``STALLED_TOO_OFTEN``; it is never left running.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"  # waiting for a worker (queued runs only)
    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_INPUT = "awaiting_input"
    COMPLETED = "completed"
    DRY_RUN = "dry_run"  # nothing was sent: the first request was assembled and recorded only
    REFUSED = "refused"  # the gate refused the one direct tool call; nothing ran
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # the process died while the run was running

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def waiting(self) -> bool:
        return self in WAITING


TERMINAL = frozenset(
    {RunStatus.COMPLETED, RunStatus.DRY_RUN, RunStatus.REFUSED, RunStatus.FAILED,
     RunStatus.CANCELLED, RunStatus.INTERRUPTED}
)  # fmt: skip
WAITING = frozenset({RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_INPUT})
# The status of a run whose process waits on a live question (its run store tells it from a
# paused turn in the same status: a live question's run has no sealed state).
ASKING = RunStatus.AWAITING_INPUT
CANCELLABLE = frozenset({RunStatus.QUEUED, RunStatus.RUNNING}) | WAITING
# What settling may move a run from: a running run, or one whose cancel already won (which
# then stays cancelled; see the store's SETTLE statement).
SETTLEABLE = frozenset({RunStatus.RUNNING, RunStatus.CANCELLED})

_RESUMED = frozenset({RunStatus.RUNNING, RunStatus.QUEUED, RunStatus.CANCELLED})
TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.QUEUED: frozenset({RunStatus.RUNNING, RunStatus.CANCELLED}),
    RunStatus.RUNNING: WAITING | TERMINAL | {RunStatus.QUEUED},
    RunStatus.AWAITING_APPROVAL: _RESUMED | {RunStatus.INTERRUPTED},
    RunStatus.AWAITING_INPUT: _RESUMED | {RunStatus.INTERRUPTED},
    **{status: frozenset() for status in TERMINAL},
}


def can_move(source: RunStatus, target: RunStatus) -> bool:
    """Whether a run may go from ``source`` to ``target``."""
    return target in TRANSITIONS[source]


def as_strings(statuses: frozenset[RunStatus]) -> list[str]:
    """The statuses as stored strings, in a stable order (for SQL ``IN`` lists)."""
    return sorted(status.value for status in statuses)


class TerminationReason(StrEnum):
    """Why a run (or a segment of it) stopped. ``truncated`` says whether the answer is whole."""

    COMPLETED = "completed"
    MAX_ITERATIONS = "max_iterations"  # the round cap; the answer was synthesised (truncated)
    MAX_TOKENS = "max_tokens"  # the output cap cut the answer (truncated)
    CONTEXT_WINDOW = "context_window"  # the provider said the conversation outgrew its window
    # Ours, before any call: even without its old exchanges the conversation cannot fit the
    # model's window (toolwire.loop.window); no answer (truncated).
    CONTEXT_FULL = "context_full"
    REFUSED = "refused"  # the model declined; ``LoopResult.refusal`` says what it said
    BLOCKED = "blocked"  # a provider's safety filter stopped the prompt or the answer
    BUDGET_EXHAUSTED = "budget_exhausted"  # max_total_tokens or max_cost was passed (truncated)
    # The next request would have taken the run's tool output on the wire past its egress
    # limit (toolwire.policy.egress); it was not sent (truncated: no answer).
    EGRESS_LIMIT = "egress_limit"
    DRY_RUN = "dry_run"
    NOT_PERMITTED = "not_permitted"  # a direct call the gate refused
    SUSPENDED = "suspended"  # waiting for a person; ``LoopResult.suspended`` holds the state
    # The run required a shape of answer (an output schema) and the model's answer, asked
    # again once, still did not match it; the answer is kept as it came (truncated: unusable).
    OUTPUT_INVALID = "output_invalid"


def settled_status(reason: TerminationReason) -> RunStatus:
    """The status a run that ended for ``reason`` settles with (a run that failed or was
    cancelled never gets this far). A run that reached one of its limits (the round cap, a
    budget, the context window) completed, truncated: the run worked as configured."""
    if reason is TerminationReason.DRY_RUN:
        return RunStatus.DRY_RUN
    if reason is TerminationReason.NOT_PERMITTED:
        return RunStatus.REFUSED
    return RunStatus.COMPLETED


# Short, safe texts for how a run ended, shared by the stream, the API and the CLI.
CANCELLED_MESSAGE = "The run was cancelled."
RUN_FAILED = "the run failed; see the server log"
# Why a queued run failed without its worker settling it.
STALLED_TOO_OFTEN = (
    "the workers executing this run stopped {count} times (killed or unresponsive); "
    "it is not retried again"
)
WRITE_NOT_REPEATED = (
    "an operator chose not to repeat a write whose outcome was unknown after its worker stopped"
)


def stalled_too_often(count: int) -> str:
    return STALLED_TOO_OFTEN.format(count=count)
