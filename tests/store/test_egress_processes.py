"""A run suspended in one process and resumed in another, both talking to one loopback model
server: the ledger the store holds afterwards is exactly the tool-result bytes the server
received over both segments (and only the resuming process sent the last request)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import toolwire
from toolwire.core.sealing import KEY_VARIABLE
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..providers.servers import FakeModel, loopback
from ..providers.test_egress_ledger import received
from .test_egress_ledger import REFUSING, by_label

SRC = str(Path(toolwire.__file__).resolve().parents[1])
TOOLS = '''
from toolwire import ToolRegistry, tool
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider


@tool(integrity="untrusted", data_class="content")
def read_note(name: str) -> str:
    """Read a note."""
    return f"{name}: ünïcode note ✓ " + "x" * 300


@tool(data_class="public", requires_approval=True, integrity="trusted")
def archive(name: str) -> str:
    """Archive a note (needs approval)."""
    return f"archived {name}"


def registry():
    return ToolRegistry([read_note, archive])


def provider(url):
    return OpenAIProvider(model="gpt-test", api_key="sk-test-proc-0000", base_url=url,
                          http=HttpSettings(max_attempts=1, timeout=10))
'''
SUSPEND = """
import json, sys
from toolwire import RunOptions
from toolwire.core.sealing import load_key
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore
import twegress

db, url, calls = sys.argv[1:4]
store = RunStore.open(db)
runtime = Runtime(twegress.registry(), recorder=store, state_key=load_key())
request = RunRequest.of("go", provider=twegress.provider(url),
                        options=RunOptions(max_calls_per_turn=int(calls)))
outcome = runtime.run_sync(request)
print(json.dumps({"run_id": outcome.run_id, "status": outcome.status.value,
                  "digest": outcome.pause.digest}), flush=True)
store.close()
"""
RESUME = """
import json, sys
from toolwire.core.sealing import load_key
from toolwire.runs.runtime import OperatorDecision, Runtime
from toolwire.store import RunStore
import twegress

db, url, run_id, digest = sys.argv[1:5]
store = RunStore.open(db)
runtime = Runtime(twegress.registry(), recorder=store, state_key=load_key(),
                  provider_factory=lambda ref: twegress.provider(url))
outcome = runtime.resume_sync(run_id, OperatorDecision(action="approve", digest=digest,
                                                       actor="operator"))
print(json.dumps({"status": outcome.status.value}), flush=True)
store.close()
"""
TURNS: list[object] = [
    [("read_note", {"name": "a"})],
    [("archive", {"name": "a"}), ("read_note", {"name": "b"})],
    "done",
]


def _programs(root: Path) -> str:
    (root / "twegress.py").write_text(TOOLS)
    (root / "suspend.py").write_text(SUSPEND)
    (root / "resume.py").write_text(RESUME)
    return str(root / "runs.db")


def _child(root: Path, program: str, *args: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, str(root)]),
           KEY_VARIABLE: "cd" * 32}  # fmt: skip
    done = subprocess.run([sys.executable, str(root / program), *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_a_run_resumed_in_another_process_counts_what_the_server_received(
    tmp_path: Path,
) -> None:
    db = _programs(tmp_path)
    model = FakeModel(turns=TURNS)  # type: ignore[arg-type]
    with loopback(model) as base:
        url = f"{base}/v1"
        paused = _child(tmp_path, "suspend.py", db, url, "32")
        assert paused["status"] == "awaiting_approval"
        before = len(model.captured)
        resumed = _child(tmp_path, "resume.py", db, url, paused["run_id"], paused["digest"])
    assert resumed["status"] == "completed" and (before, len(model.captured)) == (2, 3)
    sent: Counter[str] = Counter()
    for sizes in received(c.json() for c in model.captured):
        sent.update(sizes)
    store = RunStore.open(db, privacy=PrivacyLevel.METADATA)
    try:
        ledger = {t.tool: t.wire_bytes for t in store.egress(run_id=paused["run_id"], by=["tool"])}
        assert ledger == dict(sent) and sent["read_note"] > 0 and sent["archive"] > 0
        assert store.egress_spent(paused["run_id"]) == sum(sent.values())
    finally:
        store.close()


def test_a_refusal_made_by_the_first_process_is_the_runtime_s_in_the_second(
    tmp_path: Path,
) -> None:
    db = _programs(tmp_path)
    model = FakeModel(turns=REFUSING)  # the first turn's second call is past the cap of one
    with loopback(model) as base:
        url = f"{base}/v1"
        paused = _child(tmp_path, "suspend.py", db, url, "1")
        resumed = _child(tmp_path, "resume.py", db, url, paused["run_id"], paused["digest"])
    assert resumed["status"] == "completed" and len(model.captured) == 3
    store = RunStore.open(db, privacy=PrivacyLevel.METADATA)
    try:
        run = store.get_run(paused["run_id"])
        assert run is not None
        [refused] = [s for s in run.steps if s.get("tool_refused") == "too_many_calls"]
        lines = store.egress(run_id=paused["run_id"], by=["tool", "data_class", "label"])
    finally:
        store.close()
    got = Counter({(t.tool or "", t.data_class or "", t.label or ""): t.wire_bytes for t in lines})
    assert got == by_label(model, refused["tool_call_id"])
    assert got["read_note", "public", "runtime"] > 0
