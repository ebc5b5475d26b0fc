"""The stream over real HTTP on loopback: per-line flushing, cancel, a client that leaves."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from toolwire.core.jsonenc import loads
from toolwire.inspector import create_app

from ..inspector_kit import AUTH, MemoryStore, live_server, settings


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture(scope="module")
def base(store: MemoryStore) -> Iterator[str]:
    with live_server(create_app(settings(store=store, privacy_level="metadata"))) as url:
        yield url


def test_the_first_step_arrives_while_the_model_is_still_slow(base: str) -> None:
    body = {"prompt": "x", "provider": "slow", "stream": False}
    started = time.monotonic()
    arrivals: list[tuple[str, float]] = []
    with httpx.stream("POST", f"{base}/api/runs/stream", json=body, headers=AUTH) as response:
        for line in response.iter_lines():
            if line.strip():
                event = loads(line)
                kind = event["step"]["kind"] if event["type"] == "step" else event["type"]
                arrivals.append((kind, time.monotonic() - started))
    kinds = [k for k, _ in arrivals]
    assert kinds == ["context", "request", "llm", "tool", "request", "llm", "egress", "end"]
    # The last model turn sleeps 1.5 s; everything before it must have arrived well before.
    assert arrivals[4][1] < arrivals[-1][1] - 1.0


def test_a_streamed_run_can_be_cancelled_from_another_request(base: str) -> None:
    body = {"prompt": "x", "provider": "hang"}
    with httpx.stream("POST", f"{base}/api/runs/stream", json=body, headers=AUTH) as response:
        lines = response.iter_lines()
        context = loads(next(lines))
        assert context["stored"] is True and context["privacy_level"] == "metadata"
        assert loads(next(lines))["step"]["kind"] == "request"
        run_id = context["run_id"]
        headers = AUTH | {"Origin": base}
        cancel = httpx.post(f"{base}/api/runs/{run_id}/cancel", headers=headers)
        assert cancel.json() == {"run_id": run_id, "cancelling": True, "where": "this_process"}
        rest = [loads(line) for line in lines if line.strip()]
    assert [(e["type"], e["status"]) for e in rest] == [("end", "cancelled")]
    assert rest[0]["message"] == "The run was cancelled."


def test_a_client_that_leaves_early_still_leaves_the_run_settled(
    base: str, store: MemoryStore
) -> None:
    store.settled.clear()
    body = {"prompt": "x", "provider": "slow"}
    with httpx.stream("POST", f"{base}/api/runs/stream", json=body, headers=AUTH) as response:
        run_id = loads(next(response.iter_lines()))["run_id"]
    assert store.settled.wait(10)
    assert store.runs[run_id]["status"] == "completed"
    assert [s["kind"] for s in store.steps[run_id]] == ["request", "llm", "tool", "request", "llm"]


def test_stored_runs_are_listed_and_shown_as_stored(base: str, store: MemoryStore) -> None:
    httpx.post(f"{base}/api/runs", json={"prompt": "x"}, headers=AUTH, timeout=10)
    listed = httpx.get(f"{base}/api/runs", headers=AUTH).json()
    assert listed["stored"] is True
    run_id = listed["runs"][-1]["id"]
    shown = httpx.get(f"{base}/api/runs/{run_id}", headers=AUTH).json()
    assert shown["status"] == "completed"
    assert [s["sequence"] for s in shown["steps"]] == [1, 2, 3, 4, 5]


def test_a_toggle_is_persisted_in_the_store(base: str, store: MemoryStore) -> None:
    headers = AUTH | {"Origin": base}
    httpx.put(f"{base}/api/tools/dormant", json={"enabled": True}, headers=headers)
    assert store.availability.tools == {"dormant": True}
    httpx.put(f"{base}/api/tools/dormant", json={"enabled": None}, headers=headers)
    assert store.availability.tools == {}
