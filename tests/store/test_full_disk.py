"""A full disk at the end of a run: the run's terminal status is written before the parts of
its ending that grow the database, and the part that could not be written is reported; the
run is never left ``running`` for the next open to relabel ``interrupted``.

The disk is real: a small tmpfs mounted for the test (root only; skipped elsewhere)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolwire.store import RunStore

DISK_KIB = 600  # room for the store and the run's steps, not for its long answer as well
ANSWER_WORDS = 60_000  # 300 KB of answer, kept twice at --privacy full (step and row)


@contextlib.contextmanager
def small_disk(folder: Path) -> Iterator[Path]:
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_KIB}k", "tmpfs", str(folder)],
        capture_output=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        why = mounted.stderr.decode(errors="replace").strip()
        pytest.fail(f"could not mount a {DISK_KIB} KiB tmpfs: {why}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.skipif(sys.platform != "linux" or os.geteuid() != 0, reason="mounts a tmpfs")
def test_a_run_that_completed_on_a_full_disk_stays_completed_and_says_what_was_lost(
    tmp_path: Path,
) -> None:
    script = tmp_path / "script.yaml"
    script.write_text(f"turns:\n  - content: {'word ' * ANSWER_WORDS!r}\n")
    env = {k: v for k, v in os.environ.items() if k != "TOOLWIRE_DB"}
    with small_disk(tmp_path / "disk") as disk:
        env["XDG_DATA_HOME"] = str(disk / "data")
        db = disk / "runs.db"
        done = subprocess.run(
            [sys.executable, "-m", "toolwire", "run", "--script", str(script), "--db", str(db),
             "--privacy", "full", "--quiet", "hi"],
            capture_output=True, text=True, env=env, timeout=120, check=False,
        )  # fmt: skip
        with RunStore.open(str(db)) as store:  # a later open: the writer's process is gone
            runs = store.list_runs()
    assert done.returncode == 0, done.stderr
    assert "warning: the run store failed; this run is not fully recorded" in done.stderr
    assert "database or disk is full" in done.stderr  # the operator's log says why
    assert [(run.status, run.termination_reason) for run in runs] == [("completed", "completed")]
