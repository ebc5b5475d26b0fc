"""The inspector API in process, through httpx's ASGI transport."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from toolwire.core.jsonenc import loads
from toolwire.inspector import create_app
from toolwire.inspector.security import CONTENT_SECURITY_POLICY

from ..inspector_kit import AUTH, TABLE_COLUMNS, TABLE_ROWS, settings
from .asgi import BASE, asgi_client

ORIGIN = {"Origin": BASE}
pytestmark = pytest.mark.anyio


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings())
    async with asgi_client(app) as c:
        yield c


def lines(body: bytes) -> list[dict[str, Any]]:
    return [loads(line) for line in body.split(b"\n") if line.strip()]


async def test_the_stream_sends_context_steps_then_done_in_order(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/api/runs/stream", json={"prompt": "orders?"}, headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/x-ndjson; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache, no-transform"
    events = lines(response.content)
    assert [e["type"] for e in events] == [
        "context", "step", "step", "step", "step", "delta", "step", "egress", "end",
    ]  # fmt: skip
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert [s["kind"] for s in steps] == ["request", "llm", "tool", "request", "llm"]
    # The answer as it streams, between the request and the llm step of round 2. The scripted
    # model hands over its pieces at once, so they queue and go out as one line.
    assert [e for e in events if e["type"] == "delta"] == [
        {"type": "delta", "round": 2, "kind": "content", "text": "Ada has 2 orders."}
    ]
    context, done = events[0], events[-1]
    assert context["provider"] == "scripted"
    assert context["replay_label"] == "Replay: scripted model, no provider is called"
    assert context["tools"] == ["lookup", "every_artifact", "odd_artifacts", "echo", "boom"]
    assert context["privacy_level"] is None
    assert done["run_id"] == context["run_id"] and len(context["run_id"]) == 32
    assert {
        k: done[k] for k in ("status", "final_content", "iterations", "truncated", "reason")
    } == {
        "status": "completed",
        "final_content": "Ada has 2 orders.",
        "iterations": 2,
        "truncated": False,
        "reason": "completed",
    }
    assert done["usage"] == {
        "prompt_tokens": 30,
        "completion_tokens": 7,
        "total_tokens": 37,
        "tokens_known": True,
    }
    assert {k: done[k] for k in ("stop", "finish_reason", "refusal", "cost", "cost_complete")} == {
        "stop": "end", "finish_reason": "stop", "refusal": None, "cost": 0.0,
        "cost_complete": False,
    }  # fmt: skip
    tool = steps[2]
    assert tool["tool_name"] == "lookup" and tool["tool_result"] == "2 orders for Ada"
    assert tool["tool_artifacts"] == [
        {"type": "table", "label": "orders", "data": {"columns": TABLE_COLUMNS, "rows": TABLE_ROWS}}
    ]


async def test_a_batch_run_returns_context_steps_and_result(client: httpx.AsyncClient) -> None:
    body = {"prompt": "orders?", "system_prompt": "be brief", "allowed_tools": ["lookup"]}
    response = await client.post("/api/runs", json=body, headers=AUTH)
    assert response.status_code == 200
    data = response.json()
    assert data["context"]["tools"] == ["lookup"]
    assert [s["kind"] for s in data["steps"]] == ["request", "llm", "tool", "request", "llm"]
    assert data["steps"][0]["messages_sent"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "orders?"},
    ]
    assert (data["result"]["type"], data["result"]["status"]) == ("end", "completed")


async def test_no_allowed_tools_means_a_plain_completion_with_no_tools(
    client: httpx.AsyncClient,
) -> None:
    body = {"prompt": "hi", "allowed_tools": [], "provider": "scripted"}
    data = (await client.post("/api/runs", json=body, headers=AUTH)).json()
    assert data["context"]["tools"] == []
    assert [s["kind"] for s in data["steps"]] == ["request", "llm"]
    assert data["steps"][0]["tool_specs"] == []


async def test_the_round_cap_is_reported_as_truncated(client: httpx.AsyncClient) -> None:
    body = {"prompt": "x", "provider": "looping", "max_rounds": 2}
    result = (await client.post("/api/runs", json=body, headers=AUTH)).json()["result"]
    assert (result["status"], result["truncated"], result["reason"]) == (
        "completed",
        True,
        "max_iterations",
    )


async def test_a_failed_run_ends_in_a_short_safe_error(client: httpx.AsyncClient) -> None:
    body = {"prompt": "x", "provider": "exhausted"}
    response = await client.post("/api/runs/stream", json=body, headers=AUTH)
    last = lines(response.content)[-1]
    assert {k: last[k] for k in ("type", "status", "message")} == {
        "type": "end",
        "status": "failed",
        "message": "the provider call failed: ScriptExhausted",
    }


async def test_a_dry_run_records_the_request_only(client: httpx.AsyncClient) -> None:
    body = {"prompt": "x", "dry_run": True}
    data = (await client.post("/api/runs", json=body, headers=AUTH)).json()
    assert [s["kind"] for s in data["steps"]] == ["request"]
    assert (data["result"]["status"], data["result"]["reason"]) == ("dry_run", "dry_run")


async def test_cancelling_an_unknown_run_is_a_404(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/runs/nope/cancel", headers=AUTH)
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": "no running or waiting run has this id"}
    }


async def test_invalid_utf8_in_tool_output_is_substituted_on_the_wire(
    client: httpx.AsyncClient,
) -> None:
    scripts = {"lone": [{"tool_calls": [{"name": "echo", "arguments": {"text": "a\ud800b"}}]},
                        {"content": "c\udfffd"}]}  # fmt: skip
    app = create_app(settings(scripts=scripts))
    async with asgi_client(app) as c:
        response = await c.post("/api/runs/stream", json={"prompt": "x", "provider": "lone"},
                                headers=AUTH)  # fmt: skip
    response.content.decode("utf-8")  # strict: raises on any invalid byte
    events = lines(response.content)
    assert events[3]["step"]["tool_result"] == "a\ufffdb"
    assert events[-1]["final_content"] == "c\ufffdd"


async def test_tools_list_effective_state_and_why(client: httpx.AsyncClient) -> None:
    data = (await client.get("/api/tools", headers=AUTH)).json()
    rows = {t["name"]: t for t in data["tools"]}
    assert (rows["lookup"]["enabled"], rows["lookup"]["why"]) == (True, "enabled by default")
    assert (rows["dormant"]["enabled"], rows["dormant"]["why"]) == (False, "disabled by default")
    assert data["groups"] == [
        {"name": "records", "enabled": True, "overridden": False},
        {"name": "files", "enabled": True, "overridden": False},
        {"name": "admin", "enabled": True, "overridden": False},
    ]


async def test_toggling_a_group_and_a_tool_changes_what_a_run_offers(
    client: httpx.AsyncClient,
) -> None:
    off = await client.put("/api/groups/records", json={"enabled": False}, headers=AUTH)
    rows = {t["name"]: t for t in off.json()["tools"]}
    assert (rows["lookup"]["enabled"], rows["lookup"]["why"]) == (
        False,
        'group "records" is disabled',
    )
    on = await client.put("/api/tools/dormant", json={"enabled": True}, headers=AUTH)
    assert {t["name"]: t["why"] for t in on.json()["tools"]}["dormant"] == "enabled here"
    context = (await client.post("/api/runs", json={"prompt": "x"}, headers=AUTH)).json()
    assert context["context"]["tools"] == ["echo", "dormant", "boom"]
    await client.put("/api/tools/dormant", json={"enabled": None}, headers=AUTH)
    again = (await client.get("/api/tools", headers=AUTH)).json()
    assert {t["name"]: t["overridden"] for t in again["tools"]}["dormant"] is False


async def test_a_direct_call_goes_through_the_seam_with_both_channels(
    client: httpx.AsyncClient,
) -> None:
    body = {"arguments": {"customer": "Ada"}}
    response = await client.post("/api/tools/lookup/invoke", json=body, headers=AUTH)
    data = response.json()
    assert data["content"] == "2 orders for Ada" and data["is_error"] is False
    assert data["artifacts"][0]["data"] == {"columns": TABLE_COLUMNS, "rows": TABLE_ROWS}
    assert data["refused"] is None


async def test_a_direct_call_that_raises_gets_the_generic_text_only(
    client: httpx.AsyncClient,
) -> None:
    data = (await client.post("/api/tools/boom/invoke", json={}, headers=AUTH)).json()
    assert (data["content"], data["is_error"], data["artifacts"]) == (
        'Error: tool "boom" failed.',
        True,
        [],
    )
    assert "shadow" not in str(data)


async def test_a_direct_call_with_bad_arguments_gets_the_model_readable_error(
    client: httpx.AsyncClient,
) -> None:
    body = {"arguments": {"customer": 7}}
    data = (await client.post("/api/tools/lookup/invoke", json=body, headers=AUTH)).json()
    assert data["content"] == (
        'Error: invalid arguments for tool "lookup": customer: Input should be a valid string'
    )


async def test_a_direct_call_of_a_disabled_tool_is_refused_by_the_gate(
    client: httpx.AsyncClient,
) -> None:
    data = (await client.post("/api/tools/dormant/invoke", json={}, headers=AUTH)).json()
    assert data["refused"] == {"reason": "disabled", "detail": ""}
    assert (data["content"], data["is_error"]) == (None, True)


async def test_errors_share_one_shape(client: httpx.AsyncClient) -> None:
    cases = [
        (await client.get("/api/tools"), 401, "unauthorized"),
        (await client.get("/api/openapi.json"), 401, "unauthorized"),
        (await client.get("/api/tools", headers={"Authorization": "Bearer wrong"}), 401,
         "unauthorized"),
        (await client.put("/api/tools/lookup", json={"enabled": False},
                          headers=AUTH | {"Origin": "http://evil.test"}), 403, "forbidden"),
        (await client.get("/api/runs/abc", headers=AUTH), 404, "not_found"),
        (await client.get("/nowhere"), 404, "not_found"),
        (await client.delete("/api/tools", headers=AUTH), 405, "method_not_allowed"),
        (await client.post("/api/runs", json={"prompt": ""}, headers=AUTH), 422, "invalid_input"),
        (await client.post("/api/runs", content=b"{", headers=AUTH), 422, "invalid_input"),
    ]  # fmt: skip
    for response, status, code in cases:
        assert response.status_code == status, response.text
        body = response.json()
        assert list(body) == ["error"] and list(body["error"]) == ["code", "message"]
        assert body["error"]["code"] == code
        assert "Traceback" not in body["error"]["message"]


async def test_the_api_document_is_served_to_token_holders(client: httpx.AsyncClient) -> None:
    document = (await client.get("/api/openapi.json", headers=AUTH)).json()
    assert "/api/runs/stream" in document["paths"]


async def test_validation_errors_name_the_field_and_the_rule(client: httpx.AsyncClient) -> None:
    body = {"prompt": "x", "max_rounds": 1001, "colour": "red"}
    response = await client.post("/api/runs", json=body, headers=AUTH)
    assert response.json()["error"]["message"] == (
        "body.max_rounds: Input should be less than or equal to 1000; "
        "body.colour: Extra inputs are not permitted"
    )


async def test_an_unknown_provider_is_a_422_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/runs", json={"prompt": "x", "provider": "gpt"}, headers=AUTH)
    assert (response.status_code, response.json()["error"]["message"]) == (
        422,
        'unknown provider "gpt"',
    )


async def test_a_wrong_origin_is_refused_before_anything_changes(
    client: httpx.AsyncClient,
) -> None:
    for headers in ({"Origin": "http://evil.test"}, {"Origin": "null"},
                    {"Sec-Fetch-Site": "cross-site"}):  # fmt: skip
        response = await client.put(
            "/api/tools/lookup", json={"enabled": False}, headers=AUTH | headers
        )
        assert response.status_code == 403
    foreign = await client.get("/api/tools", headers=AUTH | {"Origin": "http://evil.test"})
    assert foreign.status_code == 403  # a read too: the loopback rule refuses another origin
    tools = (await client.get("/api/tools", headers=AUTH)).json()
    assert {t["name"]: t["enabled"] for t in tools["tools"]}["lookup"] is True
    same = await client.put("/api/tools/lookup", json={"enabled": False}, headers=AUTH | ORIGIN)
    assert same.status_code == 200


async def test_every_response_carries_the_security_headers(client: httpx.AsyncClient) -> None:
    for response in (
        await client.get("/"),
        await client.get("/static/js/main.js"),
        await client.get("/api/tools"),
        await client.post("/api/runs/stream", json={"prompt": "x"}, headers=AUTH),
    ):
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"
        assert "access-control-allow-origin" not in response.headers


async def test_an_oversized_body_is_refused_with_413(client: httpx.AsyncClient) -> None:
    body = b'{"prompt": "' + b"x" * 2_000_001 + b'"}'
    response = await client.post("/api/runs", content=body, headers=AUTH)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


async def test_stored_runs_without_a_store_are_an_empty_list(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/runs", headers=AUTH)).json() == {
        "runs": [],
        "stored": False,
        "total": 0,
        "limit": 50,
        "offset": 0,
    }


async def test_a_malformed_run_id_is_refused_at_the_edge(client: httpx.AsyncClient) -> None:
    for path in ("/api/runs/%00", "/api/runs/a%20b", "/api/runs/%ED%A0%80"):
        response = await client.get(path, headers=AUTH)
        assert response.status_code == 422, path
        assert response.json()["error"]["code"] == "invalid_input"
    response = await client.post("/api/runs/%00/cancel", headers=AUTH)
    assert response.status_code == 422
