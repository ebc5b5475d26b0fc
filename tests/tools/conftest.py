"""A real workspace per test: the demo shop database, a files folder with traps, a log file."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from toolwire import ToolCall, ToolContext, ToolResult, User
from toolwire.demo._content import write_database, write_env, write_log
from toolwire.seam import Seam
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace import Workspace

OUTSIDE_SECRET = "outside-canary-5b1f"
NOTES = 60  # more rows than read_records' cap of 50


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    database = tmp_path / "shop.db"
    write_database(database)
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
        db.executemany(
            "INSERT INTO notes (body) VALUES (?)", [(f"note {n}",) for n in range(NOTES)]
        )
        db.execute("CREATE TABLE wide (c1, c2, c3, c4, c5, c6)")
        db.execute("INSERT INTO wide VALUES (1, 2, 3, 4, 5, 6)")
    db.close()
    files = tmp_path / "files"
    (files / "src").mkdir(parents=True)
    (files / "src" / "app.py").write_text("def main():\n    return 42\n# third line\n")
    (files / "README.md").write_text("hello\n")
    write_env(files / ".env")
    (files / "deploy.pem").write_text("-----BEGIN PRIVATE KEY-----\nabc\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(OUTSIDE_SECRET)
    (files / "escape.txt").symlink_to(outside / "secret.txt")
    (files / "escape_dir").symlink_to(outside, target_is_directory=True)
    (files / "innocent.txt").symlink_to(files / ".env")
    os.mkfifo(files / "pipe")
    log = tmp_path / "logs" / "app.log"
    write_log(log)
    ws = Workspace(
        database_url=f"sqlite:///{database}",
        files_root=files,
        log_files=(log,),
        environ={"HOME": "/home/shop", "API_TOKEN": "plain", "GREETING": "hello"},
    )
    yield ws
    ws.dispose()


ADMIN = User("admin", is_admin=True)


def invoke(
    workspace: Workspace | None,
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    user: User | None = ADMIN,
) -> ToolResult:
    """One call through the real invoke seam, with the tool offered."""
    seam = Seam(ToolRegistry(builtin_tools()))
    context = ToolContext(user=user, workspace=workspace)
    call = ToolCall.of("call_1", name, arguments)
    return asyncio.run(seam.invoke(call, frozenset({name}), context)).result
