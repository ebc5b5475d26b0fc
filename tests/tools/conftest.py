"""A real workspace per test: the demo shop database, a files folder with traps, a log file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest

from toolwire import ChatMessage, RunOptions, ToolCall, ToolContext, ToolResult, User
from toolwire.core.sealing import StateKey
from toolwire.core.trust import TrustZone
from toolwire.demo._content import write_database, write_env, write_log
from toolwire.loop.seam import Seam
from toolwire.runs.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
from toolwire.tools.api import preview_of
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace

from ..fakes import RecordingProvider, call

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


@contextlib.contextmanager
def database_of(workspace: Workspace) -> Iterator[sqlite3.Connection]:
    """The workspace's SQLite database; what the block changes is committed, then it closes."""
    assert workspace.database_url is not None
    with sqlite3.connect(workspace.database_url.removeprefix("sqlite:///")) as db:
        yield db
    db.close()


def query(workspace: Workspace, sql: str) -> list[tuple[Any, ...]]:
    """The rows ``sql`` reads from the workspace's SQLite database, bypassing the tools."""
    with database_of(workspace) as db:
        rows = db.execute(sql).fetchall()
    return rows


ADMIN = User("admin", is_admin=True)


def invoke(
    workspace: Workspace | None,
    name: str,
    arguments: Mapping[str, Any] | str | None = None,
    *,
    user: User | None = ADMIN,
    zone: TrustZone | None = None,
) -> ToolResult:
    """One call through the real invoke seam, with the tool offered, in ``zone`` (None: not
    known, the least trusted)."""
    seam = Seam(ToolRegistry(builtin_tools()))
    context = ToolContext(user=user, workspace=workspace, trust_zone=zone)
    call = ToolCall.of("call_1", name, arguments)
    return asyncio.run(seam.invoke(call, frozenset({name}), context)).result


def preview(workspace: Workspace, name: str, arguments: Mapping[str, Any]) -> list[str]:
    """The lines an approver reads for this call, straight from the tool's previewer."""
    tool = ToolRegistry(builtin_tools()).get(name)
    assert tool is not None
    show = preview_of(tool)
    assert show is not None
    return list(show(arguments, ToolContext(user=ADMIN, workspace=workspace)))


@dataclass(frozen=True, slots=True)
class Gated:
    """A real run through ``Runtime`` that paused before one call, and what resumes it."""

    runtime: Runtime
    provider: RecordingProvider
    context: ToolContext
    outcome: RunOutcome

    def decide(self, action: Literal["approve", "deny"]) -> RunOutcome:
        pause = self.outcome.pause
        assert pause is not None
        decision = OperatorDecision(action=action, digest=pause.digest, actor="tester")
        return self.runtime.resume_sync(
            self.outcome.run_id, decision, provider=self.provider, context=self.context
        )

    def tool_message(self) -> ChatMessage:
        """The tool turn the model read after the decision."""
        message = self.provider.requests[-1].messages[-1]
        assert message.role == "tool"
        return message


def gated_run(workspace: Workspace, name: str, arguments: Mapping[str, Any]) -> Gated:
    """Run a model that calls ``name`` once (enabled and granted), then says "done"."""
    registry = ToolRegistry(builtin_tools())
    registry.availability.set_tool(name, True)
    runtime = Runtime(registry, state_key=StateKey.generate())
    provider = RecordingProvider.of([{"tool_calls": [call(name, arguments)]}, {"content": "done"}])
    context = ToolContext(user=ADMIN, workspace=workspace)
    options = RunOptions(allowed_tools=[name])
    request = RunRequest.of("go", provider=provider, context=context, options=options)
    return Gated(runtime, provider, context, runtime.run_sync(request))


def artifact_leaves(result: ToolResult) -> list[str]:
    """Every string an artifact of ``result`` shows from data: cells, tree labels, values and
    code (not column names, key names or a code block's language, which the tool chose)."""
    leaves: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            leaves.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    for artifact in result.artifacts:
        data = dict(artifact.data)
        if "items" in data:
            data["items"] = [value for _key, value in data["items"]]
        walk({k: v for k, v in data.items() if k not in ("columns", "language")})
    return leaves


def assert_artifacts_within_text(result: ToolResult) -> None:
    """The artifact never shows more than the text: each of its strings is in the content."""
    assert not result.is_error, result.content
    for leaf in artifact_leaves(result):
        assert leaf in result.content, leaf
