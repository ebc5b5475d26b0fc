"""The queue from the command line, every command a real process: run --queue, runs approve
on a queued run, toolwire workers, and the clear error a queue on SQLite is."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolwire.queue.engine import NOT_POSTGRES

from ..served import free_port
from .kit import Queue, rounds, three_turns, with_write

ROOT = Path(__file__).parents[2]


def toolwire(queue: Queue, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args],
        cwd=ROOT,
        capture_output=True, text=True, env=queue.env(COLUMNS="200"), timeout=120, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    "command",
    [
        ["run", "--queue", "--script", "examples/lookup.yaml", "hello"],
        ["worker"],
        ["workers"],
        ["serve", "--queue", "--port", str(free_port())],
    ],
)
def test_a_queue_on_sqlite_is_a_clear_error(
    queue: Queue, tmp_path: Path, command: list[str]
) -> None:
    done = toolwire(queue, *command, "--db", str(tmp_path / "runs.db"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith(NOT_POSTGRES), done.stderr
    assert "Traceback" not in done.stderr


def test_run_queue_prints_the_steps_a_worker_records_and_the_answer(queue: Queue) -> None:
    queue.start(1)
    script = queue.script(three_turns())
    done = toolwire(queue, "run", "--queue", "--db", queue.url, "--script", str(script),
                    "--privacy", "full", "go")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("run ") and lines[0].endswith(" queued for a worker")
    assert [line.split("]")[0] + "]" for line in lines[1:9]] == [
        "[round 1]", "[round 1]", "[round 1]", "[round 2]", "[round 2]", "[round 2]",
        "[round 3]", "[round 3]",
    ]  # fmt: skip
    assert "tool slow_read ok" in lines[3] and lines[3].endswith("read 1")
    assert lines[-1] == "all read"


def test_a_queued_run_waits_and_runs_approve_queues_its_resume(queue: Queue) -> None:
    queue.start(1)
    script = queue.script(with_write())
    waited = toolwire(queue, "run", "--queue", "--db", queue.url, "--script", str(script),
                      "--json", "go")  # fmt: skip
    assert waited.returncode == 3, waited.stdout + waited.stderr
    outcome = json.loads(waited.stdout)
    assert (outcome["status"], outcome["steps"]) == ("awaiting_approval", 5)
    assert queue.counts() == {}
    run_id = outcome["run_id"]
    done = toolwire(queue, "runs", "approve", run_id, "--db", queue.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"decision queued; a worker carries run {run_id} on" in done.stdout
    steps = [line for line in done.stdout.splitlines() if line.startswith("[round")]
    assert "approved by" in steps[0] and "tool count_write ok" in steps[1]  # from the decision on
    assert queue.counts() == {(run_id, "w1"): 1}


def test_workers_lists_each_live_worker_and_the_runs_it_executes(queue: Queue) -> None:
    (worker,) = queue.start(1, concurrency=3)
    # 20 s of rounds: still running at the second listing on a loaded machine (it is cancelled)
    (run_id,) = queue.submit(queue.script(rounds(100, delay_ms=200)), max_rounds=120)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = toolwire(queue, "workers", "--db", queue.url, "--json")
        assert done.returncode == 0, done.stderr
        (listed,) = json.loads(done.stdout)
        if listed["runs"]:
            break
    assert (listed["id"], listed["pid"], listed["concurrency"], listed["live"]) == (
        worker.id, worker.pid, 3, True,
    )  # fmt: skip
    assert listed["runs"][0]["id"] == run_id and listed["runs"][0]["status"] == "running"
    table = toolwire(queue, "workers", "--db", queue.url)
    assert table.returncode == 0 and run_id in table.stdout and "live" in table.stdout
    queue.store.request_cancel(run_id)
