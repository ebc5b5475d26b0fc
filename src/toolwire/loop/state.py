"""A run's state between rounds, as one frozen value, and its sealed-at-rest form.

The loop advances a :class:`RunState` round by round; when a turn needs a person, the state
carries a :class:`Pause` and the runtime seals it (see :mod:`toolwire.core.sealing`). Any process
can open it again and resume.

Invariants:
- The serialised state never holds artifacts: ``invocations`` (which do) stay in memory, so a
  resumed run's result lists the calls of its own segment only. ``tally`` stays in memory too:
  a resumed run counts its conversation once, afresh.
- ``from_json`` validates everything it reads; a state that does not fit is ``StateUnreadable``.
- A pause's ``digest`` names exactly one pending turn, with the previews an approver reads and
  what each was computed on: a decision must quote it, so a decision made on a page showing an
  older turn, or an older preview of it, is refused as stale.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolwire.core.egress import Crossed, EgressAsk, Granted
from toolwire.core.errors import StateUnreadable
from toolwire.core.jsonenc import dumps
from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ChatMessage, ProviderState, ToolCall
from toolwire.core.reprs import count, ident, size, tagged
from toolwire.loop.seam import Refused
from toolwire.loop.window import Tally
from toolwire.policy.charter import Charter, ProviderRef, legacy
from toolwire.policy.containment import NOTHING_ENTERED, Provenance
from toolwire.policy.options import RunOptions
from toolwire.policy.pricing import Cost
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.quarantine import EMPTY_VAULT, Vault
from toolwire.policy.trace import ToolInvocation
from toolwire.providers.base import Usage
from toolwire.tools.api import User

STATE_VERSION = 2  # 2: the run's charter replaced its user and workspace file
_new = tuple.__new__
_SALT_BYTES = 16  # makes a digest unguessable even when the calls' arguments are guessable
_DIGEST_CHARS = 32


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPreview:
    """What an approver reads about the call at ``index`` of the pending turn.

    ``basis`` digests what the preview was computed on (see :mod:`toolwire.loop.basis`); None: the
    tool says nothing about it, and nothing is re-checked. It stays in the sealed state and the
    turn's digest: a page or a command line shows only whether there is one (``checked``).
    """

    index: int
    tool: str
    lines: tuple[str, ...]
    failed: bool = False
    basis: str | None = None
    # Why the run's containment holds this call for a person (None: it is not held by it):
    # "planned after reading untrusted output of `fetch_logs`, round 2".
    held: str | None = None

    def to_dict(self) -> dict[str, Any]:
        shown = {"index": self.index, "tool": self.tool, "lines": list(self.lines),
                 "failed": self.failed, "checked": self.basis is not None}  # fmt: skip
        return shown | self._held()

    def to_state(self) -> dict[str, Any]:
        return {"index": self.index, "tool": self.tool, "lines": list(self.lines),
                "failed": self.failed, "basis": self.basis} | self._held()  # fmt: skip

    def _held(self) -> dict[str, Any]:
        return {} if self.held is None else {"held": self.held}

    def __repr__(self) -> str:
        return tagged("CallPreview", index=self.index, tool=ident(self.tool),
                      lines=count(self.lines), failed=self.failed,
                      basis=ident(self.basis))  # fmt: skip


class Contained(NamedTuple):
    """A call of a pending turn refused by the run's containment: what the model reads, why."""

    at: int  # the call's index in its turn
    text: str
    reason: str

    def __repr__(self) -> str:
        return tagged("Contained", at=self.at, reason=self.reason)


