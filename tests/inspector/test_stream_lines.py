"""The stream's lines: unpadded, and request steps carrying only what is new since the last."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolwire.core.jsonenc import loads, sink_dumps_bytes
from toolwire.inspector import create_app
from toolwire.inspector.stream import RequestDeltas
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import AUTH, settings
from .asgi import asgi_client

pytestmark = pytest.mark.anyio
SYSTEM = {"role": "system", "content": "be brief"}
USER = {"role": "user", "content": "orders?"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    opened = RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}", privacy=PrivacyLevel.FULL)
    yield opened
    opened.close()


@pytest.fixture
async def client(store: RunStore) -> AsyncIterator[httpx.AsyncClient]:
    async with asgi_client(create_app(settings(store=store, privacy_level="full"))) as c:
        yield c


def steps_of(body: bytes) -> list[dict[str, Any]]:
    events = [loads(line) for line in body.split(b"\n") if line]
    return [e["step"] for e in events if e["type"] == "step"]


def rebuilt(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The steps with every request's whole messages, as the page rebuilds them."""
    last: list[Any] = []
    out = []
    for sent in steps:
        step = {k: v for k, v in sent.items() if k not in {"messages_kept", "messages_new"}}
        if "messages_kept" in sent:
            step["messages_sent"] = last[: sent["messages_kept"]] + sent["messages_new"]
        if step["kind"] == "request":
            last = step["messages_sent"]
        out.append(step)
    return out


def conversations(steps: list[dict[str, Any]]) -> list[Any]:
    return [s["messages_sent"] for s in steps if s["kind"] == "request"]


