"""Cancelling a run closes its provider stream at once, mid-answer, over real loopback HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolwire import RunOptions, RunRequest, Runtime, ToolRegistry
from toolwire.core.lifecycle import RunStatus
from toolwire.providers.base import Delta
from toolwire.providers.openai import OpenAIProvider

CHUNK = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}


class Endless:
    """A model that sends one piece of its answer, then keeps the stream open forever."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                first = {**CHUNK, "choices": [{"index": 0, "delta": {"content": "Hel"}}]}
                try:
                    self.wfile.write(f"data: {json.dumps(first)}\n\n".encode())
                    self.wfile.flush()
                    deadline = time.monotonic() + 30
                    while time.monotonic() < deadline:  # a comment line keeps it alive
                        time.sleep(0.02)
                        self.wfile.write(b": still thinking\n\n")
                        self.wfile.flush()
                except OSError:
                    model.closed.set()

            def log_message(self, *args: Any) -> None:
                return None

        return Handler


@contextmanager
def serving(model: Endless) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), model.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_cancelling_a_run_closes_its_stream_at_once() -> None:
    model = Endless()
    runtime = Runtime(ToolRegistry())
    ids: list[str] = []
    pieces: list[str] = []

    def on_delta(_round: int, delta: Delta) -> None:
        pieces.append(delta.text)
        runtime.cancel(ids[0])

    with serving(model) as base:
        provider = OpenAIProvider(model="m", api_key="k", base_url=base)
        request = RunRequest.of("hi", provider=provider, options=RunOptions(stream=True))
        started = time.monotonic()
        outcome = asyncio.run(runtime.run(request, on_start=ids.append, deltas=[on_delta]))
        elapsed = time.monotonic() - started
        assert model.closed.wait(5), "the server never saw the stream closed"
    assert outcome.status is RunStatus.CANCELLED and pieces == ["Hel"]
    assert elapsed < 5  # far below the server's 30 s: the stream did not run to its end
