"""Remote tools where people meet them: ``toolwire tools``, ``toolwire run``, the inspector API."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

import toolwire.cli.run  # noqa: F401  (registers the commands)
from toolwire.cli.app import app
from toolwire.cli.serve import build_settings
from toolwire.inspector import InspectorSettings, create_app

runner = CliRunner(env={"COLUMNS": "200"})
TIME = """
[mcp_servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "Etc/UTC"]
data_class = "public"
"""
GHOST = """
[mcp_servers.ghost]
command = "/no/such/mcp-server"
"""
SCRIPT = """
turns:
  - tool_calls: [{name: time__get_current_time, arguments: {timezone: Etc/UTC}}]
  - content: "It is late."
"""


def files(folder: Path, toml: str) -> tuple[Path, Path]:
    (folder / "w.toml").write_text(toml)
    (folder / "s.yaml").write_text(SCRIPT)
    return folder / "w.toml", folder / "s.yaml"


def rows(output: str) -> list[str]:
    return [" ".join(line.replace("│", " ").replace("┃", " ").split())
            for line in output.splitlines()]  # fmt: skip


def test_tools_lists_remote_tools_with_their_server(tmp_path: Path) -> None:
    workspace, _ = files(tmp_path, TIME + GHOST)
    listed = runner.invoke(
        app, ["tools", "--workspace", str(workspace), "--db", str(tmp_path / "none.db")]
    )
    assert listed.exit_code == 0, listed.output
    table = rows(listed.stdout)
    assert "TOOL GROUP SERVER STATE WHY DATA_CLASS DESCRIPTION" in table
    assert any(row.startswith("time__get_current_time mcp:time time disabled default, admin "
                              "only ") for row in table), table  # fmt: skip
    assert any(row.startswith("read_records records - enabled default content ")
               for row in table)  # built-ins have no server  # fmt: skip
    # A server that cannot start is a warning naming it; the others are listed all the same.
    assert listed.stderr.startswith('warning: MCP server "ghost": no tools: ghost: ')
    as_json = runner.invoke(app, ["tools", "--workspace", str(workspace), "--json"])
    entry = next(t for t in json.loads(as_json.stdout) if t["name"] == "time__convert_time")
    assert entry | {"description": ""} == {"name": "time__convert_time", "group": "mcp:time",
                     "enabled": False, "why": "default", "admin_only": True, "server": "time",
                     "data_class": entry["data_class"], "description": ""}  # fmt: skip


def test_a_bad_workspace_for_tools_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "w.toml").write_text('[mcp_servers."a b"]\ncommand = "x"\n')
    listed = runner.invoke(app, ["tools", "--workspace", str(tmp_path / "w.toml")])
    assert listed.exit_code == 1
    assert "mcp_servers.a b: a server name is 1 to 32" in listed.stderr
    assert "Traceback" not in listed.output


def test_run_calls_a_remote_tool_and_starts_no_server_it_cannot_offer(tmp_path: Path) -> None:
    workspace, script = files(tmp_path, TIME + "enabled = true\n" + GHOST)
    args = [
        "run",
        "--workspace",
        str(workspace),
        "--script",
        str(script),
        "--db",
        str(tmp_path / "r.db"),
    ]
    done = runner.invoke(app, [*args, "--admin", "what time?"])
    assert done.exit_code == 0, done.output
    assert "tool time__get_current_time ok" in done.stdout and "1 artifacts" in done.stdout
    assert "It is late." in done.stdout.splitlines()
    assert "ghost" not in done.output  # off, never switched on: not started for a run
    # Not an admin: the tool is not offered, and the model's call is refused.
    refused = runner.invoke(app, [*args, "what time?"])
    assert "tool time__get_current_time error" in refused.stdout
    assert 'Error: tool "time__get_current_time" not permitted' in refused.stdout


def test_run_names_a_remote_tool_that_does_not_exist(tmp_path: Path) -> None:
    workspace, script = files(tmp_path, TIME)
    args = ["run", "--workspace", str(workspace), "--script", str(script), "--db",
            str(tmp_path / "none.db"), "--tool", "time__get_time", "q"]  # fmt: skip
    done = runner.invoke(app, args)
    assert done.exit_code == 1
    assert done.stderr == (
        "error: no tool is named 'time__get_time'; "
        "did you mean time__convert_time, time__get_current_time?\n"
    )


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_inspector_lists_a_remote_tool_and_calls_it_directly(
    tmp_path: Path, anyio_backend: str
) -> None:
    workspace, _ = files(tmp_path, TIME)
    settings = build_settings(None, None, workspace=workspace, key_folder=tmp_path)
    transport = httpx.ASGITransport(create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        listed = (await client.get("/api/tools", headers=token(settings))).json()
        row = next(t for t in listed["tools"] if t["name"] == "time__get_current_time")
        assert (row["server"], row["group"], row["enabled"]) == ("time", "mcp:time", False)
        assert row["parameters"]["required"] == ["timezone"]
        assert {"name": "mcp:time", "enabled": True, "overridden": False} in listed["groups"]
        call = "/api/tools/time__get_current_time/invoke"
        body = {"arguments": {"timezone": "Etc/UTC"}}
        refused = (await client.post(call, json=body, headers=token(settings))).json()
        assert refused["refused"]["reason"] == "disabled"
        on = {"enabled": True}
        await client.put("/api/tools/time__get_current_time", json=on, headers=token(settings))
        called = (await client.post(call, json=body, headers=token(settings))).json()
    assert called["is_error"] is False and called["refused"] is None
    assert json.loads(called["content"])["timezone"] == "Etc/UTC"
    (kv,) = called["artifacts"]
    assert kv["type"] == "key_value" and ["timezone", "Etc/UTC"] in kv["data"]["items"]


def token(settings: InspectorSettings) -> dict[str, str]:
    return {"Authorization": f"Bearer {settings.token}"}


def test_approving_from_the_command_line_runs_a_pending_remote_call(tmp_path: Path) -> None:
    """A turn pausing on a write also holds a remote call: ``toolwire runs approve`` in a new
    process loads the run's workspace's servers, so the remote call runs there too."""
    import os
    import subprocess
    import sys

    from toolwire.demo._content import write_database
    from toolwire.store import RunStore

    database = tmp_path / "shop.sqlite"
    write_database(database)
    workspace = tmp_path / "w.toml"
    workspace.write_text(f'database_url = "sqlite:///{database}"\n' + TIME + "enabled = true\n")
    script = tmp_path / "s.yaml"
    script.write_text(
        "turns:\n"
        "  - tool_calls:\n"
        "      - {name: update_record, arguments: {table: products, id: 1, values: {stock: 7}}}\n"
        "      - {name: time__get_current_time, arguments: {timezone: Etc/UTC}}\n"
        "  - content: Done.\n"
    )
    db = str(tmp_path / "runs.db")
    with RunStore.open(db) as store:
        store.set_tool_state("update_record", True)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "COLUMNS")},
        "TOOLWIRE_STATE_KEY": "cd" * 32,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "200",
    }

    def tw(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "toolwire", *args], capture_output=True,
                              text=True, timeout=90, check=False, env=env)  # fmt: skip

    paused = tw("run", "--workspace", str(workspace), "--script", str(script), "--db", db,
                "--admin", "restock")  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    run_id = next(
        line.split()[6] for line in paused.stdout.splitlines() if line.startswith("resume it with")
    )
    approved = tw("runs", "approve", run_id, "--db", db)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "tool time__get_current_time ok" in approved.stdout
    assert "unknown tool" not in approved.stdout
    with RunStore.open(db) as store:
        stored = store.get_run(run_id)
    assert stored is not None and stored.status == "completed"
    calls = [(s["tool_name"], s["tool_is_error"]) for s in stored.steps if s["kind"] == "tool"]
    assert calls == [("update_record", False), ("time__get_current_time", False)]
