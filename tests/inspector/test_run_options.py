"""Run options over the API: reasoning and budgets in a strict body, live deltas, and how the
end line tells a refusal, a block and a spent budget apart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from toolwire.core.jsonenc import loads
from toolwire.inspector import create_app
from toolwire.inspector.stream import RunChannel
from toolwire.providers.base import Reasoning

from ..inspector_kit import AUTH, HOSTILE_REFUSAL, STREAMED_ANSWER, StreamingModel, settings
from .asgi import asgi_client

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings())
    async with asgi_client(app) as c:
        yield c


def lines(body: bytes) -> list[dict[str, Any]]:
    return [loads(line) for line in body.split(b"\n") if line.strip()]


async def stream(client: httpx.AsyncClient, **body: Any) -> list[dict[str, Any]]:
    response = await client.post("/api/runs/stream", json={"prompt": "q", **body}, headers=AUTH)
    assert response.status_code == 200, response.text
    return lines(response.content)


@pytest.mark.parametrize(
    ("given", "expected"),
    [("high", Reasoning(effort="high")), (2048, Reasoning(budget_tokens=2048)), (None, None)],
)
async def test_reasoning_and_budgets_reach_the_provider(
    client: httpx.AsyncClient, given: object, expected: Reasoning | None
) -> None:
    StreamingModel.requests.clear()
    events = await stream(client, provider="streaming", reasoning=given, max_tokens=900,
                          max_total_tokens=50_000, max_cost=2.5, stream=False)  # fmt: skip
    (request,) = StreamingModel.requests
    assert (request.reasoning, request.max_tokens, request.stream) == (expected, 900, False)
    assert [e["type"] for e in events] == ["context", "step", "step", "end"]  # no deltas


async def test_deltas_come_between_the_request_and_the_llm_step(
    client: httpx.AsyncClient,
) -> None:
    events = await stream(client, provider="streaming")
    assert [(e["type"], e.get("kind"), e.get("text")) for e in events] == [
        ("context", None, None),
        ("step", None, None),
        ("delta", "thinking", "Weighing "),
        ("delta", "thinking", "<b>the</b> orders."),
        ("delta", "content", "Ada has "),
        ("delta", "content", "<i>two</i> orders."),
        ("step", None, None),
        ("end", None, None),
    ]
    assert {e["round"] for e in events if e["type"] == "delta"} == {1}
    llm, end = events[-2]["step"], events[-1]
    assert (llm["kind"], llm["content"], end["final_content"]) == ("llm", STREAMED_ANSWER,
                                                                    STREAMED_ANSWER)  # fmt: skip
    assert end["cost"] == pytest.approx(llm["cost"]) and end["cost"] > 0
    assert end["cost_complete"] is True


@pytest.mark.parametrize(
    ("provider", "reason", "finish"),
    [("refusing", "refused", "refusal"), ("blocked", "blocked", "SAFETY")],
)
async def test_a_refusal_ends_with_its_reason_and_the_providers_text(
    client: httpx.AsyncClient, provider: str, reason: str, finish: str
) -> None:
    end = (await stream(client, provider=provider))[-1]
    assert {k: end[k] for k in ("status", "reason", "stop", "finish_reason", "refusal")} == {
        "status": "completed", "reason": reason,
        "stop": "refusal" if reason == "refused" else "blocked",
        "finish_reason": finish, "refusal": HOSTILE_REFUSAL,
    }  # fmt: skip


async def test_a_spent_budget_ends_the_run_after_the_round_that_crossed_it(
    client: httpx.AsyncClient,
) -> None:
    events = await stream(client, provider="spendy", max_total_tokens=50)
    end = events[-1]
    assert (end["status"], end["reason"], end["truncated"]) == ("completed", "budget_exhausted",
                                                                True)  # fmt: skip
    assert [e["step"]["kind"] for e in events if e["type"] == "step"] == ["request", "llm"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("reasoning", "extreme", "body.reasoning.literal['low','medium','high']: Input should be"),
        (
            "reasoning",
            0,
            "constrained-int: Input should be greater than or equal to 1",
        ),
        (
            "reasoning",
            200_001,
            "constrained-int: Input should be less than or equal to 200000",
        ),
        ("reasoning", "2048", "body.reasoning.constrained-int: Input should be a valid integer"),
        ("max_tokens", 0, "body.max_tokens: Input should be greater than or equal to 1"),
        ("max_total_tokens", 1.5, "body.max_total_tokens: Input should be a valid integer"),
        ("max_cost", 0, "body.max_cost: Input should be greater than 0"),
        ("max_cost", 100_001, "body.max_cost: Input should be less than or equal to 100000"),
        ("max_cost", "1", "body.max_cost: Input should be a valid number"),
        ("stream", "yes", "body.stream: Input should be a valid boolean"),
        ("context_window", 0, "body.context_window: Input should be greater than or equal to 1"),
        ("context_window", "8000", "body.context_window: Input should be a valid integer"),
        ("max_concurrency", 0, "body.max_concurrency: Input should be greater than or equal to 1"),
        ("max_concurrency", 33, "body.max_concurrency: Input should be less than or equal to 32"),
    ],
)
async def test_bad_run_options_are_422s_naming_the_field(
    client: httpx.AsyncClient, field: str, value: object, message: str
) -> None:
    response = await client.post("/api/runs", json={"prompt": "q", field: value}, headers=AUTH)
    assert response.status_code == 422
    assert message in response.json()["error"]["message"]


async def test_a_context_window_too_small_for_the_prompt_ends_the_run_before_a_call(
    client: httpx.AsyncClient,
) -> None:
    StreamingModel.requests.clear()
    events = await stream(client, provider="streaming", context_window=3)
    assert [e["type"] for e in events] == ["context", "end"]
    end = events[-1]
    assert (end["status"], end["reason"], end["truncated"]) == ("completed", "context_full", True)
    assert StreamingModel.requests == []
    fits = await stream(client, provider="streaming", context_window=100_000)
    assert fits[-1]["reason"] == "completed" and len(StreamingModel.requests) == 1


async def test_a_non_finite_budget_is_refused(client: httpx.AsyncClient) -> None:
    body = b'{"prompt": "q", "max_cost": NaN}'
    headers = AUTH | {"Content-Type": "application/json"}
    response = await client.post("/api/runs", content=body, headers=headers)
    assert response.status_code == 422


async def test_pieces_queued_behind_a_slow_reader_go_out_as_one_line() -> None:
    channel = RunChannel()
    pieces = [("content", "Ada "), ("content", "has "), ("thinking", "hm"), ("content", "2.")]
    for kind, text in pieces:
        channel.push({"type": "delta", "round": 1, "kind": kind, "text": text})
    channel.push({"type": "step", "step": {"kind": "llm"}})
    channel.push({"type": "delta", "round": 2, "kind": "content", "text": "x"})
    channel.push({"type": "end", "status": "completed"})
    channel.push({"type": "delta", "round": 2, "kind": "content", "text": "never"})
    events = [event async for event in channel.events()]
    assert events == [
        {"type": "delta", "round": 1, "kind": "content", "text": "Ada has "},
        {"type": "delta", "round": 1, "kind": "thinking", "text": "hm"},
        {"type": "delta", "round": 1, "kind": "content", "text": "2."},
        {"type": "step", "step": {"kind": "llm"}},
        {"type": "delta", "round": 2, "kind": "content", "text": "x"},
        {"type": "end", "status": "completed"},
    ]


async def test_a_closed_channel_after_a_delta_ends_without_a_terminal_line() -> None:
    channel = RunChannel()
    channel.push({"type": "delta", "round": 1, "kind": "content", "text": "a"})
    channel.close()
    assert [e["text"] async for e in channel.events()] == ["a"]


@pytest.mark.parametrize(("given", "expected"), [(3, 3), (None, 8)])
def test_the_concurrency_setting_reaches_the_run(given: int | None, expected: int) -> None:
    from toolwire.inspector.models import RunBody
    from toolwire.inspector.service import prepare_run
    from toolwire.runs.runtime import Runtime

    chosen = settings()
    body = RunBody.model_validate({"prompt": "q", "max_concurrency": given})
    live = prepare_run(chosen, Runtime(chosen.registry), body)
    assert live.request.options.max_concurrency == expected
