"""Per-run settings, and the round limits they are checked against."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolwire.core.egress import on_limit
from toolwire.core.output import OutputSchema
from toolwire.core.text import check_name
from toolwire.core.trust import TrustZone, UntrustedActions
from toolwire.providers.base import (
    Provider,
    Reasoning,
    ToolChoice,
    checked_provider,
    parse_tool_choice,
)
from toolwire.tools.policy import Grant

# Enough for look-up, refine, answer. Each round is a paid provider call carrying the whole
# conversation so far, so a one-shot run that forgets to set a cap must not run up a long bill.
DEFAULT_MAX_ROUNDS = 5
# The highest cap a run may ask for: long agent runs take hundreds of rounds; past this a
# budget (max_total_tokens, max_cost) is the better guard.
MAX_ROUNDS = 1000
# Calls one assistant turn may make: a model asking for more is confused or attacking; the
# excess is refused with an error turn it can read, and none of it runs.
DEFAULT_MAX_CALLS_PER_TURN = 32
# Calls of one turn in flight at once; 1 runs them one after another. More than a turn's
# default call limit would be idle.
DEFAULT_MAX_CONCURRENCY = 8
MAX_CONCURRENCY = 32
# Calls to remote (MCP) tools over a whole run: each is another process's work and may reach
# further than the machine; a model looping on one must not call it without end.
DEFAULT_MAX_REMOTE_CALLS = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """Per-run settings. ``allowed_tools`` is a request (None: every enabled tool; []: none)."""

    max_rounds: int = DEFAULT_MAX_ROUNDS
    allowed_tools: Sequence[str] | None = None
    grant: Grant = field(default_factory=Grant)
    trust_zone: TrustZone | str | None = None  # None: the provider's own; a misspelling fails
    temperature: float | None = None
    max_tokens: int | None = None
    reasoning: Reasoning | None = None  # None: the model's default
    stream: bool = True  # server-sent events where the adapter can; same result either way
    max_calls_per_turn: int = DEFAULT_MAX_CALLS_PER_TURN
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    max_remote_calls: int = DEFAULT_MAX_REMOTE_CALLS  # over the run; 0: none at all
    max_total_tokens: int | None = None  # budget: the run ends once its tokens pass this
    max_cost: float | None = None  # budget in US dollars, where the price is known
    capture_raw: bool = False
    dry_run: bool = False  # record what would be sent, call no provider and no tool
    # What the model may do with the offered tools: auto (it decides), none (it may call
    # none), required (it must call one), or a tool's name (it must call that one). A forced
    # choice holds for the run's first round only: forcing every round, the model could never
    # answer, and each run would end at the round cap.
    tool_choice: ToolChoice = "auto"
    # The model's context window in tokens; None: the provider's own, or the price table's
    # (see toolwire.loop.window). Old exchanges are dropped to keep each request within it.
    context_window: int | None = None
    # The JSON Schema the final answer must match (a dict, a pydantic model class or an
    # OutputSchema): asked of the API natively, checked, asked again once when it does not
    # match; see toolwire.core.output.
    output: OutputSchema | Mapping[str, Any] | type[Any] | None = None
    # What the run is called (the agent's name in its telemetry); None: its workspace's
    # name, when the workspace has one.
    name: str | None = None
    # Providers to ask, in order, when the run's own fails in a way worth another try (see
    # toolwire.providers.fallback). The run's provider becomes a chain of them all when it is
    # submitted, and the chain is what its charter names: kept there, not in these options.
    fallback: Sequence[Provider] = field(default=(), compare=False, repr=False)
    # A consequential call planned on untrusted context waits for approval or is refused
    # (see toolwire.policy.containment); None: the workspace's policy, and refuse when no
    # person can decide. A run may be stricter than its workspace, never looser.
    untrusted_actions: UntrustedActions | str | None = None
    # The bytes of tool output the run may send its providers, over every request and copy
    # (see toolwire.policy.egress); the request that would pass it is not sent and the run
    # ends ``egress_limit``. None: no limit but its workspace's.
    max_egress_bytes: int | None = None
    # What passing an egress limit does: "stop" (the run ends ``egress_limit``) or "approve"
    # (the run waits for a person before the request goes: see toolwire.policy.egress);
    # None: its workspace's, else stop. A workspace that says stop is never asked around.
    on_egress_limit: str | None = None

    def __post_init__(self) -> None:
        if self.name is not None:
            check_name(self.name, "a run's name")
        if not 1 <= self.max_rounds <= MAX_ROUNDS:
            raise ValueError(f"max_rounds must be between 1 and {MAX_ROUNDS}")
        if self.max_calls_per_turn < 1:
            raise ValueError("max_calls_per_turn must be at least 1")
        if not 1 <= self.max_concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"max_concurrency must be between 1 and {MAX_CONCURRENCY}")
        if self.max_remote_calls < 0:
            raise ValueError("max_remote_calls must be 0 or more")
        if self.trust_zone is not None:
            object.__setattr__(self, "trust_zone", TrustZone.parse(self.trust_zone))
        if self.max_total_tokens is not None and self.max_total_tokens < 1:
            raise ValueError("max_total_tokens must be at least 1")
        if self.max_cost is not None and not self.max_cost > 0:
            raise ValueError("max_cost must be a positive number of dollars")
        self._check_egress()
        if self.context_window is not None and self.context_window < 1:
            raise ValueError("context_window must be at least 1 token")
        object.__setattr__(self, "tool_choice", parse_tool_choice(self.tool_choice))
        if self.output is not None:
            object.__setattr__(self, "output", OutputSchema.of(self.output))
        object.__setattr__(self, "fallback", tuple(checked_provider(p) for p in self.fallback))
        if self.untrusted_actions is not None:
            parsed = UntrustedActions.parse(self.untrusted_actions)
            object.__setattr__(self, "untrusted_actions", parsed)

    def _check_egress(self) -> None:
        if self.max_egress_bytes is not None and (
            type(self.max_egress_bytes) is not int or self.max_egress_bytes < 0
        ):
            raise ValueError("max_egress_bytes must be a whole number of bytes, 0 or more")
        if self.on_egress_limit is not None:
            on_limit(self.on_egress_limit, "on_egress_limit")

    @property
    def untrusted_policy(self) -> UntrustedActions | None:
        """``untrusted_actions`` as parsed (None: not asked for)."""
        value = self.untrusted_actions
        return value if isinstance(value, UntrustedActions) else None

    @property
    def output_schema(self) -> OutputSchema | None:
        """``output`` as the schema it was made into (None: any answer)."""
        output = self.output
        return output if isinstance(output, OutputSchema) else None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for a suspended run's state."""
        grant = self.grant
        out: dict[str, Any] = {
            "max_rounds": self.max_rounds,
            "allowed_tools": None if self.allowed_tools is None else list(self.allowed_tools),
            "grant_tools": None if grant.tools is None else sorted(grant.tools),
            "grant_groups": None if grant.groups is None else sorted(grant.groups),
            "trust_zone": self.trust_zone,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "capture_raw": self.capture_raw,
            "reasoning": None
            if self.reasoning is None
            else [self.reasoning.effort, self.reasoning.budget_tokens],
            "stream": self.stream,
            "max_calls_per_turn": self.max_calls_per_turn,
            "max_concurrency": self.max_concurrency,
            "max_remote_calls": self.max_remote_calls,
            "max_total_tokens": self.max_total_tokens,
            "max_cost": self.max_cost,
            "context_window": self.context_window,
            "tool_choice": self.tool_choice,
            "output": None if self.output_schema is None else self.output_schema.to_dict(),
            "name": self.name,
        }
        if self.untrusted_policy is not None:  # absent: the form written before it existed
            out["untrusted_actions"] = self.untrusted_policy.value
        if self.max_egress_bytes is not None:  # absent likewise
            out["max_egress_bytes"] = self.max_egress_bytes
        if self.on_egress_limit is not None:  # absent likewise
            out["on_egress_limit"] = self.on_egress_limit
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunOptions:
        return cls(
            max_rounds=data["max_rounds"],
            allowed_tools=data["allowed_tools"],
            grant=Grant.of(data["grant_tools"], data["grant_groups"]),
            trust_zone=data["trust_zone"],
            temperature=data["temperature"],
            max_tokens=data["max_tokens"],
            capture_raw=data["capture_raw"],
            reasoning=None if data.get("reasoning") is None else Reasoning(*data["reasoning"]),
            stream=data.get("stream", True),
            max_calls_per_turn=data.get("max_calls_per_turn", DEFAULT_MAX_CALLS_PER_TURN),
            max_concurrency=data.get("max_concurrency", DEFAULT_MAX_CONCURRENCY),
            max_remote_calls=data.get("max_remote_calls", DEFAULT_MAX_REMOTE_CALLS),
            max_total_tokens=data.get("max_total_tokens"),
            max_cost=data.get("max_cost"),
            context_window=data.get("context_window"),
            tool_choice=data.get("tool_choice", "auto"),
            output=None if data.get("output") is None else OutputSchema.from_dict(data["output"]),
            name=data.get("name"),
            untrusted_actions=data.get("untrusted_actions"),
            max_egress_bytes=data.get("max_egress_bytes"),
            on_egress_limit=data.get("on_egress_limit"),
        )
