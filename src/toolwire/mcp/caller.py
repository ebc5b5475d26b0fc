"""Who is calling a remote tool: what a server's request made during the call belongs to.

A call of a remote tool goes to the process's hub (:mod:`toolwire.mcp.hub`), where the session
to its server lives; a request the server makes while the call is open (``elicitation/create``,
``sampling/createMessage``) arrives on the hub's loop. The :class:`Caller` goes with the call,
so such a request is answered for the run and the call that asked, on the run's own loop, and
never for another.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from toolwire.core.reprs import ident, tagged

if TYPE_CHECKING:
    from toolwire.loop.live import LiveTurn
    from toolwire.mcp.asks import Ask, Reply
    from toolwire.runs.questions import QuestionBoard

T = TypeVar("T")
# Who answers an elicitation when no person is asked through the inspector: a runner of the
# conformance suite, a test. None: the person, if one can be asked.
Answerer = Callable[["Ask"], Awaitable["Reply"]]


@dataclass(slots=True, kw_only=True)
class Caller:
    """One call of one remote tool: its run's turn (None: not a run's call) and the loop it
    runs on. ``budget``: the call's timeout, which a wait for a person extends."""

    server: str
    tool: str
    data_class: str  # the server's (its table's)
    turn: LiveTurn | None
    loop: asyncio.AbstractEventLoop
    answerer: Answerer | None = None
    attended: bool = False  # a person can be asked (the inspector carries the run out)
    board: QuestionBoard | None = None  # where the run's live questions wait for any process
    call_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    budget: asyncio.Timeout | None = None

    def __repr__(self) -> str:
        return tagged("Caller", server=ident(self.server), tool=ident(self.tool),
                      turn=self.turn)  # fmt: skip

    @property
    def run_id(self) -> str | None:
        return None if self.turn is None else self.turn.run_id

    def extend(self, seconds: float) -> None:
        """Give the call ``seconds`` more: a person is being asked."""
        budget = self.budget
        if budget is not None and budget.when() is not None:
            budget.reschedule(budget.when() + seconds)  # type: ignore[operator]

    async def on_run_loop(self, work: Awaitable[T]) -> T:
        """``work`` awaited on the run's own loop (its provider's session is there)."""
        if asyncio.get_running_loop() is self.loop:
            return await work
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))  # type: ignore[arg-type]


_CALLING: ContextVar[Caller | None] = ContextVar("toolwire_mcp_caller", default=None)


class InFlight:
    """The calls open on one session: whose a server's request is. The request is the call's
    whose task it arrives in, else the one open call's; with several open and no way to tell,
    it is nobody's (and refused)."""

    def __init__(self) -> None:
        self._calls: dict[str, Caller] = {}

    @contextmanager
    def calling(self, caller: Caller) -> Iterator[None]:
        token = _CALLING.set(caller)
        self._calls[caller.call_id] = caller
        try:
            yield
        finally:
            self._calls.pop(caller.call_id, None)
            _CALLING.reset(token)

    def asking(self) -> Caller | None:
        """The call a request arriving now belongs to; None when it cannot be told."""
        found = _CALLING.get()
        if found is not None:
            return found
        calls = list(self._calls.values())
        return calls[0] if len(calls) == 1 else None

    def __len__(self) -> int:
        return len(self._calls)
