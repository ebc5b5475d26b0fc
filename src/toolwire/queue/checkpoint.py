"""A queued run's progress, sealed in the store, and the loop hook that keeps it.

A checkpoint (:class:`Saved`) is one of:

- the state after a completed round: the next worker takes the next round from it;
- a decided turn: the paused state and the decision on it (queued by whoever decided); while
  the turn runs, also the writes it started and the calls it finished, with their results.

The :class:`Checkpointer` is the loop's :class:`toolwire.loop.loop.Checkpoint` in a worker:

- after each completed round it stores the new state (the round's steps are written first, so
  the next worker's steps follow them);
- it fences every write (a tool that needs approval): the write is marked started in the store
  before it runs, and its result is stored once it returns;
- a call whose result is stored is answered from it and never runs again. A write marked
  started with no result has an unknown outcome: no worker runs it again on its own (see
  :mod:`toolwire.queue.recovery`).

A store write that fails stops the run before anything more happens; one refused because the
run is no longer this worker's (cancelled, or taken by another) stops it like a cancel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolwire.core.errors import RunCancelled, StateUnreadable
from toolwire.core.jsonenc import dumps
from toolwire.core.reprs import count, ident, shape, tagged
from toolwire.core.result import ToolResult
from toolwire.core.sealing import CHECKPOINT, Binding, Sealer, StateKey
from toolwire.loop.seam import Invoked
from toolwire.loop.state import Before, Recorded, RunState
from toolwire.loop.turn import Job
from toolwire.tools.api import needs_approval
from toolwire.tools.registry import ToolRegistry

SAVED_VERSION = 1
LOST = "the run was cancelled, or another worker took it"
Action = Literal["approve", "deny", "input"]
Save = Callable[[Sealer], bool]  # stores the checkpoint it seals; False: the run is not ours


@dataclass(frozen=True, slots=True, kw_only=True)
class Saved:
    """What a worker carries a run on from: a state, and for a decided turn its decision."""

    state: RunState
    action: Action | None = None  # None: the state after a completed round
    values: Mapping[str, Any] | None = None  # a person's input, for ``input``
    started: tuple[str, ...] = ()  # writes of the decided turn marked started
    recorded: tuple[Recorded, ...] = ()  # calls of the decided turn that finished

    def __repr__(self) -> str:
        return tagged("Saved", state=self.state, action=ident(self.action),
                      values=None if self.values is None else shape(self.values),
                      started=count(self.started), recorded=count(self.recorded))  # fmt: skip

    @property
    def unknown(self) -> tuple[str, ...]:
        """Writes that started and have no result: their outcome is unknown."""
        done = {r.call_id for r in self.recorded}
        return tuple(call_id for call_id in self.started if call_id not in done)

    def to_json(self) -> str:
        return dumps(
            {
                "version": SAVED_VERSION,
                "state": self.state.to_json(),
                "action": self.action,
                "values": None if self.values is None else dict(self.values),
                "started": list(self.started),
                "recorded": [list(r) for r in self.recorded],
            }
        )

    @classmethod
    def from_json(cls, text: str, *, before: Before | None = None) -> Saved:
        """``before``: what the row says, for a state sealed before charters."""
        try:
            model = _Saved.model_validate_json(text)
        except (ValidationError, ValueError):
            raise StateUnreadable("the run's checkpoint does not have the expected shape") from None
        return cls(
            state=RunState.from_json(model.state, before=before),
            action=model.action,
            values=model.values,
            started=tuple(model.started),
            recorded=tuple(Recorded(*r) for r in model.recorded),
        )


class _Saved(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    version: Literal[1]
    state: str = Field(repr=False)
    action: Action | None
    values: dict[str, Any] | None = Field(repr=False)
    started: list[str]
    recorded: list[tuple[str, str, bool]] = Field(repr=False)


class Checkpointer:
    """Keeps one held run's progress in the store as its loop goes (see the module)."""

    def __init__(
        self,
        run_id: str,
        *,
        key: StateKey,
        save: Save,
        registry: ToolRegistry,
        saved: Saved | None = None,
    ) -> None:
        self.run_id = run_id
        self._key = key
        self._save = save
        self._registry = registry
        self._saved = saved  # the decided turn while it runs; None between rounds
        pause = None if saved is None else saved.state.pause
        earlier = () if pause is None else pause.recorded  # kept across an earlier recovery
        found = () if saved is None else saved.recorded
        self._recorded = {r.call_id: r for r in (*earlier, *found)}
        self._lock = asyncio.Lock()

    def invoke(self, job: Job, run: Callable[[], Awaitable[Invoked]]) -> Awaitable[Invoked]:
        found = self._recorded.get(job.call.id)
        if found is not None:
            return _answered(found)
        tool = self._registry.get(job.call.name)
        if tool is None or not needs_approval(tool):
            return run()
        return self._fenced(job, run)

    async def round_done(self, state: RunState) -> None:
        self._recorded.clear()
        await self._store(Saved(state=state))

    async def _fenced(self, job: Job, run: Callable[[], Awaitable[Invoked]]) -> Invoked:
        call_id = job.call.id
        await self._change(lambda s: replace(s, started=(*s.started, call_id)))
        invoked = await run()
        done = Recorded(call_id, invoked.result.content, invoked.result.is_error)
        self._recorded[call_id] = done
        await self._change(lambda s: replace(s, recorded=(*s.recorded, done)))
        return invoked

    async def _change(self, change: Callable[[Saved], Saved]) -> None:
        async with self._lock:
            if self._saved is None:  # a write outside a decided turn (writes need approval, so
                # never): marked all the same, so that a worker finding it refuses to go on
                self._saved = Saved(state=RunState(messages=()))
            self._saved = change(self._saved)
            await self._write(self._saved)

    async def _store(self, saved: Saved) -> None:
        async with self._lock:
            self._saved = None
            await self._write(saved)

    async def _write(self, saved: Saved) -> None:
        if not await asyncio.to_thread(self._seal_and_save, saved):
            raise RunCancelled(LOST)

    def _seal_and_save(self, saved: Saved) -> bool:
        text = saved.to_json()

        def seal(binding: Binding) -> str:  # the run's next version, given by the store
            return self._key.seal(self.run_id, text, CHECKPOINT, binding=binding)

        return self._save(seal)


async def _answered(found: Recorded) -> Invoked:
    """A call already recorded: its result again, without running it."""
    result = ToolResult.error(found.content) if found.is_error else ToolResult.text(found.content)
    return Invoked(result)


def open_saved(
    key: StateKey,
    run_id: str,
    sealed: str,
    *,
    binding: Binding | None,
    before: Before | None = None,
) -> Saved:
    """The checkpoint sealed for ``run_id`` with ``binding``; ``StateError`` when it cannot be
    opened. (Which checkpoint is the run's latest is the executor's check, see
    :mod:`toolwire.core.latest`.) ``before``: what the row says, for a state sealed before
    charters."""
    return Saved.from_json(key.open(run_id, sealed, CHECKPOINT, binding=binding), before=before)


def carries_on_in(saved: Saved) -> int:
    """The round a worker carrying ``saved`` on records its steps in: a decided turn's own
    round, else the next one."""
    return saved.state.rounds if saved.action is not None else saved.state.rounds + 1


def started_tools(saved: Saved) -> list[str]:
    """The tools of the writes ``saved`` marks started, one name per write."""
    pause = saved.state.pause
    names = {} if pause is None else {call.id: call.name for call in pause.calls}
    return [names.get(call_id, "") for call_id in saved.started]
