"""Real processes against a real SQLite file: a run killed mid-flight, and a full disk."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from typer.testing import CliRunner

import toolwire
from toolwire.cli import runs  # noqa: F401  (registers the commands)
from toolwire.cli.app import app
from toolwire.store import RunStore
from toolwire.store.runs import INTERRUPTED_ERROR

SRC = str(Path(toolwire.__file__).resolve().parents[1])
WAIT_SECONDS = 30

BLOCKING_RUN = """
import sys, time
from toolwire import RunOptions, ScriptedProvider, ToolRegistry, tool
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore

@tool(data_class="public")
def work(n: int) -> str:
    if n == 3:
        time.sleep(600)  # blocks until the test kills this process
    return f"worked {n}"

turns = [{"tool_calls": [{"name": "work", "arguments": {"n": n}}],
          "prompt_tokens": 10 * n, "completion_tokens": n} for n in (1, 2, 3)]
provider = ScriptedProvider.from_turns(turns + [{"content": "done"}])
request = RunRequest.of("go", provider=provider, options=RunOptions(max_rounds=5))
Runtime(ToolRegistry([work]), recorder=RunStore.open(sys.argv[1])).run_sync(request)
"""

FULL_DISK = """
import json, resource, signal, sys
from toolwire import ScriptedProvider, ToolRegistry
from toolwire.policy.trace import ToolStep
from toolwire.core.errors import StoreError
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import RunOutcome, RunRequest, RunStatus, Runtime
from toolwire.store import RunStore

store = RunStore.open(sys.argv[1], privacy=PrivacyLevel.FULL)
provider = ScriptedProvider.from_turns([{"content": "x" * 3_000_000}])
run_id = store.begin(RunRequest.of("hi", provider=provider))
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, 1_000_000))
store.record_step(run_id, 1, ToolStep(round=1, tool_name="t", tool_result="y" * 2_000_000))
try:  # steps are written behind the run: the failure is reported to the run's next call
    store.settle(RunOutcome(run_id=run_id, status=RunStatus.COMPLETED, result=None, steps=(),
                            wall_ms=0.0))
    error = None
except StoreError as exc:
    error = str(exc)
outcome = Runtime(ToolRegistry(), recorder=store).run_sync(RunRequest.of("hi", provider=provider))
print(json.dumps({"run_id": run_id, "error": error, "status": outcome.status.value,
                  "settled": store.get_run(run_id).status,
                  "store_error": outcome.store_error, "answer": len(outcome.result.final_content)}))
"""


def child(script: str, db: Path, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": SRC}
    command = [sys.executable, "-c", script, str(db)]
    proc: subprocess.Popen[str] = subprocess.Popen(command, env=env, text=True, **kwargs)  # type: ignore[call-overload]
    return proc


def wait_for_steps(db: Path, count: int, proc: subprocess.Popen[str]) -> str:
    """Poll the file with plain sqlite3 (the child may still be creating it), then the store."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the child process ended early"
        if _step_count(db) >= count:
            with RunStore.open(str(db)) as store:
                (summary,) = store.list_runs()
            assert summary.status == "running"  # its owner is alive: not interrupted
            return summary.id
        time.sleep(0.05)
    raise AssertionError(f"the child did not record {count} steps in {WAIT_SECONDS} s")


def _step_count(db: Path) -> int:
    try:
        with closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as connection:
            return int(connection.execute("SELECT count(*) FROM steps").fetchone()[0])
    except sqlite3.Error:
        return 0  # not created yet


def test_a_killed_run_is_marked_interrupted_and_keeps_its_steps(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    proc = child(BLOCKING_RUN, db)
    try:
        run_id = wait_for_steps(db, 8, proc)  # rounds 1 and 2, then round 3's request and llm
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with RunStore.open(str(db)) as store:
        stored = store.get_run(run_id)
    assert stored is not None
    assert (stored.status, stored.error) == ("interrupted", INTERRUPTED_ERROR)
    assert stored.finished_at is not None
    assert [(s["sequence"], s["kind"], s["round"]) for s in stored.steps] == [
        (1, "request", 1), (2, "llm", 1), (3, "tool", 1),
        (4, "request", 2), (5, "llm", 2), (6, "tool", 2),
        (7, "request", 3), (8, "llm", 3),
    ]  # fmt: skip
    assert stored.steps[5]["tool_result_length"] == len("worked 2")
    assert (stored.rounds, stored.prompt_tokens, stored.completion_tokens) == (3, 60, 6)
    assert (stored.cost, stored.cost_complete) == (0.0, False)  # the scripted model is unpriced


def test_runs_show_of_a_killed_run_tells_the_rounds_and_tokens_its_steps_recorded(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.db"
    proc = child(BLOCKING_RUN, db)
    try:
        run_id = wait_for_steps(db, 8, proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    result = CliRunner().invoke(app, ["runs", "show", run_id, "--db", str(db)])
    assert result.exit_code == 0, result.output
    heading = result.output.splitlines()[1:9]
    assert heading[0] == "  status: interrupted"
    assert heading[4:7] == [
        "  privacy: metadata",
        "  rounds: 3",
        "  tokens: 60 prompt, 6 completion",
    ]
    assert heading[7] == "  cost: unknown"


def test_a_full_disk_is_a_clear_store_error_and_the_run_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    proc = child(FULL_DISK, db, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(timeout=WAIT_SECONDS)
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["error"] == (
        f"the run store could not record step 1 of run {report['run_id']}: disk I/O error"
    )
    assert report["settled"] == "completed"  # the run row itself still settled
    assert report["status"] == "completed"
    assert report["store_error"] == "the run store failed; this run is not fully recorded"
    assert report["answer"] == 3_000_000
