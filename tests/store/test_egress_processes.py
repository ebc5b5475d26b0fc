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

db, url = sys.argv[1:3]
store = RunStore.open(db)
runtime = Runtime(twegress.registry(), recorder=store, state_key=load_key())
request = RunRequest.of("go", provider=twegress.provider(url), options=RunOptions())
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
    (tmp_path / "twegress.py").write_text(TOOLS)
    (tmp_path / "suspend.py").write_text(SUSPEND)
    (tmp_path / "resume.py").write_text(RESUME)
    db = str(tmp_path / "runs.db")
    model = FakeModel(turns=TURNS)  # type: ignore[arg-type]
    with loopback(model) as base:
        url = f"{base}/v1"
        paused = _child(tmp_path, "suspend.py", db, url)
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
