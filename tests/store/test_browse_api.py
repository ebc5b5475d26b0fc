"""The stored-runs API over the real store, on SQLite and PostgreSQL: pages, filters, sorts,
search, export and re-run."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from toolwire.core.sealing import StateKey
from toolwire.inspector import create_app
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore
from toolwire.store.export import SCHEMA, SCHEMA_VERSION

from ..inspector_kit import AUTH, registry, settings, write_note
from .conftest import Backend

pytestmark = pytest.mark.anyio
BASE = "http://127.0.0.1:8765"
SCRIPTS = {
    "echoing": [{"tool_calls": [{"name": "echo", "arguments": {"text": "marmalade sky"}}]},
                {"content": "Echoed the sky.", "prompt_tokens": 50, "completion_tokens": 9}],
    "failing": [{"tool_calls": [{"name": "boom", "arguments": {}}]}, {"content": "It broke."}],
}  # fmt: skip
Client = Callable[[PrivacyLevel], Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def open_client(backend: Backend) -> AsyncIterator[Client]:
    clients: list[httpx.AsyncClient] = []

    def make(level: PrivacyLevel) -> httpx.AsyncClient:
        store: RunStore = backend.open(level)
        tools = registry()
        tools.register(write_note)
        app = create_app(settings(store=store, privacy_level=str(level), scripts=SCRIPTS,
                                  state_key=StateKey.generate(), registry=tools))  # fmt: skip
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


async def start(client: httpx.AsyncClient, provider: str = "scripted", **body: Any) -> str:
    answer = await client.post(
        "/api/runs", json={"prompt": "orders?", "provider": provider, **body}, headers=AUTH
    )
    assert answer.status_code == 200, answer.text
    run_id: str = answer.json()["context"]["run_id"]
    return run_id


async def listed(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    answer = await client.get("/api/runs", params=params, headers=AUTH)
    assert answer.status_code == 200, answer.text
    page: dict[str, Any] = answer.json()
    return page


async def ids(client: httpx.AsyncClient, **params: Any) -> list[str]:
    return [r["id"] for r in (await listed(client, **params))["runs"]]


async def test_pages_filters_and_sorts(open_client: Client) -> None:
    client = open_client(PrivacyLevel.METADATA)
    ada = await start(client)
    sky = await start(client, "echoing", max_rounds=3)
    broke = await start(client, "failing", allowed_tools=["boom"])
    assert await ids(client) == [broke, sky, ada]
    page = await listed(client, limit=1, offset=1)
    assert ([r["id"] for r in page["runs"]], page["total"], page["limit"], page["offset"]) == (
        [sky],
        3,
        1,
        1,
    )
    assert await ids(client, tool="echo") == [sky]
    assert await ids(client, tool="lookup") == [ada]
    assert await ids(client, has_error="true") == [broke]
    assert await ids(client, provider="echoing") == [sky]
    assert await ids(client, status=["completed", "failed"]) == [broke, sky, ada]
    assert await ids(client, status="awaiting_input") == []
    assert await ids(client, sort="tokens") == [sky, ada, broke]
    assert await ids(client, sort="tokens", order="asc") == [broke, ada, sky]
    assert await ids(client, since="2000-01-01", until="2999-01-01") == [broke, sky, ada]
    assert await ids(client, since="1h") == [broke, sky, ada]  # a duration, as the CLI reads it
    assert await ids(client, until="1h") == []
    assert await ids(client, until="2000-01-01T00:00:00+02:00") == []
    assert await ids(client, privacy_level="metadata") == [broke, sky, ada]
    first = (await listed(client, provider="echoing"))["runs"][0]
    assert first["options"]["max_rounds"] == 3 and first["tool_errors"] == 0
    assert first["prompt_preview"] is None  # metadata keeps no message


async def test_search_covers_what_the_level_kept(open_client: Client) -> None:
    metadata, full = open_client(PrivacyLevel.METADATA), open_client(PrivacyLevel.FULL)
    kept = await start(full, "echoing")
    await start(metadata, "echoing")  # the same store: two levels, two runs
    assert await ids(full, q="marmalade") == [kept]  # the arguments and result: full only
    assert await ids(full, q="MARMA sky") == [kept]
    assert len(await ids(full, q="echo")) == 2  # the tool's name is kept at every level
    # Markup in a query is words like any other, and these are in no run (a scripted run's
    # steps name their model, "scripted", which "<script>" would find as a prefix).
    assert await ids(full, q="<blink>") == []


async def test_bad_parameters_are_clear_422s(open_client: Client) -> None:
    client = open_client(PrivacyLevel.METADATA)
    cases = {
        "sort=price": "sort",
        "status=done": "unknown status 'done'",
        "since=yesterday": "since",
        "until=2024-13-45": "until: '2024-13-45' is neither a duration (30m, 12h, 7d, 2w) nor",
        "since=30": "since: '30' has no unit: write 30d for days",
        "privacy_level=secret": "privacy level",
        "limit=0": "limit",
        "q=" + "x" * 501: "q",
    }
    for query, expected in cases.items():
        answer = await client.get(f"/api/runs?{query}", headers=AUTH)
        assert answer.status_code == 422, query
        assert expected in str(answer.json()["error"]), (query, answer.json())


async def test_facets_list_each_filters_values(open_client: Client) -> None:
    client = open_client(PrivacyLevel.METADATA)
    await start(client, "echoing")
    await start(client)
    facets = (await client.get("/api/facets", headers=AUTH)).json()
    assert facets == {
        "stored": True,
        "providers": ["echoing", "scripted"],
        "models": [],
        "tools": ["echo", "lookup"],
        "statuses": ["completed"],
        "privacy_levels": ["metadata"],
    }


async def test_export_is_the_filtered_record_with_its_schema(open_client: Client) -> None:
    client = open_client(PrivacyLevel.METADATA)
    run_id = await start(client, "echoing")
    answer = await client.get(f"/api/runs/{run_id}/export", headers=AUTH)
    assert answer.headers["content-disposition"] == (
        f'attachment; filename="toolwire-run-{run_id}.json"'
    )
    record = answer.json()
    assert list(record)[:3] == ["schema", "schema_version", "id"]
    assert (record["schema"], record["schema_version"], record["id"]) == (
        SCHEMA, SCHEMA_VERSION, run_id
    )  # fmt: skip
    shown = (await client.get(f"/api/runs/{run_id}", headers=AUTH)).json()
    assert {k: v for k, v in record.items() if k not in ("schema", "schema_version")} == shown
    assert "marmalade" not in answer.text  # filtered, as stored
    assert all(isinstance(s["start_ms"], float) for s in record["steps"])
    missing = await client.get(f"/api/runs/{'0' * 36}/export", headers=AUTH)
    assert missing.status_code == 404


async def test_a_full_run_is_rerun_with_its_request_and_options_and_linked(
    open_client: Client,
) -> None:
    client = open_client(PrivacyLevel.FULL)
    original = await start(client, "echoing", system_prompt="Be brief.", max_rounds=4,
                           temperature=0.5, allowed_tools=["echo"], reasoning="low")  # fmt: skip
    form = (await client.get(f"/api/runs/{original}/rerun", headers=AUTH)).json()
    assert form == {
        "run_id": original, "available": True, "reason": "", "source": "stored",
        "prompt": "orders?", "system_prompt": "Be brief.", "provider": "echoing", "model": None,
        "options": {"max_rounds": 4, "allowed_tools": ["echo"], "temperature": 0.5,
                    "capture_raw": False, "dry_run": False, "stream": True,
                    "max_concurrency": 8, "max_remote_calls": 20, "tool_choice": "auto",
                    "reasoning": "low"},
        "options_recorded": True, "provider_problem": "",
    }  # fmt: skip
    again = await start(client, form["provider"], **{**form["options"], "prompt": "edited?",
                                                     "rerun_of": original})  # fmt: skip
    assert await ids(client, rerun_of=original) == [again]
    shown = (await client.get(f"/api/runs/{again}", headers=AUTH)).json()
    assert shown["rerun_of"] == original
    assert shown["steps"][0]["messages_sent"][-1] == {"role": "user", "content": "edited?"}


async def test_a_runs_own_egress_limit_applies_and_its_rerun_keeps_it(
    open_client: Client,
) -> None:
    """The form's egress limit narrows the run (it stops before its tool output is sent), and
    a re-run of it is offered the same limit, not the workspace's alone."""
    client = open_client(PrivacyLevel.FULL)
    original = await start(client, "echoing", max_egress_bytes=0, on_egress_limit="stop")
    shown = (await client.get(f"/api/runs/{original}", headers=AUTH)).json()
    assert shown["termination_reason"] == "egress_limit"
    form = (await client.get(f"/api/runs/{original}/rerun", headers=AUTH)).json()
    options = form["options"]
    assert (options["max_egress_bytes"], options["on_egress_limit"]) == (0, "stop")
    bad = await client.post("/api/runs", json={"prompt": "x", "max_egress_bytes": -1,
                                               "on_egress_limit": "sometimes"},
                            headers=AUTH)  # fmt: skip
    assert bad.status_code == 422
    said = bad.json()["error"]["message"]
    assert "body.max_egress_bytes:" in said and "body.on_egress_limit:" in said


async def test_a_run_whose_request_was_not_kept_is_not_offered(open_client: Client) -> None:
    client = open_client(PrivacyLevel.REDACTED)
    run_id = await start(client)
    form = (await client.get(f"/api/runs/{run_id}/rerun", headers=AUTH)).json()
    assert (form["available"], form["prompt"]) == (False, None)
    assert form["reason"] == (
        "its request is not kept at privacy level redacted (only at full, or sealed while the "
        "run waits)"
    )


async def test_a_waiting_run_is_rerun_from_its_sealed_state(open_client: Client) -> None:
    client = open_client(PrivacyLevel.METADATA)
    run_id = await start(client, "approve", system_prompt="Careful.")
    form = (await client.get(f"/api/runs/{run_id}/rerun", headers=AUTH)).json()
    assert (form["available"], form["source"], form["prompt"], form["system_prompt"]) == (
        True, "sealed", "orders?", "Careful."
    )  # fmt: skip
    bad = await client.post("/api/runs", json={"prompt": "x", "rerun_of": "../x"}, headers=AUTH)
    assert bad.status_code == 422