class Recorded(NamedTuple):
    """A call of a pending turn that already ran (before its worker stopped): its result."""

    call_id: str
    content: str
    is_error: bool

    def __repr__(self) -> str:
        return tagged("Recorded", call_id=ident(self.call_id), content_bytes=size(self.content),
                      is_error=self.is_error)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Pause:
    """Why a run waits: the whole pending turn, its previews, and what it waits for.

    A queued run whose worker stopped in the middle of an approved turn waits again on that
    turn: ``rerun`` names the writes that started and whose outcome is unknown (approving runs
    them again), ``recorded`` the calls that had finished (their results are kept, never
    run again). An approved turn whose previews no longer held when it was about to run waits
    again: ``changed`` names the calls whose inputs changed (their previews are fresh).
    """

    status: Literal[RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_INPUT]
    calls: tuple[ToolCall, ...]
    previews: tuple[CallPreview, ...]
    digest: str
    input_tool: str | None = None
    input_schema: Mapping[str, Any] | None = None
    rerun: tuple[str, ...] = ()
    recorded: tuple[Recorded, ...] = ()
    changed: tuple[str, ...] = ()
    # The telemetry span of the segment that paused (``{trace id}-{span id}``, hex), which the
    # segment carrying the run on links to; None: no telemetry watched it.
    span: str | None = None
    # Calls of the turn the run's containment refused when it was planned: they never run,
    # whatever is decided (see toolwire.policy.containment).
    refused: tuple[Contained, ...] = ()
    # Not a turn: the run waits for approval to send its next request past an egress limit
    # (see toolwire.loop.egress_pause); then ``calls`` and ``previews`` are empty.
    egress: EgressAsk | None = None

    @property
    def kind(self) -> Literal["calls", "egress"]:
        """What the run waits on: a turn of tool calls, or its egress limit."""
        return "calls" if self.egress is None else "egress"

    def to_dict(self) -> dict[str, Any]:
        """The pending turn as the inspector and the CLI show it (recorded results stay)."""
        return {
            "kind": self.kind,
            "egress": None if self.egress is None else self.egress.to_dict(),
            "status": self.status.value,
            "digest": self.digest,
            "calls": [c.to_dict() for c in self.calls],
            "previews": [p.to_dict() for p in self.previews],
            "input_tool": self.input_tool,
            "input_schema": None if self.input_schema is None else dict(self.input_schema),
            "rerun": list(self.rerun),
            "changed": list(self.changed),
            # Calls the run's containment refused: whoever decides sees they will not run.
            "refused": [{"index": r.at, "reason": r.reason} for r in self.refused],
        }

    def __repr__(self) -> str:
        return tagged(
            "Pause",
            status=self.status,
            calls=count(self.calls),
            previews=count(self.previews),
            digest=ident(self.digest),
            input_tool=ident(self.input_tool),
            rerun=count(self.rerun),
            recorded=count(self.recorded),
            changed=count(self.changed),
            refused=count(self.refused),
            egress=self.egress,
        )


class Progress(Protocol):
    """What a run has spent so far: a state, or what a provider call brought it to."""

    @property
    def rounds(self) -> int: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def cost(self) -> Cost: ...
    @property
    def tally(self) -> Tally | None: ...


class RunState(NamedTuple):
    """Everything a run needs to take its next round, in any process.

    A NamedTuple rather than a frozen dataclass: just as immutable, and the loop makes a new
    one several times per round (``_replace`` costs a fifth of ``dataclasses.replace``). Build
    it with keywords.
    """

    messages: tuple[ChatMessage, ...]
    rounds: int = 0  # provider rounds taken so far, over every segment
    usage: Usage = Usage()
    options: RunOptions = RunOptions()
    cost: Cost = Cost()
    offered: frozenset[str] = frozenset()
    invocations: tuple[ToolInvocation, ...] = ()  # this segment's calls; never serialised
    pause: Pause | None = None
    charter: Charter | None = None  # who the run acts for, and under which policy
    tally: Tally | None = None  # the conversation's size for its context window; not serialised
    dropped_turns: int = 0  # assistant turns that left the conversation to fit the window
    remote_calls: int = 0  # calls to remote tools so far, over every segment
    # What entered the model's context, labelled (see toolwire.policy.containment)
    provenance: Provenance = NOTHING_ENTERED
    # Values held for the model, never shown to it (see toolwire.policy.quarantine)
    vault: Vault = EMPTY_VAULT
    # The bytes a person approved above the run's egress limits (see toolwire.policy.egress)
    egress_granted: Granted = Granted()

    def __repr__(self) -> str:
        """Counts and where the run stands; no message, argument or result."""
        return tagged(
            "RunState",
            rounds=self.rounds,
            messages=count(self.messages),
            invocations=count(self.invocations),
            offered=count(self.offered),
            total_tokens=self.usage.total_tokens,
            pause=self.pause,
            charter=self.charter,
        )

    def after_round(
        self,
        messages: tuple[ChatMessage, ...],
        invocations: tuple[ToolInvocation, ...],
        spent: Progress,
        remote_calls: int,
        provenance: Provenance | None = None,
        *,
        vault: Vault | None = None,
    ) -> RunState:
        """This state once a round is done: its conversation, calls, remote calls,
        provenance and vault (None: as it was), and
        ``spent``'s rounds, usage, cost and tally; the rest kept. One tuple built in field
        order, a sixth of ``_replace``'s cost on every round (tests/test_state_rounds.py holds
        it to the keyword form)."""
        return _new(RunState, (messages, spent.rounds, spent.usage, self.options, spent.cost,
                               self.offered, invocations, self.pause, self.charter, spent.tally,
                               self.dropped_turns, remote_calls,
                               self.provenance if provenance is None else provenance,
                               self.vault if vault is None else vault,
                               self.egress_granted))  # fmt: skip

    @property
    def user(self) -> User | None:
        """The user the run acts for (its charter's)."""
        return None if self.charter is None else self.charter.user

    @property
    def workspace(self) -> str | None:
        """The workspace file the run's tools are given, if any (its charter's)."""
        return None if self.charter is None else self.charter.workspace_file

    def to_json(self) -> str:
        """Plain JSON of everything but ``invocations``; sealed before it is stored."""
        return dumps(
            {
                "version": STATE_VERSION,
                "messages": [m.to_dict() for m in self.messages],
                "rounds": self.rounds,
                "usage": _usage_list(self.usage),
                "cost": [str(self.cost.usd), self.cost.complete, self.cost.estimated],
                "options": self.options.to_dict(),
                "offered": sorted(self.offered),
                "pause": None if self.pause is None else _pause_dict(self.pause),
                "charter": None if self.charter is None else self.charter.to_dict(),
                "dropped_turns": self.dropped_turns,
                "remote_calls": self.remote_calls,
            }
            | self._provenance()
            | ({"vault": self.vault.to_state()} if self.vault.variables else {})
            | ({"egress_granted": list(self.egress_granted)} if any(self.egress_granted) else {})
        )

    def _provenance(self) -> dict[str, Any]:
        """The provenance's entry in the serialised state: none when nothing entered."""
        entered = self.provenance
        return {} if entered == NOTHING_ENTERED else {"provenance": entered.to_state()}

    @classmethod
    def from_json(cls, text: str, *, before: Before | None = None) -> RunState:
        """The state ``to_json`` wrote; ``StateUnreadable`` for anything else.

        A state sealed before charters existed gets one made by ``before`` (from what its
        run's row says), else a charter at ``metadata`` with no provider."""
        try:
            model = _State.model_validate_json(text)
            return model.build(before)
        except (ValidationError, ValueError, TypeError, KeyError):
            raise StateUnreadable("the suspended state does not have the expected shape") from None


