"""A host's call of a tool that needs an operator: it waits as a one-step run in the store, an
operator decides it from another runtime or the inspector's API, and the host gets the answer."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import httpx
import mcp_types as types
import pytest

from toolwire.core.errors import RunNotWaiting
from toolwire.core.lifecycle import RunStatus
from toolwire.inspector import InspectorSettings, create_app
from toolwire.inspector.settings import scripted_factory
from toolwire.loop.seam import denied, not_decided_in_time
from toolwire.mcp.serve import waiting_message
from toolwire.store.runs import CALLER_GONE
from toolwire.tools.defaults import default_registry
from toolwire.workspace.config import load_workspace

from ..inspector_kit import live_server
from .kit import (
    KEY,
    Host,
    decide,
    handshake_and,
    status_of,
    tool_call,
    waiting_run,
)

TEXT = "written by a host\n"


def write(path: str) -> dict[str, object]:
    return {"path": path, "text": TEXT}


@contextmanager
def held_write(host: Host, path: str) -> Iterator[subprocess.Popen[bytes]]:
    """``toolwire mcp`` over raw stdio, sent a handshake and a call of ``write_file`` that waits
    for an operator; its pipes closed (and it killed, if still running) afterwards."""
    process = subprocess.Popen(host.command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, env=host.env)  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    for message in handshake_and(tool_call("write_file", write(path))):
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
        process.stdout.close()


def text_of(result: types.CallToolResult) -> tuple[str, bool | None]:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text, result.is_error


def test_an_approved_write_waits_runs_and_answers_the_host(host: Host) -> None:
    target = host.demo / "files" / "notes" / "approved.md"

    async def scenario() -> tuple[types.CallToolResult, str]:
        async with host.session() as session, anyio.create_task_group() as group:
            decided: list[str] = []

            async def operator() -> None:
                await anyio.sleep(0.3)
                assert not target.exists()  # nothing ran before the decision
                decided.append(await decide(host, "approve"))

            async def heard(progress: float, total: float | None, message: str | None) -> None:
                reports.append((progress, message))

            group.start_soon(operator)
            result = await session.call_tool("write_file", write("notes/approved.md"),
                                             progress_callback=heard)  # fmt: skip
        return result, decided[0]

    reports: list[tuple[float, str | None]] = []
    result, run_id = anyio.run(scenario)
    assert reports[0] == (0.0, waiting_message(run_id))  # the host hears it waits, and where
    assert text_of(result) == ("wrote notes/approved.md: 18 bytes, 1 lines.", False)
    assert target.read_text() == TEXT
    with host.store() as store:
        run = store.get_run(run_id)
    assert run is not None and run.status == "completed"
    assert [s["kind"] for s in run.steps] == ["decision", "tool"]


def test_an_operator_approves_from_the_command_line_in_another_process(host: Host) -> None:
    target = host.demo / "files" / "notes" / "by-cli.md"

    async def operator() -> subprocess.CompletedProcess[str]:
        with host.store() as store:
            run_id = await waiting_run(store)
        command = [sys.executable, "-m", "toolwire", "runs", "approve", run_id, "--reason", "ok"]

        def approve() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                command, capture_output=True, text=True, env=host.env, timeout=60, check=False
            )

        return await anyio.to_thread.run_sync(approve)

    async def scenario() -> tuple[types.CallToolResult, subprocess.CompletedProcess[str]]:
        done: list[subprocess.CompletedProcess[str]] = []
        async with host.session() as session, anyio.create_task_group() as group:

            async def approve() -> None:
                done.append(await operator())

            group.start_soon(approve)
            result = await session.call_tool("write_file", write("notes/by-cli.md"))
        return result, done[0]

    result, approved = anyio.run(scenario)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert text_of(result) == ("wrote notes/by-cli.md: 18 bytes, 1 lines.", False)
    assert target.read_text() == TEXT


def test_a_denied_write_never_runs_and_the_host_reads_why(host: Host) -> None:
    async def scenario() -> types.CallToolResult:
        async with host.session() as session, anyio.create_task_group() as group:
            group.start_soon(decide, host, "deny")
            result = await session.call_tool("write_file", write("notes/denied.md"))
        return result

    assert text_of(anyio.run(scenario)) == (denied("write_file"), True)
    assert not (host.demo / "files" / "notes" / "denied.md").exists()


def test_an_undecided_write_times_out_and_its_run_is_cancelled(host: Host) -> None:
    async def scenario() -> types.CallToolResult:
        async with host.session("--approval-timeout", "1") as session:
            return await session.call_tool("write_file", write("notes/late.md"))

    text = not_decided_in_time("write_file", 1)
    assert text_of(anyio.run(scenario)) == (text, True)
    with host.store() as store:
        (run,) = store.list_runs()
        stored = store.get_run(run.id)
        audit = [(r.gate, r.reason, r.actor, r.tool) for r in store.list_gate_decisions()]
    assert run.status == "cancelled"
    assert stored is not None
    ended = [(s["tool_name"], s["tool_is_error"], s["tool_refused"])
             for s in stored.steps if s["kind"] == "tool"]  # fmt: skip
    assert ended == [("write_file", True, "not_decided")]  # its text is content: not kept here
    assert audit == [("call", "not_decided", "runtime", "write_file")]
    assert not (host.demo / "files" / "notes" / "late.md").exists()


def test_the_inspector_approves_a_hosts_call_from_its_api(host: Host) -> None:
    target = host.demo / "files" / "notes" / "inspected.md"
    with host.store() as store:
        registry = default_registry()
        settings = InspectorSettings(
            registry=registry, provider_factory=scripted_factory(None), store=store,
            state_key=KEY, workspace=load_workspace(host.demo / "workspace.toml"),
        )  # fmt: skip
        with live_server(create_app(settings)) as base:
            api = {"Authorization": f"Bearer {settings.token}"}

            async def operator() -> list[dict[str, object]]:
                run_id = await waiting_run(store)
                async with httpx.AsyncClient(base_url=base + "/api", headers=api) as client:
                    pending = (await client.get(f"/runs/{run_id}/pending")).json()
                    assert pending["calls"][0]["name"] == "write_file"
                    (preview,) = pending["previews"]
                    assert preview["lines"][0] == "new file notes/inspected.md, 1 lines"
                    body = {"action": "approve", "digest": pending["digest"]}
                    answer = await client.post(f"/runs/{run_id}/decision", json=body)
                    return [json.loads(line) for line in answer.text.splitlines()]

            async def scenario() -> tuple[types.CallToolResult, list[dict[str, object]]]:
                events: list[list[dict[str, object]]] = []
                async with host.session() as session, anyio.create_task_group() as group:

                    async def run_operator() -> None:
                        events.append(await operator())

                    group.start_soon(run_operator)
                    result = await session.call_tool("write_file", write("notes/inspected.md"))
                return result, events[0]

            result, events = anyio.run(scenario)
    assert text_of(result) == ("wrote notes/inspected.md: 18 bytes, 1 lines.", False)
    assert target.read_text() == TEXT
    assert [e["type"] for e in events] == ["context", "step", "step", "end"]
    assert events[-1]["status"] == "completed"


def test_a_host_that_cancels_its_call_cancels_the_waiting_run(host: Host) -> None:
    async def scenario() -> list[str]:
        async with host.session() as session:
            with anyio.move_on_after(1.5):
                await session.call_tool("write_file", write("notes/abandoned.md"))
            with host.store() as store:
                (run,) = store.list_runs()
            await status_of(host, str(run.id), RunStatus.CANCELLED)  # the session is still open
            return [t.name for t in (await session.list_tools()).tools]

    assert "write_file" in anyio.run(scenario)  # the server serves on
    assert not (host.demo / "files" / "notes" / "abandoned.md").exists()


def test_a_server_stopped_by_a_signal_cancels_its_waiting_call_first(host: Host) -> None:
    with held_write(host, "notes/stopped.md") as process, host.store() as store:
        run_id = anyio.run(waiting_run, store)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == -signal.SIGTERM
        run = store.get_run(run_id)
    assert run is not None and run.status == "cancelled"
    assert not (host.demo / "files" / "notes" / "stopped.md").exists()


def test_a_call_whose_server_was_killed_can_no_longer_be_decided(host: Host) -> None:
    with held_write(host, "notes/orphan.md") as process, host.store() as store:
        run_id = anyio.run(waiting_run, store)
        process.kill()  # no cleanup: the held call's caller is simply gone
        process.wait()
        with pytest.raises(RunNotWaiting):
            host.decider(store).pending(run_id)
        run = store.get_run(run_id)
    assert run is not None and (run.status, run.error) == ("interrupted", CALLER_GONE)
    assert not (host.demo / "files" / "notes" / "orphan.md").exists()
