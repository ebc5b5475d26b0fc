"""The inspector over the real audit store, on a SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import AUTH, settings
from .asgi import asgi_client

pytestmark = pytest.mark.anyio


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
async def client(url: str) -> AsyncIterator[httpx.AsyncClient]:
    store = RunStore.open(url, privacy=PrivacyLevel.METADATA)
    app = create_app(settings(store=store, privacy_level="metadata"))
    async with asgi_client(app) as c:
        yield c


async def test_a_run_is_stored_privacy_filtered_and_shown_as_stored(
    client: httpx.AsyncClient,
) -> None:
    done = (await client.post("/api/runs", json={"prompt": "orders?"}, headers=AUTH)).json()
    run_id = done["context"]["run_id"]
    assert done["context"]["privacy_level"] == "metadata"
    listed = (await client.get("/api/runs", headers=AUTH)).json()
    assert listed["stored"] is True
    assert [(r["id"], r["status"], r["step_count"]) for r in listed["runs"]] == [
        (run_id, "completed", 5)
    ]
    shown = (await client.get(f"/api/runs/{run_id}", headers=AUTH)).json()
    tool = shown["steps"][2]
    assert (tool["sequence"], tool["kind"], tool["content_withheld"]) == (3, "tool", True)
    assert "tool_result" not in tool and "tool_artifacts" not in tool
    assert "Ada" not in str(shown["steps"])


async def test_an_unknown_stored_run_is_a_404(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/runs/" + "0" * 32, headers=AUTH)
    assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found")


async def test_tool_states_persist_across_a_restart(client: httpx.AsyncClient, url: str) -> None:
    await client.put("/api/tools/dormant", json={"enabled": True}, headers=AUTH)
    await client.put("/api/groups/files", json={"enabled": False}, headers=AUTH)
    app = create_app(settings(store=RunStore.open(url)))
    async with asgi_client(app) as again:
        tools = (await again.get("/api/tools", headers=AUTH)).json()
    rows = {t["name"]: (t["tool_enabled"], t["enabled"]) for t in tools["tools"]}
    assert rows["dormant"] == (True, False)
    assert {g["name"]: g["enabled"] for g in tools["groups"]}["files"] is False


async def test_direct_calls_are_audited_as_one_step_runs(client: httpx.AsyncClient) -> None:
    done = (
        await client.post("/api/tools/lookup/invoke", json={"arguments": {"customer": "Ada"}},
                          headers=AUTH)
    ).json()  # fmt: skip
    refused = (await client.post("/api/tools/dormant/invoke", json={}, headers=AUTH)).json()
    assert done["run_id"] and refused["run_id"] and refused["refused"]["reason"] == "disabled"
    runs = {r["id"]: r for r in (await client.get("/api/runs", headers=AUTH)).json()["runs"]}
    for result, is_error, status in ((done, False, "completed"), (refused, True, "refused")):
        run = runs[result["run_id"]]
        assert (run["provider"], run["status"], run["step_count"]) == ("direct call", status, 1)
        (step,) = (await client.get(f"/api/runs/{result['run_id']}", headers=AUTH)).json()["steps"]
        assert (step["kind"], step["tool_is_error"], step["content_withheld"]) == (
            "tool", is_error, True
        )  # fmt: skip
    stored = (await client.get(f"/api/runs/{done['run_id']}", headers=AUTH)).json()
    assert "Ada" not in str(stored)  # metadata level: the call's content is withheld
