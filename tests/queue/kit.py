"""Real workers for the queue tests: worker processes, tools that count their writes in the
database, scripts, and a way to submit runs and wait for them from the test process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import create_engine, text

import toolwire
from toolwire import RunOptions, ScriptedProvider, ToolRegistry
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.queue import RunQueue
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore, RunSummary

from ..fakes import plugin

SRC = str(Path(toolwire.__file__).resolve().parents[1])
STATE_KEY = "cd" * 32
START_TIMEOUT_S = 60
WAIT_TIMEOUT_S = 120

# Tools a worker finds through a real installed plugin. ``count_write`` stores one row per
# execution (run, key, worker pid) before it sleeps, so a worker killed during the sleep has
# provably started the write.
TOOLS = """
    import os, time
    from sqlalchemy import create_engine, text
    from toolwire import ToolContext, tool

    _engine = None

    def _db():
        global _engine
        if _engine is None:
            _engine = create_engine(os.environ["TWQ_COUNTS_URL"], pool_size=4)
        return _engine

    @tool(group="queue", data_class="public")
    def slow_read(n: int) -> str:
        "Read something, slowly."
        time.sleep(float(os.environ.get("TWQ_READ_S", "0.01")))
        return f"read {n}"

    @tool(group="queue", data_class="public", effect="non_idempotent_write")
    def count_write(key: str, context: ToolContext) -> str:
        "Write something once; every execution is counted."
        with _db().begin() as connection:
            connection.execute(
                text("INSERT INTO write_counts (run_id, key, pid) VALUES (:r, :k, :p)"),
                {"r": context.run_id, "k": key, "p": os.getpid()},
            )
        time.sleep(float(os.environ.get("TWQ_WRITE_S", "0.3")))
        return f"wrote {key}"

    def _value(key):
        with _db().connect() as connection:
            query = text("SELECT value FROM kv WHERE key = :k")
            return connection.execute(query, {"k": key}).scalar()

    @tool(group="queue", data_class="public", effect="idempotent_write")
    def set_value(key: str, value: str, context: ToolContext) -> str:
        "Set a value; every execution is counted. Its preview is re-checked before it runs."
        with _db().begin() as connection:
            connection.execute(
                text("INSERT INTO write_counts (run_id, key, pid) VALUES (:r, :k, :p)"),
                {"r": context.run_id, "k": key, "p": os.getpid()},
            )
            connection.execute(text("UPDATE kv SET value = :v WHERE key = :k"),
                               {"k": key, "v": value})
        return f"set {key}"

    @set_value.previewer
    def _preview_set(key: str, value: str, context: ToolContext) -> list:
        return [f"{key}: {_value(key)} -> {value}"]

    @set_value.basis
    def _basis_set(key: str, value: str, context: ToolContext) -> str:
        return str(_value(key))

    @tool(group="queue", data_class="public")
    def die() -> str:
        "Kill the process that runs it."
        os.kill(os.getpid(), 9)
        return "unreachable"

    def all_tools():
        return [slow_read, count_write, set_value, die]
"""


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def three_turns(delay_ms: float = 30) -> list[dict[str, Any]]:
    """Two rounds of one read each, then the answer; each turn waits ``delay_ms``."""
    return [
        {"tool_calls": [call("slow_read", n=1)], "delay_ms": delay_ms},
        {"tool_calls": [call("slow_read", n=2)], "delay_ms": delay_ms},
        {"content": "all read", "delay_ms": delay_ms},
    ]


def with_write(delay_ms: float = 20) -> list[dict[str, Any]]:
    """A read, then a write (the run waits for approval), then the answer."""
    return [
        {"tool_calls": [call("slow_read", n=1)], "delay_ms": delay_ms},
        {"tool_calls": [call("count_write", key="w1")], "delay_ms": delay_ms},
        {"content": "written", "delay_ms": delay_ms},
    ]


def rounds(count: int, delay_ms: float) -> list[dict[str, Any]]:
    """``count`` rounds of one read each, then the answer."""
    turns = [{"tool_calls": [call("slow_read", n=n)], "delay_ms": delay_ms} for n in range(count)]
    return [*turns, {"content": "done", "delay_ms": delay_ms}]


EXPECTED_THREE_TURNS = [
    ("request", 1), ("llm", 1), ("tool", 1),
    ("request", 2), ("llm", 2), ("tool", 2),
    ("request", 3), ("llm", 3),
]  # fmt: skip


@dataclass
class Worker:
    process: subprocess.Popen[str]
    id: int
    output: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self, timeout: float = 30) -> int:
        """Ctrl-C, as an operator stops it; its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise


