"""What a server's question and sample leave in the store: the question's message and the
answer's values never (its outcome step holds counts and toolwire's own reasons only, and
those only at the levels that keep a decision's reason); the sample's text only at the
levels that keep content."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

import pytest

from toolwire import ChatMessage, RunOptions, ScriptedProvider
from toolwire.core.lifecycle import RunStatus
from toolwire.mcp.hub import HUB
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.scripted import Turn
from toolwire.runs.runtime import RunRequest, Runtime

from ..mcp.kit import PYTHON, remote_registry, script, workspace
from .conftest import Backend

TAG = uuid.uuid4().hex[:10]
MESSAGE, TEXT, SUMMARY = (f"CANARY-{w}-{TAG}" for w in ("message", "text", "summary"))


def respond(messages: Sequence[ChatMessage]) -> Turn:
    if messages[0].role == "system" and messages[0].content == "Summarise.":
        return Turn(content=SUMMARY, prompt_tokens=9, completion_tokens=3)
    done = sum(m.role == "tool" for m in messages)
    calls = [("asking__summarise", {"text": TEXT}), ("asking__sign_up", {})]
    if done < len(calls):
        name, arguments = calls[done]
        return Turn.model_validate({"tool_calls": [{"id": f"c{done}", "name": name,
                                                    "arguments": arguments}]})  # fmt: skip
    return Turn(content="done")


def asked_run(backend: Backend, level: PrivacyLevel, folder: Path) -> str:
    ws = workspace(folder, f"""
[mcp_servers.asking]
command = "{PYTHON}"
args = [{script("asking.py")}]
pass_env = ["MESSAGE"]
enabled = true
admin_only = false
data_class = "public"
sampling = true
""", environ={"MESSAGE": MESSAGE})  # fmt: skip
    tools, problems = remote_registry(ws)
    assert problems == []
    store = backend.open(level)
    request = RunRequest.of("go", provider=ScriptedProvider(respond),
                            options=RunOptions(trust_zone="local"))  # fmt: skip
    try:
        outcome = Runtime(tools, recorder=store).run_sync(request)
    finally:
        HUB.close()
    assert outcome.status is RunStatus.COMPLETED, outcome
    stored = store.get_run(outcome.run_id)
    assert stored is not None
    decided = [s for s in stored.steps if s["kind"] == "decision"]
    assert [s["decision"] for s in decided] == ["elicit:decline"]
    store.close()
    return outcome.run_id


@pytest.mark.parametrize("level", [PrivacyLevel.NONE, PrivacyLevel.METADATA])
def test_the_levels_that_withhold_content_keep_no_text_of_a_question_or_a_sample(
    backend: Backend, level: PrivacyLevel, tmp_path: Path
) -> None:
    asked_run(backend, level, tmp_path)
    data = backend.raw_bytes()
    assert [c for c in (MESSAGE, TEXT, SUMMARY) if c.encode() in data] == []
    assert b"field(s) answered" not in data  # the reason is a decision's content


def test_full_keeps_the_sample_but_never_the_questions_message(
    backend: Backend, tmp_path: Path
) -> None:
    asked_run(backend, PrivacyLevel.FULL, tmp_path)
    data = backend.raw_bytes()
    assert TEXT.encode() in data and SUMMARY.encode() in data
    assert MESSAGE.encode() not in data
    assert b"asking__sign_up: 0 of 3 field(s) answered; no person can answer" in data