def turn_digest(
    run_id: str, rounds: int, calls: Sequence[ToolCall], previews: Sequence[CallPreview] = ()
) -> str:
    """A fresh digest for a pending turn: its calls, its place in the run, the previews shown
    and what they were computed on, and a random salt."""
    salt = secrets.token_hex(_SALT_BYTES)
    shown = [p.to_state() for p in previews]
    body = dumps([salt, run_id, rounds, [c.to_dict() for c in calls], shown])
    return hashlib.sha256(body.encode()).hexdigest()[:_DIGEST_CHARS]


def _usage_list(usage: Usage) -> list[int]:
    counts = [usage.prompt_tokens, usage.completion_tokens, usage.cache_read_tokens,
              usage.cache_write_tokens, usage.reasoning_tokens]  # fmt: skip
    return counts if usage.known else [*counts, 0]  # a sixth 0: some counts are estimates


def _pause_dict(pause: Pause) -> dict[str, Any]:
    out = {**pause.to_dict(), "previews": [p.to_state() for p in pause.previews],
           "recorded": [list(r) for r in pause.recorded], "span": pause.span}  # fmt: skip
    if pause.refused:  # absent: the form sealed before containment
        out["refused"] = [list(c) for c in pause.refused]
    del out["kind"]  # what ``egress`` says
    out["egress"] = None if pause.egress is None else pause.egress.to_state()
    return out


# -- reading a state back: every field checked --------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _ProviderState(_Strict):
    provider: str
    data: Any = Field(repr=False)

    def build(self) -> ProviderState:
        return ProviderState(self.provider, self.data)


class _Message(_Strict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str = Field(repr=False)
    tool_calls: list[dict[str, str]] = Field(default=[], repr=False)
    tool_call_id: str | None = None
    is_error: bool = False
    provider_state: _ProviderState | None = None

    def build(self) -> ChatMessage:
        calls = tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in self.tool_calls)
        state = None if self.provider_state is None else self.provider_state.build()
        return ChatMessage(self.role, self.content, calls, self.tool_call_id, self.is_error, state)


class _Preview(_Strict):
    index: int
    tool: str
    lines: list[str] = Field(repr=False)
    failed: bool
    basis: str | None = None  # absent from states sealed before previews were re-checked
    held: str | None = None  # absent from states sealed before containment

    def build(self) -> CallPreview:
        return CallPreview(index=self.index, tool=self.tool, lines=tuple(self.lines),
                           failed=self.failed, basis=self.basis, held=self.held)  # fmt: skip


