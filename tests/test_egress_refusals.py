"""A refusal in the ledger stays the runtime's across segments: a segment carried on in the
same process (an egress pause approved) keeps the calls its trace's ledger refused; one
resumed in another process reads them from the store (tests/store/test_egress_ledger.py)."""

from __future__ import annotations

import asyncio
from typing import Any

from toolwire import RunOptions, ScriptedProvider, ToolLoop, ToolRegistry, tool
from toolwire.core.lifecycle import TerminationReason
from toolwire.core.messages import ChatMessage
from toolwire.loop.state import RunState
from toolwire.policy.trace import LlmStep, RunTrace

NOTE = "a note of thirty bytes, exactly"


@tool(data_class="content", integrity="untrusted")
def read(name: str) -> str:
    """Read a note."""
    return NOTE


def test_a_refusal_before_an_egress_pause_is_still_the_runtime_s_after_it() -> None:
    turns: list[dict[str, Any]] = [{"tool_calls": [{"name": "read", "arguments": {"name": "a"}},
                             {"name": "read", "arguments": {"name": "b"}}]},  # b: past the cap
             {"content": "done"}]  # fmt: skip
    loop = ToolLoop(ScriptedProvider.from_turns(turns), ToolRegistry([read]))
    options = RunOptions(max_calls_per_turn=1, max_egress_bytes=1, on_egress_limit="approve")
    trace = RunTrace()
    paused = asyncio.run(loop.run([ChatMessage.user("read")], options=options, trace=trace))
    assert paused.reason is TerminationReason.SUSPENDED and paused.suspended is not None
    state = RunState.from_json(paused.suspended.to_json())
    done = asyncio.run(loop.resume(state, approved=True, trace=trace))
    assert done.reason is TerminationReason.COMPLETED
    [answered] = [s for s in trace.of_kind(LlmStep) if s.egress is not None]
    assert answered.egress is not None
    labels = {line.tool + "/" + line.label: line.wire_bytes for line in answered.egress.lines}
    assert set(labels) == {"read/untrusted", "read/runtime"}
    assert labels["read/untrusted"] == len(NOTE) and labels["read/runtime"] > 0
