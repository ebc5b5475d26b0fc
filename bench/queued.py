"""Queued runs on real worker processes: runs per second, and the wait from submit to first step.

    python bench/queued.py --db postgresql+psycopg://USER@HOST/DB   (or $TOOLWIRE_TEST_PG_URL)

The workload is I/O-bound, as real agent runs are: a scripted model that waits 100 ms per turn,
three turns a run (two tool rounds, then the answer). For 1, 2 and 4 worker processes, each
with concurrency 1 and 16, a burst of runs is submitted at once and timed until the last one
completes: runs per second. Then, on 4 workers x 16, runs are submitted at a steady pace (half
the measured rate) and each one's time from submit to its first stored step is measured (the
store is read every 2 ms): p50 and p99.

Targets: 4 x 16 at least 12x the runs per second of 1 x 1; p99 submit-to-first-step under
250 ms. Each is printed with whether it was met; the exit status is 0 once every run completed
(on a shared machine the figures move with whatever else runs, so they report, not gate). Each
configuration gets a schema of its own, dropped afterwards. (The file is not named queue.py:
run as a file, its folder comes first on the path and would shadow the standard library's
``queue`` for every other benchmark here.)
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import plugin

import toolwire
from bench.store import scratch_schema
from toolwire import RunOptions, ScriptedProvider
from toolwire.core.sealing import StateKey
from toolwire.queue import RunQueue
from toolwire.runs.runtime import RunRequest
from toolwire.store import RunStore

TURN_MS = 100
SHAPES = ((1, 1), (1, 16), (2, 1), (2, 16), (4, 1), (4, 16))
SECONDS_PER_SHAPE = 2.0  # each burst is sized to keep the workers busy about this long
PACED_SECONDS = 3.0
TARGET_SPEEDUP = 12.0
TARGET_P99_MS = 250.0
KEY = "ef" * 32
SRC = str(Path(toolwire.__file__).resolve().parents[1])
TOOL = """
    from toolwire import tool

    @tool(group="bench", data_class="public")
    def note(n: int) -> str:
        "Note a number."
        return f"noted {n}"
"""


def prepare(folder: Path) -> Path:
    """The tool plugin the workers load, and the script: 100 ms a turn, three turns."""
    site = folder / "site"
    site.mkdir()
    plugin(site, TOOL, "note = twplugin:note")
    turns = [
        {"tool_calls": [{"name": "note", "arguments": {"n": n}}], "delay_ms": TURN_MS}
        for n in (1, 2)
    ]
    script = folder / "script.yaml"
    script.write_text(yaml.safe_dump({"turns": [*turns, {"content": "ok", "delay_ms": TURN_MS}]}))
    return script


def start_workers(
    url: str, folder: Path, count: int, concurrency: int
) -> list[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder / "site"), SRC]),
           "PYTHONUNBUFFERED": "1", "TOOLWIRE_STATE_KEY": KEY,
           "XDG_DATA_HOME": str(folder / "data")}  # fmt: skip
    command = [sys.executable, "-m", "toolwire", "worker", "--db", url,
               "--concurrency", str(concurrency)]  # fmt: skip
    pipe = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, "text": True, "env": env}
    workers = [subprocess.Popen(command, **pipe) for _ in range(count)]  # type: ignore[call-overload]
    for worker in workers:
        assert worker.stdout is not None
        line = worker.stdout.readline()
        if " ready: " not in line:
            raise SystemExit(f"a worker did not start: {line}{worker.stdout.read()}")
        threading.Thread(target=worker.stdout.read, daemon=True).start()  # keep its pipe empty
    return workers


def stop(workers: list[subprocess.Popen[str]]) -> None:
    for worker in workers:
        worker.send_signal(signal.SIGINT)
    for worker in workers:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()


class FirstSteps(threading.Thread):
    """Watches the store for each run's first step; keeps when it was first seen."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.engine = create_engine(url)
        self.seen: dict[str, float] = {}
        self.done = 0
        self.halt = threading.Event()

    def run(self) -> None:
        query = text("SELECT run_id FROM steps WHERE sequence = 1")
        count = text("SELECT count(*) FROM runs WHERE status = 'completed'")
        while not self.halt.wait(0.002):
            with self.engine.connect() as connection:
                now = time.perf_counter()
                for run_id in connection.execute(query).scalars():
                    self.seen.setdefault(run_id, now)
                self.done = int(connection.execute(count).scalar() or 0)

    def stop(self) -> None:
        self.halt.set()
        self.join()
        self.engine.dispose()