class _Pause(_Strict):
    status: Literal["awaiting_approval", "awaiting_input"]
    digest: str
    calls: list[dict[str, str]] = Field(repr=False)
    previews: list[_Preview]
    input_tool: str | None
    input_schema: dict[str, Any] | None
    rerun: list[str] = []  # absent from states sealed before queued runs
    recorded: list[tuple[str, str, bool]] = Field(default=[], repr=False)
    changed: list[str] = []  # absent from states sealed before previews were re-checked
    span: str | None = Field(default=None, pattern=r"^[0-9a-f]{32}-[0-9a-f]{16}$")
    refused: list[tuple[int, str, str]] = Field(default=[], repr=False)  # before containment
    # absent from states sealed before egress pauses: a pause on tool calls
    egress: tuple[str, list[tuple[str, int, int, int]]] | None = None

    def build(self) -> Pause:
        return Pause(
            status=RunStatus(self.status),  # type: ignore[arg-type]  # the Literal above
            calls=tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in self.calls),
            previews=tuple(p.build() for p in self.previews),
            digest=self.digest,
            input_tool=self.input_tool,
            input_schema=self.input_schema,
            rerun=tuple(self.rerun),
            recorded=tuple(Recorded(*r) for r in self.recorded),
            changed=tuple(self.changed),
            span=self.span,
            refused=tuple(Contained(i, text, Refused(why).value) for i, text, why in self.refused),
            egress=None if self.egress is None else _ask_of(*self.egress),
        )


def _ask_of(provider: str, crossed: list[tuple[str, int, int, int]]) -> EgressAsk:
    limits = tuple(Crossed(*c) for c in crossed)
    if not limits or any(c.scope not in ("run", "workspace") or min(c[1:]) < 0 for c in limits):
        raise ValueError("an egress pause names no limit it would pass")
    return EgressAsk(provider, limits)


class Before(NamedTuple):
    """What a run's row says of a state sealed before charters (state version 1)."""

    provider: ProviderRef
    privacy: PrivacyLevel


class _State(_Strict):
    version: Literal[1, 2]
    messages: list[_Message] = Field(repr=False)
    rounds: int
    usage: list[int] = Field(min_length=2, max_length=6)
    # the third member (estimated) is absent from states written before it existed
    cost: tuple[str, bool] | tuple[str, bool, bool] = ("0", True)
    options: dict[str, Any]
    offered: list[str]
    pause: _Pause | None
    user: tuple[str, bool] | None = None  # version 1
    workspace: str | None = None  # version 1
    charter: dict[str, Any] | None = Field(default=None, repr=False)  # version 2
    dropped_turns: int = Field(default=0, ge=0)  # absent from states sealed before it existed
    remote_calls: int = 0  # absent from states written before remote tools
    provenance: dict[str, Any] | None = None  # absent from states sealed before containment
    vault: list[list[Any]] = Field(default=[], repr=False)  # absent: nothing held
    egress_granted: tuple[int, int] = (0, 0)  # absent: nothing approved above a limit

    def build(self, before: Before | None) -> RunState:
        options = RunOptions.from_dict(self.options)
        return RunState(
            messages=tuple(m.build() for m in self.messages),
            rounds=self.rounds,
            # two counts in states written before the breakdown; a sixth 0: not all reported
            usage=_usage_of(self.usage),
            cost=Cost(Decimal(self.cost[0]), self.cost[1], len(self.cost) > 2 and self.cost[-1]),
            options=options,
            offered=frozenset(self.offered),
            pause=None if self.pause is None else self.pause.build(),
            charter=self._charter(options, before),
            dropped_turns=self.dropped_turns,
            remote_calls=self.remote_calls,
            provenance=NOTHING_ENTERED
            if self.provenance is None
            else Provenance.from_state(self.provenance),
            vault=Vault.from_state(self.vault) if self.vault else EMPTY_VAULT,
            egress_granted=Granted(*self.egress_granted),
        )

    def _charter(self, options: RunOptions, before: Before | None) -> Charter | None:
        if self.version >= 2:
            return None if self.charter is None else Charter.from_dict(self.charter)
        provider, privacy = before or (ProviderRef(name=""), PrivacyLevel.METADATA)
        user = None if self.user is None else User(*self.user)
        return legacy(user=user, workspace_file=self.workspace, options=options,
                      provider=provider, privacy=privacy)  # fmt: skip


def _usage_of(counts: list[int]) -> Usage:
    """Two counts in states written before the breakdown; a sixth 0: not all were reported."""
    kept = [*counts, 0, 0, 0][:5]
    return Usage(kept[0], kept[1], kept[2], kept[3], kept[4], known=counts[5:] != [0])