async def test_each_stream_line_is_its_json_and_a_newline_with_no_padding(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/api/runs/stream", json={"prompt": "x"}, headers=AUTH)
    raw = response.content.split(b"\n")
    assert raw[-1] == b"" and len(raw) == 10  # the second request's egress line among them
    assert [line == sink_dumps_bytes(loads(line)) for line in raw[:-1]] == [True] * 9
    assert raw[0].startswith(b'{"type":"context",')
    assert raw[-2].startswith(b'{"type":"end",') and raw[-2].endswith(b"}")


async def test_a_later_request_streams_only_the_messages_new_since_the_last(
    client: httpx.AsyncClient,
) -> None:
    body = {"prompt": "orders?", "system_prompt": "be brief", "allowed_tools": ["lookup"]}
    streamed = steps_of((await client.post("/api/runs/stream", json=body, headers=AUTH)).content)
    first, second = (s for s in streamed if s["kind"] == "request")
    assert first["messages_sent"] == [SYSTEM, USER]
    assert "messages_sent" not in second
    assert list(second)[:5] == ["kind", "round", "duration_ms", "start_ms", "messages_kept"]
    assert second["messages_kept"] == 2
    assert [m["role"] for m in second["messages_new"]] == ["assistant", "tool"]
    assert second["messages_new"][1]["content"] == "2 orders for Ada"
    batch = (await client.post("/api/runs", json=body, headers=AUTH)).json()["steps"]
    assert conversations(rebuilt(streamed)) == conversations(batch)
    assert "messages_kept" not in batch[3] and len(batch[3]["messages_sent"]) == 4


async def test_every_request_of_a_longer_run_is_rebuilt_from_its_deltas(
    client: httpx.AsyncClient,
) -> None:
    body = {"prompt": "go", "provider": "looping", "max_rounds": 10}
    streamed = steps_of((await client.post("/api/runs/stream", json=body, headers=AUTH)).content)
    requests = [s for s in streamed if s["kind"] == "request"]
    assert [s.get("messages_kept") for s in requests] == [None, 1, 3, 5]
    assert [len(s["messages_new"]) for s in requests[1:]] == [2, 2, 2]
    batch = (await client.post("/api/runs", json=body, headers=AUTH)).json()["steps"]
    assert [len(c) for c in conversations(batch)] == [1, 3, 5, 7]
    assert conversations(rebuilt(streamed)) == conversations(batch)


async def test_a_followed_run_streams_deltas_and_its_store_keeps_whole_requests(
    client: httpx.AsyncClient,
) -> None:
    body = {"prompt": "go", "provider": "looping", "max_rounds": 10}
    run_id = (await client.post("/api/runs", json=body, headers=AUTH)).json()["context"]["run_id"]
    stored = (await client.get(f"/api/runs/{run_id}", headers=AUTH)).json()["steps"]
    assert [len(c) for c in conversations(stored)] == [1, 3, 5, 7]
    followed = steps_of((await client.get(f"/api/runs/{run_id}/stream", headers=AUTH)).content)
    assert [s.get("messages_kept") for s in followed if s["kind"] == "request"] == [None, 1, 3, 5]
    assert conversations(rebuilt(followed)) == conversations(stored)
    exported = (await client.get(f"/api/runs/{run_id}/export", headers=AUTH)).json()
    assert all("messages_kept" not in s for s in exported["steps"])


async def test_a_stored_run_is_whole_unless_asked_with_requests_as_deltas(
    client: httpx.AsyncClient,
) -> None:
    body = {"prompt": "go", "provider": "looping", "max_rounds": 10}
    run_id = (await client.post("/api/runs", json=body, headers=AUTH)).json()["context"]["run_id"]
    whole = (await client.get(f"/api/runs/{run_id}", headers=AUTH)).json()
    delta = (await client.get(f"/api/runs/{run_id}?requests=delta", headers=AUTH)).json()
    assert [s.get("messages_kept") for s in delta["steps"] if s["kind"] == "request"] == [
        None, 1, 3, 5
    ]  # fmt: skip
    assert rebuilt(delta["steps"]) == whole["steps"]
    assert {k: v for k, v in delta.items() if k != "steps"} == {
        k: v for k, v in whole.items() if k != "steps"
    }  # fmt: skip
    refused = await client.get(f"/api/runs/{run_id}?requests=some", headers=AUTH)
    assert refused.status_code == 422


def request(messages: list[Any] | None) -> dict[str, Any]:
    step: dict[str, Any] = {"kind": "request", "round": 1, "duration_ms": 0.0}
    if messages is not None:
        step["messages_sent"] = messages
    return {"type": "step", "step": step}


def test_a_request_that_repeats_a_head_keeps_it_and_one_that_repeats_none_is_whole() -> None:
    deltas = RequestDeltas()
    a1, t1, a2 = ({"role": r, "content": r + n} for r, n in (("assistant", "1"), ("tool", "1"),
                                                             ("assistant", "2")))  # fmt: skip
    assert deltas.encode(request([SYSTEM, USER, a1, t1])) == request([SYSTEM, USER, a1, t1])
    dropped = deltas.encode(request([SYSTEM, a1, t1, a2]))  # an old exchange left the context
    assert dropped["step"] == {"kind": "request", "round": 1, "duration_ms": 0.0,
                               "messages_kept": 1, "messages_new": [a1, t1, a2]}  # fmt: skip
    assert deltas.encode(request([USER])) == request([USER])
    assert deltas.encode(request([USER]))["step"]["messages_new"] == []


def test_steps_without_messages_pass_as_they_are_and_the_next_request_is_whole() -> None:
    deltas = RequestDeltas()
    deltas.encode(request([SYSTEM, USER]))
    metadata = {"type": "step", "step": {"kind": "request", "messages_sent_count": 3}}
    assert deltas.encode(metadata) is metadata
    assert deltas.encode(request([SYSTEM, USER])) == request([SYSTEM, USER])
    other = {"type": "step", "step": {"kind": "llm", "content": "x"}}
    assert deltas.encode(other) is other
    assert deltas.encode({"type": "end", "status": "completed"}) == {
        "type": "end", "status": "completed"
    }  # fmt: skip
