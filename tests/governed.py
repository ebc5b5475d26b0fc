"""A scripted run that meets every gate: tools not offered, calls refused at the seam, a turn
denied by a person, and a budget that ends it. Shared by the governance log's tests (store, CLI,
API, page) and the telemetry's.

The run, round by round (max 3 calls a turn, a token budget of 100):
1. ``lookup`` (runs), ``nope`` (unknown), ``admin_tool`` (not offered: not permitted),
   ``lookup`` (past the per-turn limit);
2. ``lookup`` with arguments that are not an object;
3. ``delete_row`` (needs approval): the run waits; ``ann`` denies it;
4. ``lookup`` again, but that turn spends the budget: the run ends ``budget_exhausted``.
Offered from ``ALLOWED``: only ``lookup`` and ``delete_row``; ``ghost`` is not registered,
``admin_tool`` needs an admin, ``off_tool`` is disabled, ``vault`` is above the zone's ceiling.
"""

from __future__ import annotations

from typing import Any

from toolwire import RunOptions, ScriptedProvider, ToolRegistry, tool
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import tool_name
from toolwire.runs.runtime import OperatorDecision, RunOutcome, RunRecorder, RunRequest, Runtime

from .fakes import call

ALLOWED = ["lookup", "vault", "admin_tool", "off_tool", "ghost", "delete_row"]
DECIDER = "ann"


@tool(data_class="public")
def lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@tool(data_class="secret_adjacent")
def vault() -> str:
    return "secret"


@tool(data_class="public", requires_admin=True)
def admin_tool() -> str:
    return "admin"


@tool(data_class="public", enabled_by_default=False)
def off_tool() -> str:
    return "off"


@tool(data_class="public", requires_approval=True)
def delete_row(n: int) -> str:
    return f"deleted {n}"


def registry() -> ToolRegistry:
    return ToolRegistry([lookup, vault, admin_tool, off_tool, delete_row])


TURNS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            call("lookup", {"query": "a"}),
            call("nope"),
            call("admin_tool"),
            call("lookup", {"query": "b"}),
        ],
        "prompt_tokens": 10,
        "completion_tokens": 5,
    },
    {"tool_calls": [call("lookup", "[1]")], "prompt_tokens": 10, "completion_tokens": 5},
    {"tool_calls": [call("delete_row", {"n": 1})], "prompt_tokens": 10, "completion_tokens": 5},
    {"tool_calls": [call("lookup", {"query": "c"})], "prompt_tokens": 60, "completion_tokens": 5},
    {"content": "never reached"},
]

# A name the model made up is kept (at the default level, metadata) as "unknown:" and a digest.
NOPE = tool_name("nope", frozenset())
# (gate, reason, actor, tool) of each row the run leaves in the governance log, in order.
EXPECTED = [
    ("offer", "trust_zone", "policy", "vault"),
    ("offer", "requires_admin", "policy", "admin_tool"),
    ("offer", "disabled", "policy", "off_tool"),
    ("offer", "not_registered", "policy", "ghost"),
    ("call", "unknown_tool", "runtime", NOPE),
    ("call", "not_permitted", "policy", "admin_tool"),
    ("call", "too_many_calls", "runtime", "lookup"),
    ("call", "not_an_object", "runtime", "lookup"),
    ("approval", "denied", DECIDER, None),
    ("call", "denied", DECIDER, "delete_row"),
    ("budget", "budget_exhausted", "runtime", None),
]
# The same rows at ``redacted`` and ``full``, which keep the content: every name as it was.
EXPECTED_VERBATIM = [(g, r, a, "nope" if t == NOPE else t) for g, r, a, t in EXPECTED]


def options() -> RunOptions:
    return RunOptions(
        allowed_tools=ALLOWED,
        trust_zone="external_global",
        max_calls_per_turn=3,
        max_total_tokens=100,
        max_rounds=10,
    )


def governed_run(
    recorder: RunRecorder | None = None, *, prompt: str = "go", runtime: Runtime | None = None
) -> tuple[RunOutcome, RunOutcome]:
    """Run the script to its pause, deny it as ``ann``, run it to its end: both segments."""
    runtime = runtime or Runtime(registry(), recorder=recorder, state_key=StateKey.generate())
    provider = ScriptedProvider.from_turns(TURNS)
    request = RunRequest.of(prompt, provider=provider, model="m-1", options=options())
    waiting = runtime.run_sync(request)
    assert waiting.status == "awaiting_approval", waiting
    pause = waiting.pause
    assert pause is not None
    decision = OperatorDecision(action="deny", digest=pause.digest, actor=DECIDER)
    ended = runtime.resume_sync(waiting.run_id, decision, provider=provider)
    assert ended.result is not None and ended.result.reason == "budget_exhausted", ended
    return waiting, ended
