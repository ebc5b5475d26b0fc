"""``GET /api/audit``: the governance log over the real store, behind the token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel, tool_name
from toolwire.store import RunStore

from ..governed import EXPECTED, governed_run
from ..inspector_kit import AUTH, settings
from .asgi import asgi_client

pytestmark = pytest.mark.anyio
SCRIPTS = {"strays": [{"tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
                      {"content": "ok"}]}  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}", privacy=PrivacyLevel.METADATA)


@pytest.fixture
async def client(store: RunStore) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings(store=store, privacy_level="metadata", scripts=SCRIPTS))
    async with asgi_client(app) as c:
        yield c


async def audit(client: httpx.AsyncClient, **params: str | int) -> httpx.Response:
    return await client.get("/api/audit", params=params, headers=AUTH)


async def test_the_log_lists_each_decision_of_a_scripted_run(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    _, ended = await asyncio.to_thread(governed_run, store)
    body = (await audit(client)).json()
    assert body["stored"] is True
    rows = [(d["gate"], d["reason"], d["actor"], d["tool"]) for d in reversed(body["decisions"])]
    assert rows == EXPECTED
    assert {d["run_id"] for d in body["decisions"]} == {ended.run_id}
    assert set(body["decisions"][0]) == {
        "run_id", "sequence", "at", "round", "gate", "reason", "actor", "tool", "detail", "count",
    }  # fmt: skip


async def test_filters_narrow_the_log(client: httpx.AsyncClient, store: RunStore) -> None:
    _, ended = await asyncio.to_thread(governed_run, store)
    found = (await audit(client, tool="delete_row", reason="denied", since="1h")).json()
    assert [(d["gate"], d["actor"]) for d in found["decisions"]] == [("call", "ann")]
    by_run = (await audit(client, run_id=ended.run_id, limit=3, offset=1)).json()
    assert [d["reason"] for d in by_run["decisions"]] == ["denied", "denied", "not_an_object"]
    assert (await audit(client, since="2999-01-01T00:00:00Z")).json()["decisions"] == []


async def test_a_run_made_through_the_api_is_in_the_log(client: httpx.AsyncClient) -> None:
    done = await client.post("/api/runs", json={"prompt": "go", "provider": "strays"},
                             headers=AUTH)  # fmt: skip
    run_id = done.json()["context"]["run_id"]
    (row,) = (await audit(client, run_id=run_id)).json()["decisions"]
    assert (row["gate"], row["reason"], row["tool"], row["round"]) == (
        "call", "unknown_tool", tool_name("no_such_tool", frozenset()), 1,
    )  # fmt: skip


async def test_a_time_it_cannot_read_is_a_422_naming_it(client: httpx.AsyncClient) -> None:
    response = await audit(client, since="last tuesday")
    assert response.status_code == 422
    assert response.json()["error"] == {
        "code": "invalid_input",
        "message": "since: 'last tuesday' is neither a duration (30m, 12h, 7d, 2w) nor an "
        "ISO 8601 date or time",
    }
    assert (await audit(client, since="9999999w")).status_code == 422
    assert (await audit(client, limit=0)).status_code == 422
    assert (await audit(client, run_id="a b")).status_code == 422


async def test_the_log_needs_the_token(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/audit")
    assert response.status_code == 401


async def test_without_a_store_there_is_no_log() -> None:
    app = create_app(settings())
    async with asgi_client(app) as c:
        body = (await c.get("/api/audit", headers=AUTH)).json()
    assert body == {"decisions": [], "stored": False}