def measure(base: str, folder: Path, script: Path, workers: int, concurrency: int) -> float:
    """Runs per second for a burst on ``workers`` x ``concurrency``."""
    runs = max(8, round(workers * concurrency * SECONDS_PER_SHAPE / (3 * TURN_MS / 1000)))
    with scratch_schema(base) as url, RunStore.open(url) as store:
        queue = RunQueue(store, StateKey.parse(KEY, "bench"))
        request = RunRequest.of("go", provider=ScriptedProvider.from_file(script),
                                options=RunOptions(max_rounds=5))  # fmt: skip
        processes = start_workers(url, folder, workers, concurrency)
        watch = FirstSteps(url)
        watch.start()
        try:
            started = time.perf_counter()
            for _ in range(runs):
                queue.submit(request)
            while watch.done < runs:
                time.sleep(0.01)
            elapsed = time.perf_counter() - started
        finally:
            watch.stop()
            stop(processes)
    return runs / elapsed


def paced(base: str, folder: Path, script: Path, rate: float) -> list[float]:
    """Milliseconds from submit to first step, submitting ``rate`` runs a second on 4 x 16."""
    with scratch_schema(base) as url, RunStore.open(url) as store:
        queue = RunQueue(store, StateKey.parse(KEY, "bench"))
        request = RunRequest.of("go", provider=ScriptedProvider.from_file(script),
                                options=RunOptions(max_rounds=5))  # fmt: skip
        processes = start_workers(url, folder, 4, 16)
        watch = FirstSteps(url)
        watch.start()
        submitted: dict[str, float] = {}
        try:
            begin, count = time.perf_counter(), round(rate * PACED_SECONDS)
            for n in range(count):
                time.sleep(max(0.0, begin + n / rate - time.perf_counter()))
                at = time.perf_counter()
                submitted[queue.submit(request)] = at
            while watch.done < count:
                time.sleep(0.01)
        finally:
            watch.stop()
            stop(processes)
    return [(watch.seen[r] - at) * 1000 for r, at in submitted.items()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=os.environ.get("TOOLWIRE_TEST_PG_URL"))
    base = parser.parse_args().db
    if not base:
        print("give a PostgreSQL database with --db (or $TOOLWIRE_TEST_PG_URL)")
        return 2
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        script = prepare(folder)
        rates = {}
        for workers, concurrency in SHAPES:
            rates[workers, concurrency] = measure(base, folder, script, workers, concurrency)
            print(f"{workers} worker(s) x {concurrency:2d}: {rates[workers, concurrency]:6.1f} "
                  "runs/s")  # fmt: skip
        speedup = rates[4, 16] / rates[1, 1]
        waits = sorted(paced(base, folder, script, rates[4, 16] / 2))
    p50 = statistics.median(waits)
    p99 = waits[min(len(waits) - 1, round(0.99 * (len(waits) - 1)))]
    print(f"4 x 16 against 1 x 1: {speedup:.1f}x (target ≥ {TARGET_SPEEDUP:g}x: "
          f"{_verdict(speedup >= TARGET_SPEEDUP)})")  # fmt: skip
    print(f"submit to first step, {len(waits)} runs at {rates[4, 16] / 2:.0f}/s on 4 x 16: "
          f"p50 {p50:.0f} ms, p99 {p99:.0f} ms (target p99 < {TARGET_P99_MS:g} ms: "
          f"{_verdict(p99 < TARGET_P99_MS)})")  # fmt: skip
    return 0


def _verdict(met: bool) -> str:
    return "met" if met else "missed"


if __name__ == "__main__":
    sys.exit(main())
