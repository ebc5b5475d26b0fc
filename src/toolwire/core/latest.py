"""Only a run's latest sealed value opens: the rule every loader applies before using one.

Someone who can write a run's row but has no key cannot forge a sealed value, but could put an
earlier one back (a checkpoint from before an approved write ran, with the status and flags
that make a worker take it). Two facts tell an earlier value from the latest, both bound into
its associated data (see :class:`toolwire.core.sealing.Binding`):

- its version: every store write of a sealed value sets ``runs.seal_version`` one higher in the
  same guarded UPDATE, and settling, cancelling, claiming and erasing a run raise it too. A
  value opens only with the version its row holds (:func:`open_latest`).
- its step: the sequence of the run's last stored step when it was sealed. Steps are
  append-only, so rolling the version back as well does not help: what the run recorded after
  the value shows whether a later value must exist.

  - A waiting run records nothing while it waits (its decision is recorded only once its state
    was taken, or together with the checkpoint that replaces it): its state opens only while
    its step is the run's last (:func:`require_last`).
  - A queued run's request or checkpoint may be followed by steps its worker recorded before
    it stopped (a worker killed mid-round). Those all belong to the round the value carries on
    with; a decision, a step of a later round, or a write the value did not mark started, each
    comes only after a later value was sealed (a decided turn, a completed round, a write's
    fence), so any of them refuses it (:func:`require_progress`).

A held call's answer (see :mod:`toolwire.runs.held`) is not versioned: it is handed over just
before its run settles and must outlive that settle, it is taken once by the only caller and
erased as it is taken, and its purpose already keeps it from opening as any other value.

A value refused here raises :class:`~toolwire.core.errors.StateNotLatest`, whose message says so;
nothing of it is used. A value sealed before versions opens only while the run's version is
NULL, as version 0 (see :mod:`toolwire.core.sealing`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolwire.core.binding import Binding, bound
from toolwire.core.errors import StateNotLatest

if TYPE_CHECKING:
    from toolwire.core.sealing import StateKey

NOT_LATEST = "the sealed state is not the run's latest"
EARLIER_RELEASE = f"{NOT_LATEST}: it was sealed before versions, and the run changed since"
OLDER_VERSION = f"{NOT_LATEST}: a later one was stored after it"
STEPS_AFTER = f"{NOT_LATEST}: the run recorded steps after it was sealed"
DECIDED_AFTER = f"{NOT_LATEST}: a decision was recorded after it was sealed"
LATER_ROUND = f"{NOT_LATEST}: the run went on to another round after it was sealed"
WRITE_AFTER = f"{NOT_LATEST}: a write ran after it was sealed"
ALREADY_DECIDED = f"{NOT_LATEST}: the turn it waits on was already decided"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepMark:
    """A stored step as the rule reads it: where it stands and what it was, no content."""

    sequence: int
    kind: str
    round: int
    tool_name: str | None = None
    refused: bool = False  # a tool step answered with a refusal: the tool never ran


def open_latest(
    key: StateKey, run_id: str, sealed: str, purpose: str, *, version: int | None
) -> tuple[str, Binding | None]:
    """The plaintext of ``sealed`` and its binding (None: sealed before versions), if it is
    authentic and bound to ``version``, the run's ``seal_version`` (None: NULL, never set)."""
    binding = bound(sealed)
    if binding is None:
        if version is not None:
            key.open(run_id, sealed, purpose)  # a forgery is unreadable, not merely old
            raise StateNotLatest(EARLIER_RELEASE)
        return key.open(run_id, sealed, purpose), None
    text = key.open(run_id, sealed, purpose, binding=binding)
    if binding.version != version:
        raise StateNotLatest(OLDER_VERSION)
    return text, binding


def require_last(binding: Binding, last_sequence: int) -> None:
    """A waiting run's state: nothing may have been recorded after it."""
    if binding.sequence != last_sequence:
        raise StateNotLatest(STEPS_AFTER)


def require_undecided(digest: str, decided: Collection[str]) -> None:
    """A waiting run's state sealed before versions (no step bound): its turn is undecided."""
    if digest in decided:
        raise StateNotLatest(ALREADY_DECIDED)


def require_progress(
    after: Iterable[StepMark],
    *,
    round_: int,
    started: Iterable[str] = (),
    is_write: Callable[[str], bool],
) -> None:
    """A queued run's request or checkpoint: ``after`` (the steps stored after its bound one)
    are what its own worker could record before sealing again. ``round_`` is the round it
    carries on with; ``started`` names the tools of the writes it marks started (one each)."""
    fenced = Counter(started)
    for mark in after:
        if mark.kind == "decision":
            raise StateNotLatest(DECIDED_AFTER)
        if mark.round != round_:
            raise StateNotLatest(LATER_ROUND)
        name = mark.tool_name
        if mark.kind == "tool" and not mark.refused and name is not None and is_write(name):
            if fenced[name] <= 0:
                raise StateNotLatest(WRITE_AFTER)
            fenced[name] -= 1
