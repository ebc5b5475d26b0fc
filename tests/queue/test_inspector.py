"""The inspector with queued runs, over real HTTP, with a real worker process: a run submitted
over the API returns its id at once and is followed live; a decision is queued; the OpenAPI
document names it all."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from toolwire.core.errors import QueueError
from toolwire.core.jsonenc import loads
from toolwire.inspector import InspectorSettings, create_app, scripted_factory
from toolwire.store import RunStore
from toolwire.tools.defaults import default_registry

from ..inspector_kit import AUTH, TOKEN, live_server
from .kit import EXPECTED_THREE_TURNS, Queue, three_turns, with_write


def served(queue: Queue, turns: list[dict[str, Any]]) -> InspectorSettings:
    return InspectorSettings(
        registry=default_registry(discover=False),
        provider_factory=scripted_factory(queue.script(turns)),
        token=TOKEN,
        store=queue.store,
        privacy_level="metadata",
        state_key=queue.key,
        queue_runs=True,
    )


@pytest.fixture
def base(queue: Queue) -> Iterator[str]:
    queue.start(1)
    with live_server(create_app(served(queue, three_turns()))) as url:
        yield url


def test_post_runs_returns_the_id_at_once_and_the_run_is_followed_live(
    queue: Queue, base: str
) -> None:
    headers = AUTH | {"Origin": base}
    started = time.monotonic()
    answer = httpx.post(f"{base}/api/runs", json={"prompt": "go"}, headers=headers, timeout=10)
    assert time.monotonic() - started < 1.0  # queued, not run: three turns take longer
    assert answer.status_code == 202
    run_id = answer.json()["run_id"]
    assert answer.json() == {"run_id": run_id, "status": "queued"}
    events = _events(f"{base}/api/runs/{run_id}/stream")
    assert events[0]["type"] == "context" and events[0]["run_id"] == run_id
    steps = [e["step"] for e in events[1:-1] if e["type"] == "step"]
    assert [(s["kind"], s["round"]) for s in steps] == EXPECTED_THREE_TURNS
    sent = [(e["round"], e["lines"][0]["tool"]) for e in events if e["type"] == "egress"]
    assert sent == [(2, "slow_read"), (3, "slow_read")]  # the ledger of the worker's run
    assert [s["sequence"] for s in steps] == list(range(1, 9))
    end = events[-1]
    assert (end["type"], end["status"], end["run_id"], end["iterations"]) == (
        "end", "completed", run_id, 3,
    )  # fmt: skip
    assert end["answer_withheld"] is True and end["final_content"] == ""  # metadata level
    stored = httpx.get(f"{base}/api/runs/{run_id}", headers=AUTH, timeout=10).json()
    assert (stored["status"], stored["queued"], stored["step_count"]) == ("completed", True, 8)


def test_the_run_stream_queues_the_run_and_streams_what_the_worker_records(base: str) -> None:
    body = {"prompt": "go"}
    with httpx.stream("POST", f"{base}/api/runs/stream", json=body,
                      headers=AUTH | {"Origin": base}, timeout=30) as response:  # fmt: skip
        events = [loads(line) for line in response.iter_lines() if line.strip()]
    context = events[0]
    assert (context["type"], context["queued"], context["stored"]) == ("context", True, True)
    assert context["replay_label"] and context["run_id"]
    # each request after the first carried a result: its egress line follows its answer
    assert [e["type"] for e in events[1:]] == [
        "step", "step", "step", "step", "step", "egress", "step", "step", "step", "egress", "end"
    ]  # fmt: skip
    assert events[-1]["status"] == "completed"


def test_a_decision_on_a_queued_run_is_queued_and_streamed(queue: Queue) -> None:
    queue.start(1)
    with live_server(create_app(served(queue, with_write()))) as url:
        headers = AUTH | {"Origin": url}
        run_id = httpx.post(f"{url}/api/runs", json={"prompt": "go"}, headers=headers).json()[
            "run_id"
        ]
        waiting = _events(f"{url}/api/runs/{run_id}/stream")[-1]
        assert waiting["status"] == "awaiting_approval"
        body = {"action": "approve", "digest": waiting["pending"]["digest"]}
        with httpx.stream("POST", f"{url}/api/runs/{run_id}/decision", json=body,
                          headers=headers, timeout=30) as response:  # fmt: skip
            assert response.status_code == 200
            events = [loads(line) for line in response.iter_lines() if line.strip()]
        again = httpx.post(f"{url}/api/runs/{run_id}/decision", json=body, headers=headers)
    assert events[0]["resumed"] is True
    kinds = [e["step"]["kind"] for e in events if e["type"] == "step"]
    assert kinds == ["decision", "tool", "request", "llm"]
    assert events[-1]["status"] == "completed"
    assert queue.counts() == {(run_id, "w1"): 1}
    assert again.status_code == 404  # decided once; the run no longer waits


def test_the_openapi_document_names_the_queued_run_and_the_follow_stream(base: str) -> None:
    document = httpx.get(f"{base}/api/openapi.json", headers=AUTH).json()
    post = document["paths"]["/api/runs"]["post"]["responses"]
    assert post["202"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/QueuedRun"
    }
    stream = document["paths"]["/api/runs/{run_id}/stream"]["get"]["responses"]
    assert "application/x-ndjson" in stream["200"]["content"]
    assert httpx.get(f"{base}/api/runs/nope/stream", headers=AUTH).status_code == 404


def test_queued_runs_on_a_sqlite_store_are_refused(tmp_path: Any) -> None:
    with RunStore.open(str(tmp_path / "runs.db")) as store:
        settings = InspectorSettings(registry=default_registry(discover=False),
                                     provider_factory=scripted_factory(None), token=TOKEN,
                                     store=store, queue_runs=True)  # fmt: skip
        with pytest.raises(QueueError, match="PostgreSQL"):
            create_app(settings)


def _events(url: str) -> list[dict[str, Any]]:
    with httpx.stream("GET", url, headers=AUTH, timeout=60) as response:
        assert response.status_code == 200
        return [loads(line) for line in response.iter_lines() if line.strip()]
