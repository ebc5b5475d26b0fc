"""Egress canary for the built-ins: secrets planted wherever the tools look never reach the wire.

A canary is planted in every place a tool reads but must not show: credential columns, a
sensitive column's change in the history table, secrets files in each root, a document's
private key, a configuration password, a crontab variable and a unit's URL credentials, a
log's token, the stdout of the application ``resolve_route`` imports. A real OpenAI adapter
(over ``httpx.MockTransport``) then runs a model that calls every built-in of the second wave
once, the writes approved through the real runtime, and every request body it sent is searched
for every canary in every encoding (``tests/providers/test_egress``). Every tool must have run
without error and every artifact must stay within its text.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from toolwire import Artifact, ArtifactType, RunOptions, ToolContext, ToolResult, User
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace
from toolwire.workspace.maps import AccountMap, ConfigMap, HistoryMap, JobMap, RouteMap

from ..providers.servers import KEY, FakeModel, no_sleep
from ..providers.test_egress import assert_no_canary
from .conftest import assert_artifacts_within_text

DEMO = Path(__file__).parents[2] / "src" / "toolwire" / "demo"
SCHEMA = DEMO / "schemas" / "app.schema.json"
PEM = "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n"
APP = """\
import sys
print("{0}")
print("{0}", file=sys.stderr)
from starlette.applications import Starlette
from starlette.routing import Route
async def home(request): ...
app = Starlette(routes=[Route("/", home)])
"""


def canary() -> str:
    return f"cnry{uuid.uuid4().hex}"


class Planted(list[str]):
    def new(self) -> str:
        secret = canary()
        self.append(secret)
        return secret


def build(root: Path, planted: Planted) -> Workspace:
    database = root / "shop.db"
    shutil.copy(_demo_database(root), database)
    with sqlite3.connect(database) as db:
        db.execute(
            "UPDATE customers SET password_hash = ?, api_token = ?", (planted.new(), planted.new())
        )
        db.execute(
            "UPDATE staff SET password_hash = ?, mfa_secret = ?", (planted.new(), planted.new())
        )
        db.execute(
            "UPDATE record_history SET old_value = ?, new_value = ? WHERE field = 'password_hash'",
            (planted.new(), planted.new()),
        )
        db.execute(
            "UPDATE scheduled_jobs SET command = ? WHERE id = 1", (f"run --token={planted.new()}",)
        )
        db.execute("UPDATE sessions SET session_token = ?", (planted.new(),))
        db.execute("INSERT INTO product_images (product_id, path) VALUES (1, ?)",
                   (f"https://u:{planted.new()}@cdn.example/x.png",))  # fmt: skip
    db.close()
    files = root / "files"
    shutil.copytree(DEMO / "files", files)
    (files / ".env").write_text(f"SECRET={planted.new()}\n")
    (files / "shop" / "keys.py").write_text(f'KEY = "images/mug.svg"\n{PEM.format(planted.new())}')
    docs = root / "docs"
    shutil.copytree(DEMO / "docs", docs)
    (docs / "credentials.md").write_text(f"# Keys\nvolume {planted.new()}\n")
    (docs / "deploy.md").write_text(f"# Deploy\nvolume discount\n{PEM.format(planted.new())}")
    (docs / "ops" / "token.md").write_text(f"# Token\nvolume discount password={planted.new()}\n")
    config = root / "config"
    shutil.copytree(DEMO / "config", config)
    (config / "app.toml").write_text(
        (DEMO / "config" / "app.toml").read_text().replace("Sup3rS3cret", planted.new())
    )
    (config / "secrets.yaml").write_text(f"token: {planted.new()}\n")
    (config / "crontab").write_text(
        f"SHOP_PASSWORD={planted.new()}\n0 * * * * run --password={planted.new()}\n"
    )
    (config / "systemd" / "backup.service").write_text(
        f"[Service]\nExecStart=/bin/dump postgresql://u:{planted.new()}@db/shop\n"
    )
    log = root / "logs" / "app.log"
    log.parent.mkdir()
    log.write_text(f"x.py:1: DeprecationWarning: old api, api_key={planted.new()}\n")
    app = root / "app"
    app.mkdir()
    (app / "site_app.py").write_text(APP.format(planted.new()))
    os.link(files / ".env", root / "linked.log")
    return Workspace(
        database_url=f"sqlite:///{database}",
        files_root=files,
        files_roots={"docs": docs, "config": config},
        log_files=(log, root / "linked.log"),
        documents=docs,
        data_dir=root / "data",
        config=ConfigMap(folder=config, schemas=(("app.toml", SCHEMA),)),
        history=HistoryMap(table="record_history", field_column="field", time_column="changed_at"),
        accounts=AccountMap(users="staff", roles="roles"),
        jobs=JobMap(crontab=config / "crontab", systemd=config / "systemd", table="scheduled_jobs"),
        routes=RouteMap(app="site_app:app", app_path=app),
    )  # fmt: skip


def _demo_database(root: Path) -> Path:
    from toolwire.demo._content import write_database

    path = root / "demo.db"
    write_database(path)
    return path


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("record_history", {"table": "customers", "id": 1}),
    ("record_tree", {"table": "categories"}),
    ("lint_schema", {}),
    ("resolve_route", {"path": "/"}),
    ("find_missing_files", {"table": "product_images", "column": "path"}),
    ("file_references", {"path": "images/mug.svg"}),
    ("search_documents", {"query": "volume discount"}),
    ("fetch_document", {"path": "ops/token.md"}),
    ("get_config", {}),
    ("get_config", {"path": "app.toml"}),
    ("check_config", {}),
    ("list_users", {}),
    ("list_users_raw", {}),
    ("list_roles", {}),
    ("list_deprecations", {}),
    ("list_scheduled_jobs", {}),
    ("browse_folder", {"root": "config", "depth": 3}),
    ("search_code", {"root": "docs", "pattern": "volume"}),
    ("find_files", {"root": "docs", "pattern": "*.md"}),
]
WRITES: list[tuple[str, dict[str, Any]]] = [
    ("set_field", {"table": "customers", "id": 1, "column": "city", "value": "Paris"}),
    (
        "link_records",
        {"table": "product_categories", "values": {"product_id": 2, "category_id": 3}},
    ),
]


def test_no_planted_secret_reaches_the_wire(tmp_path: Path) -> None:
    planted = Planted()
    workspace = build(tmp_path, planted)
    model = FakeModel([CALLS, WRITES, "done"])
    provider = OpenAIProvider(
        model="gpt-test", api_key=KEY, base_url="https://api.openai.com/v1", trust_zone="local",
        http=HttpSettings(transport=model.transport(), sleep=no_sleep, timeout=10),
    )  # fmt: skip
    registry = ToolRegistry(builtin_tools())
    for name in ("list_users_raw", "set_field", "link_records"):
        registry.availability.set_tool(name, True)
    runtime = Runtime(registry, state_key=StateKey.generate())
    context = ToolContext(user=User("admin", is_admin=True), workspace=workspace)
    options = RunOptions(max_rounds=5, max_concurrency=1)
    first = runtime.run_sync(
        RunRequest.of("go", provider=provider, context=context, options=options)
    )
    assert first.status is RunStatus.AWAITING_APPROVAL and first.pause is not None
    approve = OperatorDecision(action="approve", digest=first.pause.digest, actor="tester")
    done = runtime.resume_sync(first.run_id, approve, provider=provider, context=context)
    workspace.dispose()
    assert done.status is RunStatus.COMPLETED and done.result is not None
    assert first.result is not None
    invocations = [*first.result.trace, *done.result.trace]
    assert [i.name for i in invocations] == [name for name, _ in CALLS + WRITES]
    for invocation in invocations:
        assert not invocation.is_error, (invocation.name, invocation.result)
    with_artifacts = [i for i in invocations if i.artifacts]
    without = sorted(i.name for i in invocations if not i.artifacts)
    assert without == ["link_records", "search_code", "set_field"]  # text is all they return
    for invocation in with_artifacts:
        for artifact in invocation.artifacts:
            _within(invocation.result, artifact.data)
    bodies = [c.body for c in model.captured]
    assert len(bodies) == 3
    assert len(planted) == 21  # every place above
    assert_no_canary(bodies, list(planted))
    last = json.loads(bodies[-1])
    assert any("city" in str(m.get("content")) or "row updated" in str(m.get("content"))
               for m in last["messages"])  # fmt: skip


def _within(text: str, data: Mapping[str, Any]) -> None:
    """An artifact's data, as a stored step holds it, within the text the model read."""
    assert_artifacts_within_text(ToolResult.text(text, Artifact(ArtifactType.TABLE, "x", data)))


def test_the_canary_search_would_find_a_leak(tmp_path: Path) -> None:
    """The planted values are real canaries: one placed in a tool's text is found."""
    planted = Planted()
    secret = planted.new()
    with pytest.raises(AssertionError):
        assert_no_canary([json.dumps({"content": f"x {secret} y"}).encode()], list(planted))
