"""A workspace's database connections are closed, not left to the collector: when the
workspace is let go of (a resumed run reloads its file) and when the process exits (Python
3.13 warns of every sqlite3 connection collected unclosed)."""

from __future__ import annotations

import gc
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from toolwire.demo import prepare_demo
from toolwire.workspace.config import Workspace


def open_handles(path: Path) -> int:
    """How many of this process's file descriptors are open on ``path``."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) == str(path.resolve()))


def test_a_workspace_holds_no_sqlite_file_open_between_its_tools_calls(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    sqlite3.connect(path).close()
    workspace = Workspace(database_url=f"sqlite:///{path}")
    with workspace.engine().connect() as connection:
        connection.exec_driver_sql("select 1")
        assert open_handles(path) == 1  # open while the call reads
    assert open_handles(path) == 0  # and closed once it is done, not left to the collector
    del workspace
    gc.collect()
    assert open_handles(path) == 0


def test_a_run_over_a_workspace_database_leaves_no_connection_unclosed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    demo = prepare_demo(data / "toolwire" / "demo")
    script = tmp_path / "count.yaml"
    script.write_text(
        "turns:\n"
        "  - tool_calls:\n"
        "      - name: count_records\n"
        "        arguments: {table: orders}\n"
        "  - content: counted\n"
    )
    environ = {**os.environ, "XDG_DATA_HOME": str(data)}
    environ.pop("TOOLWIRE_DB", None)
    done = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-X", "dev", "-m", "toolwire", "run",
         "--workspace", str(demo.root / "workspace.toml"), "--script", str(script), "count"],
        capture_output=True, text=True, env=environ, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "orders" in done.stdout or "counted" in done.stdout
    assert "ResourceWarning" not in done.stderr, done.stderr
