"""A run that waits for a person before its next request passes an egress limit.

When a limit that asks first (see :mod:`toolwire.policy.egress`) would be passed by the next
provider request, nothing of that request has gone out: the run pauses ``awaiting_approval``
on its state as it stood before the request, and the pause names no calls but the request
(:class:`~toolwire.core.egress.EgressAsk`: the provider, the bytes counted so far, the bytes
this request would send, and each limit, counts only). It is sealed, decided and carried on
like every pause, in any process, under the run's charter.

- Approved: the allowance of each limit it would pass grows (``Granted.raised``), kept in the
  run's state, and the run takes that round again: the request is built and sent afresh.
- Denied: the run ends ``egress_limit``; nothing was sent.
- A limit that does not ask, or a run nobody can be asked in, stops the run as before.
"""

from __future__ import annotations

import hashlib
import secrets

from toolwire.core.egress import EgressAsk, EgressLimit
from toolwire.core.jsonenc import dumps
from toolwire.core.lifecycle import RunStatus, TerminationReason
from toolwire.loop.endings import LoopResult, result_of
from toolwire.loop.state import Pause, RunState

__all__ = ["decided", "stopped_or_waiting"]

_SALT_BYTES = 16  # as a turn's digest: a decision must quote this very pause
_DIGEST_CHARS = 32


def stopped_or_waiting(over: EgressLimit, run_id: str) -> LoopResult:
    """How a run ends its segment when its next request would pass a limit: waiting for
    approval when every limit it would pass asks first, else stopped ``egress_limit``."""
    state: RunState = over.state
    if not over.asks:
        return result_of(state, "", True, TerminationReason.EGRESS_LIMIT)
    ask = EgressAsk.of(over)
    pause = Pause(status=RunStatus.AWAITING_APPROVAL, calls=(), previews=(),
                  digest=_digest(run_id, state.rounds, ask), egress=ask)  # fmt: skip
    paused = state._replace(pause=pause)
    return result_of(paused, "", False, TerminationReason.SUSPENDED, paused)


def decided(state: RunState, *, approved: bool) -> RunState | LoopResult:
    """The run once its egress pause is decided: its state with the allowance raised, to take
    the held round again; or, denied, its end (nothing was sent)."""
    pause = state.pause
    assert pause is not None and pause.egress is not None
    state = state._replace(pause=None, invocations=())
    if not approved:
        return result_of(state, "", True, TerminationReason.EGRESS_LIMIT)
    return state._replace(egress_granted=state.egress_granted.raised(pause.egress.crossed))


def _digest(run_id: str, rounds: int, ask: EgressAsk) -> str:
    body = dumps([secrets.token_hex(_SALT_BYTES), run_id, rounds, "egress", ask.to_state()])
    return hashlib.sha256(body.encode()).hexdigest()[:_DIGEST_CHARS]
