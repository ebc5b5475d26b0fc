"""Streaming cost: decoding 1,000 deltas against reading the same answer whole, and the
first-token latency over loopback against a bare server-sent-events client.

1. Decode: each adapter completes one answer of ``DELTAS`` text pieces, once as an event stream
   and once as the whole JSON body, both from an in-memory transport (no network). The ratio
   says what assembling the stream costs over decoding the body.
2. First token: a loopback server answers with an event stream whose first piece comes at once
   and the rest after a pause; the time to the first piece through the OpenAI adapter
   (``on_delta``) is compared with a bare httpx + httpx-sse client reading the first event.

Ratios against a reference measured in the same process, best of interleaved batches.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from httpx_sse import aconnect_sse

from toolwire import ChatMessage, CompletionRequest
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.base import Delta
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.wire import HttpProvider

DELTAS = 1_000
PIECE = "tok "
FIRST_TOKEN_PAUSE_S = 0.05  # the rest of the answer comes this much later
MESSAGES = (ChatMessage.user("go"),)


def sse(events: list[tuple[str, Any]]) -> bytes:
    lines = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        lines.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(lines).encode()


def openai_bodies() -> tuple[bytes, bytes]:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    events = [("", {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant"}}]})]
    events += [("", {**chunk, "choices": [{"index": 0, "delta": {"content": PIECE}}]})] * DELTAS
    events.append(("", {**chunk, "choices": [{"index": 0, "delta": {},
                                              "finish_reason": "stop"}]}))  # fmt: skip
    message: dict[str, Any] = {"role": "assistant", "content": PIECE * DELTAS}
    whole = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
             "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}  # fmt: skip
    return sse(events) + b"data: [DONE]\n\n", json.dumps(whole).encode()


def anthropic_bodies() -> tuple[bytes, bytes]:
    message: dict[str, Any] = {
        "id": "m", "type": "message", "role": "assistant", "model": "c", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 0},
    }  # fmt: skip
    events: list[tuple[str, Any]] = [("message_start", {"type": "message_start",
                                                        "message": message})]  # fmt: skip
    block = {"type": "text", "text": ""}
    events.append(("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": block}))  # fmt: skip
    delta = {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": PIECE}}  # fmt: skip
    events += [("content_block_delta", delta)] * DELTAS
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                     "usage": {"output_tokens": DELTAS}}))  # fmt: skip
    events.append(("message_stop", {"type": "message_stop"}))
    whole = {**message, "stop_reason": "end_turn",
             "content": [{"type": "text", "text": PIECE * DELTAS}]}  # fmt: skip
    return sse(events), json.dumps(whole).encode()


def gemini_bodies() -> tuple[bytes, bytes]:
    def chunk(text: str, finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "modelVersion": "g"}

    events = [("", chunk(PIECE)) for _ in range(DELTAS - 1)] + [("", chunk(PIECE, "STOP"))]
    return sse(events), json.dumps(chunk(PIECE * DELTAS, "STOP")).encode()


def provider(kind: type[HttpProvider], body: bytes, content_type: str) -> HttpProvider:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": content_type})

    settings = HttpSettings(transport=httpx.MockTransport(handle))
    return kind(model="m", api_key="k", http=settings)


async def best_us(run: Callable[[], Awaitable[Any]], batches: int = 7, reps: int = 20) -> float:
    best = float("inf")
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(reps):
            await run()
        best = min(best, (time.perf_counter() - started) / reps * 1e6)
    return best


async def bare_sse_us(body: bytes) -> float:
    """The floor: parse the same events with httpx-sse and json.loads, assembling nothing."""

    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    async def read() -> None:
        async with (
            httpx.AsyncClient(transport=httpx.MockTransport(handle)) as client,
            aconnect_sse(client, "POST", "http://x/") as source,
        ):
            async for event in source.aiter_sse():
                if event.data != "[DONE]":
                    json.loads(event.data)

    return await best_us(read)


async def decode_costs() -> list[float]:
    ratios = []
    bodies: dict[type[HttpProvider], tuple[bytes, bytes]] = {
        OpenAIProvider: openai_bodies(),
        AnthropicProvider: anthropic_bodies(),
        GeminiProvider: gemini_bodies(),
    }
    for kind, (streamed, whole) in bodies.items():
        stream_p = provider(kind, streamed, "text/event-stream")
        whole_p = provider(kind, whole, "application/json")
        got: list[str] = []
        streaming = CompletionRequest(messages=MESSAGES, stream=True, on_delta=_keep(got))
        plain = CompletionRequest(messages=MESSAGES)
        assert (await stream_p.complete(streaming)).content == PIECE * DELTAS
        assert (await whole_p.complete(plain)).content == PIECE * DELTAS
        assert "".join(got) == PIECE * DELTAS
        s_us = await best_us(lambda p=stream_p, r=streaming: p.complete(r))  # type: ignore[misc]
        w_us = await best_us(lambda p=whole_p, r=plain: p.complete(r))  # type: ignore[misc]
        floor = await bare_sse_us(streamed)
        ratios.append(s_us / w_us)
        name = kind.default_name
        over = (s_us - floor) / DELTAS
        print(
            f"{name:>9}: {DELTAS} deltas streamed {s_us / 1000:6.2f} ms, whole body "
            f"{w_us / 1000:5.2f} ms ({s_us / w_us:4.1f}x); bare SSE parse "
            f"{floor / 1000:5.2f} ms ({s_us / floor:.1f}x; {over:.2f} µs per delta over it)"
        )
    return ratios


def _keep(into: list[str]) -> Callable[[Delta], None]:
    return lambda delta: into.append(delta.text)


class _Slow(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        streamed, _ = openai_bodies()
        first, rest = streamed.split(b"\n\n", 2)[:2], streamed.split(b"\n\n", 2)[2]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"\n\n".join(first) + b"\n\n")
        self.wfile.flush()
        time.sleep(FIRST_TOKEN_PAUSE_S)
        self.wfile.write(rest)
        self.wfile.flush()

    def log_message(self, *args: Any) -> None:
        return None


@contextmanager
def slow_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def first_token_ours(adapter: OpenAIProvider) -> float:
    """Inside the adapter's session (as in a run), so both clients are already built."""
    when: list[float] = []
    started = time.perf_counter()

    def on_delta(delta: Delta) -> None:
        if not when:
            when.append(time.perf_counter() - started)

    await adapter.complete(CompletionRequest(messages=MESSAGES, stream=True, on_delta=on_delta))
    return when[0] * 1000


async def first_token_bare(client: httpx.AsyncClient, base: str) -> float:
    body = {"model": "m", "messages": [{"role": "user", "content": "go"}], "stream": True}
    first = 0.0
    started = time.perf_counter()
    async with aconnect_sse(client, "POST", f"{base}/chat/completions", json=body) as source:
        async for event in source.aiter_sse():
            if not first and "content" in event.data:
                first = time.perf_counter() - started
    return first * 1000


async def first_token() -> float:
    with slow_server() as base:
        adapter = OpenAIProvider(model="m", api_key="k", base_url=base)
        ours, bare = [], []
        async with httpx.AsyncClient() as client, adapter.session():
            for _ in range(15):
                bare.append(await first_token_bare(client, base))
                ours.append(await first_token_ours(adapter))
    o, b = statistics.median(ours), statistics.median(bare)
    print(f"first token over loopback: toolwire {o:.2f} ms, bare SSE client {b:.2f} ms "
          f"(median of 15 each; {o / b:.2f}x)")  # fmt: skip
    return o / b


async def main() -> None:
    ratios = await decode_costs()
    print(f"median streamed/whole ratio: {statistics.median(ratios):.1f}x")
    await first_token()


if __name__ == "__main__":
    asyncio.run(main())
