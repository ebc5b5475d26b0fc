"""A value the run held for the model, through a store: its sealed state carries it to the
decision that resumes the run, and the database's bytes hold it only where the privacy level
keeps tool content (SQLite file and WAL; every PostgreSQL column as text)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence

import pytest

from toolwire import ChatMessage, CompletionResponse, ScriptedProvider, ToolCall, ToolRegistry, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.quarantine import HANDLE
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime

from .conftest import Backend
from .test_canaries import SECRET_TEXT, SECRETS, found_in

CANARY = f"CANARY-held-{uuid.uuid4().hex[:10]}"
VALUE = f"{CANARY} {SECRET_TEXT}"
FORWARDED: list[str] = []


@tool(data_class="content", integrity="untrusted", quarantine=True)
def inbox() -> str:
    """Read the newest mail."""
    return VALUE


@tool(data_class="content", integrity="trusted", consequential=True)
def forward(text: str) -> str:
    """Forward a text to the team."""
    FORWARDED.append(text)
    return "forwarded"


def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
    done = sum(1 for m in messages if m.role == "assistant")
    seen = [h for m in messages if m.role == "tool" for h in HANDLE.findall(m.content)]
    if done == 0:
        return CompletionResponse(tool_calls=(ToolCall.of("c0", "inbox", {}),))
    if done == 1:
        return CompletionResponse(tool_calls=(ToolCall.of("c1", "forward", {"text": seen[0]}),))
    return CompletionResponse(content="forwarded it")


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_a_held_value_crosses_a_stored_pause_and_is_stored_only_where_tool_content_is(
    backend: Backend, level: PrivacyLevel
) -> None:
    FORWARDED.clear()
    key = StateKey.generate()
    store = backend.open(level)
    try:
        runtime = Runtime(ToolRegistry([inbox, forward]), recorder=store, state_key=key)
        provider = ScriptedProvider(respond)
        waiting = runtime.run_sync(RunRequest.of("forward my mail", provider=provider))
        assert waiting.status is RunStatus.AWAITING_APPROVAL  # it receives an untrusted value
        pause = waiting.pause
        assert pause is not None and "untrusted output of `inbox`" in (pause.previews[0].held or "")
        paused_bytes = backend.raw_bytes()
        again = Runtime(ToolRegistry([inbox, forward]), recorder=store, state_key=key)
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        done = again.resume_sync(waiting.run_id, decision, provider=provider)
        assert done.status is RunStatus.COMPLETED
        assert FORWARDED == [VALUE]  # the sealed state carried the value to the resumed call
        stored = store.get_run(waiting.run_id)
    finally:
        store.close()
    assert stored is not None
    (made,) = [s for s in stored.steps if s.get("tool_variables")]
    assert HANDLE.fullmatch(made["tool_variables"][0]["handle"])  # metadata at every level
    for data in (paused_bytes, backend.raw_bytes()):
        assert waiting.run_id.encode() in data
        assert bool(found_in(data, {"canary": CANARY})) is level.keeps_content
        if level is not PrivacyLevel.FULL:
            assert found_in(data, SECRETS) == []
    shown = json.dumps(made)
    assert (VALUE in shown) is (level is PrivacyLevel.FULL)
    assert ("tool_held_values" in made) is level.keeps_content
