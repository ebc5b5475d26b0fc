"""Real processes that suspend and resume runs: a tool module, a model script, two programs.

Every call a tool makes appends one line (``<tool> <n> <pid>``) to the marker file named by
``$TW_MARKER``, so a test counts executions exactly, across processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, select

import toolwire
from toolwire.core.sealing import KEY_VARIABLE
from toolwire.store import schema
from toolwire.store.engine import resolve_url

SRC = str(Path(toolwire.__file__).resolve().parents[1])
WAIT_SECONDS = 60

TOOLS = '''
import os
from toolwire import ToolRegistry, tool


def _mark(line: str) -> None:
    with open(os.environ["TW_MARKER"], "a") as handle:
        handle.write(f"{line} {os.getpid()}\\n")


@tool(data_class="public", requires_approval=True)
def mark(n: int, text: str = "") -> str:
    """Write a mark (needs approval)."""
    _mark(f"mark {n}")
    return f"marked {n}"


@tool(data_class="public")
def note(n: int) -> str:
    """Note a number."""
    _mark(f"note {n}")
    return f"noted {n}"


def registry() -> ToolRegistry:
    return ToolRegistry([mark, note])
'''

SUSPEND = """
import json, sys, time
from toolwire import RunOptions, ScriptedProvider
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.core.sealing import load_key
from toolwire.store import RunStore
import twresume

url, script, privacy, prompt = sys.argv[1:5]
store = RunStore.open(url, privacy=PrivacyLevel(privacy))
runtime = Runtime(twresume.registry(), recorder=store, state_key=load_key())
provider = ScriptedProvider.from_file(script)
request = RunRequest.of(prompt, provider=provider, options=RunOptions(max_rounds=5))
outcome = runtime.run_sync(request)
pause = outcome.pause
print(json.dumps({"run_id": outcome.run_id, "status": outcome.status.value,
                  "digest": None if pause is None else pause.digest}), flush=True)
time.sleep(600)  # waits to be killed: nothing of this process survives but the store
"""

RESUME = '''
import json, os, sys, time
from pathlib import Path
from toolwire.runs.runtime import OperatorDecision, Runtime, provider_from_ref
from toolwire.core.sealing import load_key
from toolwire.store import RunStore
import twresume

url, run_id, digest, barrier, parties = sys.argv[1:6]


def provider_at_the_barrier(ref):
    """Rebuild the provider from the stored reference, then wait for every resumer: all of
    them have read and opened the state, and now claim it at the same moment."""
    provider = provider_from_ref(ref)
    folder = Path(barrier)
    (folder / f"ready-{os.getpid()}").write_text("")
    deadline = time.monotonic() + 60
    while len(list(folder.glob("ready-*"))) < int(parties):
        if time.monotonic() > deadline:
            raise SystemExit("the barrier was never reached")
        time.sleep(0.001)
    return provider


store = RunStore.open(url)
runtime = Runtime(twresume.registry(), recorder=store, state_key=load_key(),
                  provider_factory=provider_at_the_barrier)
decision = OperatorDecision(action="approve", digest=digest, actor="operator")
try:
    outcome = runtime.resume_sync(run_id, decision)
    print(json.dumps({"status": outcome.status.value, "answer": outcome.result.final_content,
                      "iterations": outcome.result.iterations}), flush=True)
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}), flush=True)
store.close()
'''

TURNS = [
    {"tool_calls": [{"name": "note", "arguments": {"n": 0}}]},
    {
        "tool_calls": [
            {"name": "mark", "arguments": {"n": 1, "text": "{canary}"}},
            {"name": "note", "arguments": {"n": 2}},
        ],
        "prompt_tokens": 10,
        "completion_tokens": 5,
    },
    {"content": "finished", "prompt_tokens": 3, "completion_tokens": 2},
]


@dataclass
class Kit:
    """A folder holding the tool module, the script, the marker file and a state key."""

    root: Path
    key: str

    @classmethod
    def make(cls, root: Path, canary: str = "no-canary") -> Kit:
        (root / "site").mkdir()
        (root / "site" / "twresume.py").write_text(TOOLS)
        (root / "suspend.py").write_text(SUSPEND)
        (root / "resume.py").write_text(RESUME)
        script = json.dumps(TURNS).replace("{canary}", canary)
        (root / "script.json").write_text(script)
        return cls(root=root, key=os.urandom(32).hex())  # the children read it as hex

    @property
    def marker(self) -> Path:
        return self.root / "marker.txt"

    def marks(self) -> list[str]:
        """The marker's lines without their pids."""
        if not self.marker.exists():
            return []
        return [line.rsplit(" ", 1)[0] for line in self.marker.read_text().splitlines()]

    def pids(self) -> set[str]:
        return {line.rsplit(" ", 1)[1] for line in self.marker.read_text().splitlines()}

    def env(self) -> dict[str, str]:
        path = os.pathsep.join([SRC, str(self.root / "site")])
        return {**os.environ, "PYTHONPATH": path, "TW_MARKER": str(self.marker),
                KEY_VARIABLE: self.key}  # fmt: skip

    def start(self, program: str, *args: str) -> subprocess.Popen[str]:
        command = [sys.executable, str(self.root / program), *args]
        return subprocess.Popen(
            command, env=self.env(), text=True, stdout=subprocess.PIPE, cwd=self.root
        )

    def suspend(
        self, url: str, privacy: str = "metadata", prompt: str = "go"
    ) -> tuple[subprocess.Popen[str], dict[str, Any]]:
        """Start a run that suspends; return the still-living process and what it printed."""
        proc = self.start("suspend.py", url, str(self.root / "script.json"), privacy, prompt)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"the suspending process printed nothing (exit {proc.poll()})"
        return proc, json.loads(line)

    def resume(
        self, url: str, run_id: str, digest: str, parties: int = 1
    ) -> list[subprocess.Popen[str]]:
        barrier = self.root / f"barrier-{time.monotonic_ns()}"
        barrier.mkdir()
        args = (url, run_id, digest, str(barrier), str(parties))
        return [self.start("resume.py", *args) for _ in range(parties)]


def answer(proc: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=WAIT_SECONDS)
    assert proc.returncode == 0, f"exit {proc.returncode}: {out}"
    lines = out.strip().splitlines()
    assert lines, "the process printed nothing"
    found: dict[str, Any] = json.loads(lines[-1])
    return found


def run_columns(url: str, run_id: str) -> dict[str, Any]:
    """The run's row as the database holds it, read without the store."""
    engine = create_engine(resolve_url(url))
    try:
        with engine.connect() as connection:
            row = connection.execute(select(schema.runs).where(schema.runs.c.id == run_id)).first()
    finally:
        engine.dispose()
    assert row is not None
    return dict(row._mapping)


def step_payloads(url: str, run_id: str) -> list[str]:
    engine = create_engine(resolve_url(url))
    try:
        with engine.connect() as connection:
            query = select(schema.steps.c.payload).where(schema.steps.c.run_id == run_id)
            return list(connection.execute(query).scalars())
    finally:
        engine.dispose()
