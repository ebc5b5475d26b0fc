"""Waiting runs over the API: the pending turn, decisions streamed as resumed segments, and
every refusal answered before a stream starts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from toolwire.core.jsonenc import loads
from toolwire.core.sealing import StateKey
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import AUTH, WRITES, settings, waiting_registry
from ..store.conftest import POSTGRESQL, pg_schema
from .asgi import asgi_client

__all__ = ["pg_schema"]  # a fixture: a fresh PostgreSQL schema per test

DENIED = 'Error: tool "write_note" was denied by the operator.'
pytestmark = pytest.mark.anyio


@pytest.fixture
def app() -> FastAPI:
    return create_app(settings(registry=waiting_registry(), state_key=StateKey.generate()))


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(app) as c:
        yield c


def lines(body: bytes) -> list[dict[str, Any]]:
    return [loads(line) for line in body.split(b"\n") if line.strip()]


async def start(client: httpx.AsyncClient, provider: str) -> dict[str, Any]:
    response = await client.post("/api/runs/stream", json={"prompt": "x", "provider": provider},
                                 headers=AUTH)  # fmt: skip
    assert response.status_code == 200
    return lines(response.content)[-1]


async def decide(client: httpx.AsyncClient, run_id: str, **body: Any) -> httpx.Response:
    return await client.post(f"/api/runs/{run_id}/decision", json=body, headers=AUTH)


async def test_an_approved_write_runs_and_the_run_completes(client: httpx.AsyncClient) -> None:
    before = len(WRITES)
    end = await start(client, "approve")
    assert (end["type"], end["status"]) == ("end", "awaiting_approval")
    pending = end["pending"]
    assert [c["name"] for c in pending["calls"]] == ["write_note"]
    assert pending["previews"] == [
        {"index": 0, "tool": "write_note", "lines": ["write notes/a.md", "+ one", "+ two"],
         "failed": False, "checked": False}
    ]  # fmt: skip
    assert len(WRITES) == before
    shown = await client.get(f"/api/runs/{end['run_id']}/pending", headers=AUTH)
    assert shown.status_code == 200 and shown.json() == pending

    response = await decide(client, end["run_id"], action="approve", digest=pending["digest"])
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson; charset=utf-8"
    events = lines(response.content)
    assert [e.get("text") or e["type"] for e in events] == [
        "context", "step", "step", "step", "The note is written.", "step", "egress", "end"
    ]  # fmt: skip
    context, finished = events[0], events[-1]
    assert (context["run_id"], context["resumed"], context["provider"]) == (
        end["run_id"], True, "approve"
    )  # fmt: skip
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert [s["kind"] for s in steps] == ["decision", "tool", "request", "llm"]
    assert (steps[0]["decision"], steps[0]["decided_by"]) == ("approve", "admin")
    assert steps[1]["tool_result"] == "wrote 7 characters to notes/a.md"
    assert (finished["status"], finished["final_content"]) == ("completed", "The note is written.")
    assert WRITES[before:] == ["notes/a.md: one\ntwo"]
    gone = await client.get(f"/api/runs/{end['run_id']}/pending", headers=AUTH)
    assert gone.status_code == 404


async def test_a_denied_write_never_runs_and_the_model_reads_the_denial(
    client: httpx.AsyncClient,
) -> None:
    before = len(WRITES)
    end = await start(client, "approve")
    response = await decide(client, end["run_id"], action="deny",
                            digest=end["pending"]["digest"], reason="not today")  # fmt: skip
    steps = [e["step"] for e in lines(response.content) if e["type"] == "step"]
    assert (steps[0]["decision"], steps[0]["decision_reason"]) == ("deny", "not today")
    tool = next(s for s in steps if s["kind"] == "tool")
    assert (tool["tool_result"], tool["tool_is_error"]) == (DENIED, True)
    assert len(WRITES) == before


async def test_a_stale_digest_is_a_409_before_any_stream_and_the_run_still_waits(
    client: httpx.AsyncClient,
) -> None:
    end = await start(client, "approve")
    response = await decide(client, end["run_id"], action="approve", digest="0" * 32)
    assert response.status_code == 409
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"error": {
        "code": "stale_decision",
        "message": "the decision was made on another turn than the one pending",
    }}  # fmt: skip
    again = await decide(client, end["run_id"], action="approve", digest=end["pending"]["digest"])
    assert lines(again.content)[-1]["status"] == "completed"


async def test_a_second_decision_on_the_same_turn_is_refused(client: httpx.AsyncClient) -> None:
    end = await start(client, "approve")
    digest = end["pending"]["digest"]
    first = await decide(client, end["run_id"], action="approve", digest=digest)
    assert first.status_code == 200
    second = await decide(client, end["run_id"], action="deny", digest=digest)
    assert (second.status_code, second.json()["error"]["message"]) == (
        404, "no waiting run has this id"
    )  # fmt: skip


async def test_input_that_does_not_fit_is_a_422_and_the_form_can_be_sent_again(
    client: httpx.AsyncClient,
) -> None:
    end = await start(client, "ask")
    pending = end["pending"]
    assert (end["status"], pending["input_tool"]) == ("awaiting_input", "book_trip")
    schema = pending["input_schema"]
    assert schema["properties"]["city"]["title"] == "City"
    assert schema["properties"]["nights"]["type"] == "integer"
    bad = await decide(client, end["run_id"], action="input", digest=pending["digest"],
                       values={"city": "X", "nights": 0})  # fmt: skip
    assert bad.status_code == 422
    message = bad.json()["error"]["message"]
    assert message.startswith("the input does not fit: ")
    assert "city" in message and "nights" in message
    good = await decide(client, end["run_id"], action="input", digest=pending["digest"],
                        values={"city": "Oslo", "nights": 3, "window": True})  # fmt: skip
    events = lines(good.content)
    tool = next(e["step"] for e in events if e["type"] == "step" and e["step"]["kind"] == "tool")
    assert tool["tool_result"] == "booked 3 nights in Oslo, window seat"
    assert (events[-1]["status"], events[-1]["final_content"]) == (
        "completed", "The trip is booked."
    )  # fmt: skip


async def test_the_wrong_kind_of_decision_is_refused(client: httpx.AsyncClient) -> None:
    end = await start(client, "ask")
    response = await decide(client, end["run_id"], action="approve",
                            digest=end["pending"]["digest"])  # fmt: skip
    assert (response.status_code, response.json()["error"]["message"]) == (
        404, "this run waits for input, not approve"
    )  # fmt: skip


async def test_unknown_runs_are_404_and_bodies_are_strict(client: httpx.AsyncClient) -> None:
    for response in (
        await client.get("/api/runs/nope/pending", headers=AUTH),
        await decide(client, "nope", action="approve", digest="ab"),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["message"] == "no waiting run has this id"
    end = await start(client, "approve")
    digest = end["pending"]["digest"]
    for body in (
        {"action": "approve", "digest": digest, "extra": 1},
        {"action": "maybe", "digest": digest},
        {"action": "approve", "digest": "<script>"},
        {"action": "approve", "digest": digest, "reason": "x" * 2001},
        {"action": "input", "digest": digest, "values": "city"},
    ):
        response = await decide(client, end["run_id"], **body)
        assert response.status_code == 422, body
        assert response.json()["error"]["code"] == "invalid_input"
    assert (await client.get(f"/api/runs/{end['run_id']}/pending", headers=AUTH)).status_code == 200


async def test_a_state_sealed_with_another_key_is_a_clear_409(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    end = await start(client, "approve")
    app.state.runtime.state_key = StateKey.generate()
    for response in (
        await client.get(f"/api/runs/{end['run_id']}/pending", headers=AUTH),
        await decide(client, end["run_id"], action="approve", digest=end["pending"]["digest"]),
    ):
        assert response.status_code == 409
        error = response.json()["error"]
        assert error["code"] == "state"
        assert error["message"].startswith("the run's suspended state cannot be read: ")


async def test_without_a_state_key_a_write_fails_the_run_clearly() -> None:
    app = create_app(settings(registry=waiting_registry()))
    async with asgi_client(app) as client:
        end = await start(client, "approve")
    assert end["status"] == "failed"
    assert end["message"].startswith("the run could not be suspended: ")


async def test_a_waiting_run_can_be_cancelled(client: httpx.AsyncClient) -> None:
    end = await start(client, "approve")
    response = await client.post(f"/api/runs/{end['run_id']}/cancel", headers=AUTH)
    assert response.json() == {"run_id": end["run_id"], "cancelling": True,
                               "where": "this_process"}  # fmt: skip
    after = await decide(client, end["run_id"], action="approve", digest=end["pending"]["digest"])
    assert after.status_code == 404


@pytest.fixture(params=["sqlite", POSTGRESQL])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    url: str = request.getfixturevalue("pg_schema")
    return url


async def test_the_store_lists_waiting_runs_and_resumes_them(store_url: str) -> None:
    store = RunStore.open(store_url, privacy=PrivacyLevel.METADATA)
    key = StateKey.generate()
    app = create_app(settings(registry=waiting_registry(), store=store, state_key=key))
    async with asgi_client(app) as client:
        waiting = await start(client, "approve")
        done = await start(client, "scripted")
        everything = (await client.get("/api/runs", headers=AUTH)).json()["runs"]
        only = (await client.get("/api/runs?waiting=true", headers=AUTH)).json()["runs"]
        assert {r["id"] for r in everything} == {waiting["run_id"], done["run_id"]}
        assert [(r["id"], r["status"]) for r in only] == [(waiting["run_id"], "awaiting_approval")]
        response = await decide(client, waiting["run_id"], action="approve",
                                digest=waiting["pending"]["digest"])  # fmt: skip
        assert lines(response.content)[-1]["status"] == "completed"
        stored = (await client.get(f"/api/runs/{waiting['run_id']}", headers=AUTH)).json()
        cancelled = await client.post(f"/api/runs/{done['run_id']}/cancel", headers=AUTH)
    store.close()
    assert stored["status"] == "completed"
    assert [s["kind"] for s in stored["steps"]] == [
        "request", "llm", "decision", "tool", "request", "llm"
    ]  # fmt: skip
    assert cancelled.status_code == 404
