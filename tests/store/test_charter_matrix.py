"""Every way into a run, by every way to decide on it, at every privacy level, on SQLite and
PostgreSQL: what is stored and exported after the decision is at the run's own level, never
at the level of the process that decided.

Each run is submitted by a process at level L and decided by one at another level (the CLI's
store opens at its default, ``metadata``). The canary is written only after the decision (the
run's answer, or the held call's arguments and result), so it is in the stored and exported
bytes exactly when L keeps content.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from toolwire import RunOptions, ScriptedProvider, ToolContext, User
from toolwire.core.errors import ConfigError
from toolwire.core.messages import ToolCall
from toolwire.core.sealing import KEY_VARIABLE, StateKey
from toolwire.demo import prepare_demo
from toolwire.inspector.app import create_app
from toolwire.inspector.settings import InspectorSettings
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Provider
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.store.browse import RunQuery
from toolwire.tools.defaults import default_registry
from toolwire.workspace.config import load_workspace

from ..telemetry_kit import Captured
from .conftest import Backend
from .resume_kit import SRC

KEY_HEX = "ab" * 32
KEY = StateKey.parse(KEY_HEX, "test key")
TOKEN = "m" * 32
CANARY = "after-the-decision-canary-7c2e"
LEVELS = list(PrivacyLevel)
ENTRIES = ["runtime", "inspector", "held"]
DECISIONS = ["resume", "inspector", "cli"]
ANN = User("ann", is_admin=False)


def opposite(level: PrivacyLevel) -> PrivacyLevel:
    return PrivacyLevel.METADATA if level.keeps_content else PrivacyLevel.FULL


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_demo(tmp_path_factory.mktemp("demo")).root


@pytest.fixture
def workspace(demo: Path, tmp_path: Path) -> Path:
    shutil.copytree(demo, tmp_path / "ws")
    return tmp_path / "ws" / "workspace.toml"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    turns = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "m.txt", "text": "x\n"}}]},
        {"content": CANARY},
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"name": "matrix", "turns": turns}))
    return path


def scripted(script: Path) -> Callable[[str, str | None], Provider]:
    def factory(name: str, model: str | None) -> Provider:
        if name != "scripted":
            raise ConfigError(f"no provider {name} here")
        return ScriptedProvider.from_file(script, trust_zone="local")

    return factory


def inspector(url: str, script: Path, workspace: Path, level: PrivacyLevel) -> Iterator[TestClient]:
    store = RunStore.open(url, privacy=level)
    settings = InspectorSettings(
        registry=default_registry(discover=False), provider_factory=scripted(script),
        token=TOKEN, store=store, privacy_level=level.value, state_key=KEY,
        workspace=load_workspace(workspace),
    )  # fmt: skip
    client = TestClient(create_app(settings), base_url="http://127.0.0.1")
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    try:
        yield client
    finally:
        client.close()
        store.close()


def enter(entry: str, url: str, script: Path, workspace: Path, level: PrivacyLevel) -> str:
    """A run that waits for its write's approval, submitted at ``level``; its id."""
    if entry == "inspector":
        body = {"prompt": "write", "provider": "scripted", "max_rounds": 3}
        for client in inspector(url, script, workspace, level):
            with client.stream("POST", "/api/runs", json=body) as answer:
                lines = [json.loads(line) for line in answer.iter_lines() if line]
        run_id: str = lines[0]["context"]["run_id"]
        assert lines[0]["result"]["status"] == "awaiting_approval"
        return run_id
    with RunStore.open(url, privacy=level) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        context = ToolContext(user=ANN, workspace=load_workspace(workspace))
        if entry == "held":  # as an MCP host's call: a direct call held for a person
            call = ToolCall.of("c1", "write_file", {"path": "m.txt", "text": f"{CANARY}\n"})
            offered = frozenset({"write_file"})
            held = runtime.call(call, context=context, offered=offered, hold=True, caller="mcp")
            waiting = asyncio.run(held)
        else:
            provider = ScriptedProvider.from_file(script, trust_zone="local")
            request = RunRequest.of("write", provider=provider, context=context,
                                    options=RunOptions(max_rounds=3))  # fmt: skip
            waiting = runtime.run_sync(request)
    assert waiting.status.waiting, waiting
    return waiting.run_id


def decide(
    decision: str, url: str, run_id: str, script: Path, workspace: Path, level: PrivacyLevel
) -> Captured | None:
    """Approve the run from a process at ``level`` (the CLI: its default). The resuming
    runtime's telemetry is captured (content opted in), to check its spans too."""
    if decision == "cli":
        env = {**os.environ, KEY_VARIABLE: KEY_HEX, "PYTHONPATH": SRC}
        done = subprocess.run(
            [sys.executable, "-m", "toolwire", "runs", "approve", run_id, "--db", url],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return None
    if decision == "inspector":
        for client in inspector(url, script, workspace, level):
            pending = client.get(f"/api/runs/{run_id}/pending").json()
            body = {"action": "approve", "digest": pending["digest"]}
            with client.stream("POST", f"/api/runs/{run_id}/decision", json=body) as answer:
                assert answer.status_code == 200, answer.read()
                assert json.loads(list(answer.iter_lines())[-1])["status"] == "completed"
        return None
    captured = Captured(PrivacyLevel.FULL)
    with RunStore.open(url, privacy=level) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY,
                          telemetry=captured.telemetry)  # fmt: skip
        pause = runtime.pending(run_id)
        approve = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        assert runtime.resume_sync(run_id, approve).status.value == "completed"
    return captured


def exported(url: str, run_id: str) -> str:
    with RunStore.open(url) as store:
        found = [r.to_dict() for r in store.export(RunQuery()) if r.id == run_id]
    assert len(found) == 1
    return json.dumps(found)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("entry", ENTRIES)
def test_what_follows_a_decision_is_kept_at_the_runs_own_level(
    backend: Backend,
    script: Path,
    workspace: Path,
    entry: str,
    decision: str,
    level: PrivacyLevel,
) -> None:
    run_id = enter(entry, backend.url, script, workspace, level)
    captured = decide(decision, backend.url, run_id, script, workspace, opposite(level))
    kept = level.keeps_content
    with RunStore.open(backend.url) as store:
        stored = store.get_run(run_id)
    assert stored is not None and stored.status == "completed"
    assert stored.privacy_level == level.value
    tools = [s for s in stored.steps if s["kind"] == "tool"]
    assert len(tools) == 1 and ("content_withheld" in tools[0]) is not kept
    assert (CANARY.encode() in backend.raw_bytes()) is kept
    assert (CANARY in exported(backend.url, run_id)) is kept
    if captured is not None:
        spans = repr([(s.attributes, [e.attributes for e in s.events]) for s in captured.spans])
        assert (CANARY in spans) is kept
        root = captured.named("invoke_agent")[0]
        assert dict(root.attributes or {})["toolwire.privacy_level"] == level.value
