"""A host's call of a tool that needs an operator: it waits as a one-step run in the store, an
operator decides it from another runtime or the inspector's API, and the host gets the answer."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import mcp_types as types
import pytest

from toolwire.held import CallAnswer
from toolwire.inspector import InspectorSettings, create_app
from toolwire.inspector.settings import scripted_factory
from toolwire.lifecycle import RunStatus
from toolwire.mcp.serve import ServedTools
from toolwire.runtime import Runtime
from toolwire.seam import denied, nobody_to_decide, not_decided_in_time
from toolwire.tools.api import ToolContext, User
from toolwire.tools.defaults import default_registry
from toolwire.workspace import load_workspace

from .inspector_kit import live_server
from .mcp_serve_kit import KEY, Host, decide, prepared_demo, status_of, waiting_run

TEXT = "written by a host\n"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepared_demo(tmp_path_factory.mktemp("mcp-demo"))


@pytest.fixture
def host(tmp_path: Path, demo: Path) -> Host:
    return Host.make(tmp_path, demo)


def write(path: str) -> dict[str, object]:
    return {"path": path, "text": TEXT}


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

            group.start_soon(operator)
            result = await session.call_tool("write_file", write("notes/approved.md"))
        return result, decided[0]

    result, run_id = anyio.run(scenario)
    assert text_of(result) == ("wrote notes/approved.md: 18 bytes, 1 lines.", False)
    assert target.read_text() == TEXT
    with host.store() as store:
        run = store.get_run(run_id)
    assert run is not None and run.status == "completed"
    assert [s["kind"] for s in run.steps] == ["decision", "tool"]


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

    assert text_of(anyio.run(scenario)) == (not_decided_in_time("write_file", 1), True)
    with host.store() as store:
        (run,) = store.list_runs()
    assert run.status == "cancelled"
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


def test_without_a_store_a_call_that_needs_an_operator_is_refused(demo: Path) -> None:
    served = ServedTools(
        runtime=Runtime(default_registry()),
        context=ToolContext(user=User("mcp"), workspace=load_workspace(demo / "workspace.toml")),
    )

    async def scenario() -> CallAnswer:
        return await served.answer("write_file", write("notes/unstored.md"))

    assert anyio.run(scenario) == CallAnswer(content=nobody_to_decide("write_file"), is_error=True)
    assert not (demo / "files" / "notes" / "unstored.md").exists()
