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

from sqlalchemy.pool import QueuePool

from toolwire.demo import prepare_demo
from toolwire.workspace.config import Workspace


def test_a_workspace_let_go_closes_its_pooled_connections(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    sqlite3.connect(path).close()
    workspace = Workspace(database_url=f"sqlite:///{path}")
    engine = workspace.engine()
    with engine.connect():
        pass
    pool = engine.pool
    assert isinstance(pool, QueuePool) and pool.checkedin() == 1  # pooled, open
    del workspace
    gc.collect()
    assert pool.checkedin() == 0


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