@dataclass
class Queue:
    """One test's queue: its store URL and folder, the tools plugin, its workers."""

    url: str
    folder: Path
    workers: list[Worker] = field(default_factory=list)
    key: StateKey = field(default_factory=lambda: StateKey.parse(STATE_KEY, "test key"))
    _store: RunStore | None = None

    @property
    def store(self) -> RunStore:
        if self._store is None:
            self._store = RunStore.open(self.url)
        return self._store

    @property
    def queue(self) -> RunQueue:
        return RunQueue(self.store, self.key)

    @property
    def runtime(self) -> Runtime:
        return Runtime(ToolRegistry(), recorder=self.store, state_key=self.key)

    def env(self, **more: str) -> dict[str, str]:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(self.folder / "site"), SRC]),
            "PYTHONUNBUFFERED": "1",
            "TOOLWIRE_STATE_KEY": STATE_KEY,
            "XDG_DATA_HOME": str(self.folder / "data"),
            "TWQ_COUNTS_URL": self.url,
            **more,
        }
        env.pop("TOOLWIRE_DB", None)
        return env

    def start(
        self, count: int = 1, *, concurrency: int = 4, recover: float = 4.0,
        max_stalls: int = 3, grace: float = 5.0, **env: str,
    ) -> list[Worker]:  # fmt: skip
        """Start ``count`` worker processes and wait until each is ready."""
        args = ["--concurrency", str(concurrency), "--recover-after", str(recover),
                "--max-stalls", str(max_stalls), "--grace", str(grace)]  # fmt: skip
        command = [sys.executable, "-m", "toolwire", "worker", "--db", self.url, *args]
        processes = [
            subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=self.env(**env),
            )
            for _ in range(count)
        ]
        started = [_ready(process) for process in processes]
        self.workers += started
        return started

    def script(self, turns: Sequence[dict[str, Any]], name: str = "script") -> Path:
        path = self.folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"name": name, "turns": list(turns)}))
        return path

    def submit(self, script: Path, count: int = 1, **options: Any) -> list[str]:
        provider = ScriptedProvider.from_file(script)
        request = RunRequest.of("go", provider=provider, options=RunOptions(**options))
        queue = self.queue
        return [queue.submit(request) for _ in range(count)]

    def approve(self, run_id: str) -> None:
        runtime = self.runtime
        pause = runtime.pending(run_id)
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="test")
        self.queue.decide(runtime.check(run_id, decision), decision)

    def deny(self, run_id: str) -> None:
        runtime = self.runtime
        pause = runtime.pending(run_id)
        decision = OperatorDecision(action="deny", digest=pause.digest, actor="test")
        self.queue.decide(runtime.check(run_id, decision), decision)

    def runs(self, run_ids: Sequence[str]) -> list[RunSummary]:
        wanted = set(run_ids)
        found = self.store.list_runs(limit=1000)
        return [run for run in found if run.id in wanted]

    def wait(
        self, run_ids: Sequence[str], *, done: Any = None, timeout: float = WAIT_TIMEOUT_S
    ) -> list[RunSummary]:
        """Wait until every run ends or waits (or ``done(run)`` holds for each)."""
        settled = done or (lambda run: _ended(run))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.runs(run_ids)
            if len(found) == len(run_ids) and all(settled(run) for run in found):
                return found
            time.sleep(0.1)
        pending = [(r.id[:8], r.status) for r in self.runs(run_ids) if not settled(r)]
        raise AssertionError(f"runs did not end in {timeout} s: {pending[:10]}")

    def wait_for_steps(self, run_id: str, count: int, timeout: float = START_TIMEOUT_S) -> None:
        """Wait until the run has recorded at least ``count`` steps (a worker is running it)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            progress = self.store.progress(run_id)
            if progress is not None and len(progress.steps) >= count:
                return
            time.sleep(0.05)
        raise AssertionError(f"run {run_id} did not record {count} steps")

    def counts(self) -> dict[tuple[str, str], int]:
        engine = create_engine(self.url)
        try:
            with engine.connect() as connection:
                rows = connection.execute(
                    text("SELECT run_id, key, count(*) FROM write_counts GROUP BY run_id, key")
                ).all()
        finally:
            engine.dispose()
        return {(r[0], r[1]): int(r[2]) for r in rows}

    def close(self) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.kill()
            worker.process.wait()
            if worker.process.stdout is not None:
                worker.process.stdout.close()
        if self._store is not None:
            self._store.close()


def _ended(run: RunSummary) -> bool:
    status = RunStatus(run.status)
    return status.terminal or status.waiting


def _ready(process: subprocess.Popen[str]) -> Worker:
    """The worker once it prints its ready line; its output keeps being read behind."""
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if " ready: " in line:
            worker = Worker(process=process, id=int(line.split()[1]), output=lines)
            threading.Thread(target=_drain, args=(process, lines), daemon=True).start()
            return worker
    process.kill()
    raise AssertionError("the worker did not start:\n" + "".join(lines))


def _drain(process: subprocess.Popen[str], lines: list[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)


COUNTS_TABLE = (
    "CREATE TABLE write_counts (run_id varchar(64), key varchar(64), pid int, "
    "at timestamptz DEFAULT clock_timestamp())"
)
KV_TABLE = "CREATE TABLE kv (key varchar(64) PRIMARY KEY, value text)"  # what set_value sets


def install(folder: Path, url: str) -> None:
    """The tools plugin in ``folder/site``, and the table its write tool counts in."""
    site = folder / "site"
    site.mkdir()
    plugin(site, TOOLS, "queue_tools = twplugin:all_tools")
    (folder / "data").mkdir()
    engine = create_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(text(COUNTS_TABLE))
            connection.execute(text(KV_TABLE))
    finally:
        engine.dispose()


@contextmanager
def queue_in(folder: Path, url: str) -> Iterator[Queue]:
    install(folder, url)
    found = Queue(url=url, folder=folder)
    try:
        yield found
    finally:
        found.close()
