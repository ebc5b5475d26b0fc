"""Fake model servers that speak each provider's protocol, as MockTransport handlers or over
loopback HTTP. A script is a list of turns; turn ``n`` is played when the request already holds
``n`` model turns, so one script drives a whole multi-round run. Every request body is kept."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from anthropic.types import Message

from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.wire import HttpProvider

from .test_anthropic_sdk import events as anthropic_events
from .test_anthropic_sdk import sse as anthropic_sse

# A turn: a final text, or a list of (name, arguments) calls.
Turn = str | list[tuple[str, dict[str, Any]]]
KEY = "sk-test-7f3a9c2e5b1d4f6a8e0c"  # never to appear in any error


def _played(turns: Sequence[Turn], done: int) -> Turn:
    return turns[done] if done < len(turns) else "script exhausted"


def openai_reply(body: dict[str, Any], turns: Sequence[Turn]) -> dict[str, Any]:
    done = sum(1 for m in body["messages"] if m["role"] == "assistant")
    turn = _played(turns, done)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": turn if isinstance(turn, str) else None,
    }
    if not isinstance(turn, str):
        message["tool_calls"] = [
            {
                "id": f"call_{done}_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for n, (name, args) in enumerate(turn)
        ]
    return {
        "id": f"chatcmpl-{done}",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "stop" if isinstance(turn, str) else "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def openai_chunks(reply: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """``reply`` as the chunks a Chat Completions stream sends: the role, the text in two
    pieces, each call's id and name then its arguments in two pieces, the finish, the usage."""
    head = {k: reply[k] for k in ("id", "model")} | {"object": "chat.completion.chunk"}
    choice = reply["choices"][0]
    message = choice["message"]
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    text = message.get("content") or ""
    deltas += [{"content": text[: len(text) // 2]}, {"content": text[len(text) // 2 :]}]
    for n, call in enumerate(message.get("tool_calls") or ()):
        name, arguments = call["function"]["name"], call["function"]["arguments"]
        first = {"index": n, "id": call["id"], "type": "function"}
        deltas.append({"tool_calls": [first | {"function": {"name": name, "arguments": ""}}]})
        for piece in (arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]):
            deltas.append({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
    chunks = [head | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    finish = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    chunks.append(head | {"choices": [finish]})
    if include_usage:
        chunks.append(head | {"choices": [], "usage": reply["usage"]})
    return chunks


def sse(events: list[dict[str, Any]]) -> bytes:
    """Server-sent events, one ``data:`` line each, ended as OpenAI ends a stream."""
    lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def streamed(path: str, request: dict[str, Any], reply: dict[str, Any]) -> bytes | None:
    """The reply as an event stream, when the request asked for one; None for a whole body."""
    if path.endswith("/chat/completions") and request.get("stream") is True:
        usage = bool(request.get("stream_options", {}).get("include_usage"))
        return sse(openai_chunks(reply, usage))
    if path.endswith("/v1/messages") and request.get("stream") is True:
        return anthropic_sse(anthropic_events(Message.model_validate(reply)))
    if ":streamGenerateContent" in path:
        return "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in gemini_chunks(reply)).encode()
    return None


def gemini_chunks(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """``reply`` as a Gemini stream sends it: one part a chunk, the finish and usage last."""
    candidate = reply["candidates"][0]
    head = {"modelVersion": reply["modelVersion"], "responseId": reply["responseId"]}
    chunks = [
        head | {"candidates": [{"content": {"role": "model", "parts": [part]}, "index": 0}]}
        for part in candidate["content"]["parts"]
    ]
    chunks[-1]["candidates"][0]["finishReason"] = candidate["finishReason"]
    chunks[-1]["usageMetadata"] = reply["usageMetadata"]
    return chunks


def anthropic_reply(body: dict[str, Any], turns: Sequence[Turn]) -> dict[str, Any]:
    done = sum(1 for m in body["messages"] if m["role"] == "assistant")
    turn = _played(turns, done)
    content: list[dict[str, Any]] = (
        [{"type": "text", "text": turn}]
        if isinstance(turn, str)
        else [
            {"type": "tool_use", "id": f"toolu_{done}_{n}", "name": name, "input": args}
            for n, (name, args) in enumerate(turn)
        ]
    )
    return {
        "id": f"msg_{done}",
        "type": "message",
        "role": "assistant",
        "model": body["model"],
        "content": content,
        "stop_reason": "end_turn" if isinstance(turn, str) else "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }


def gemini_reply(body: dict[str, Any], turns: Sequence[Turn]) -> dict[str, Any]:
    done = sum(1 for c in body["contents"] if c["role"] == "model")
    turn = _played(turns, done)
    parts: list[dict[str, Any]] = (
        [{"text": turn}]
        if isinstance(turn, str)
        else [{"functionCall": {"name": name, "args": args}} for name, args in turn]
    )
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {"promptTokenCount": 11, "candidatesTokenCount": 7, "totalTokenCount": 18},
        "modelVersion": "gemini-test-001",
        "responseId": f"resp-{done}",
    }


def reply_for(path: str) -> Callable[[dict[str, Any], Sequence[Turn]], dict[str, Any]]:
    if path.endswith("/chat/completions"):
        return openai_reply
    if path.endswith("/v1/messages"):
        return anthropic_reply
    if path.partition("?")[0].endswith((":generateContent", ":streamGenerateContent")):
        return gemini_reply
    raise AssertionError(f"no protocol at {path}")


@dataclass(slots=True)
class Captured:
    """One request as it arrived: path, headers and the exact body bytes."""

    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(slots=True)
class FakeModel:
    """A scripted model: answers any of the three protocols and records every request."""

    turns: Sequence[Turn] = ()
    captured: list[Captured] = field(default_factory=list)
    connections: int = 0  # TCP connections the loopback server accepted

    def answer(self, path: str, headers: dict[str, str], body: bytes) -> bytes:
        self.captured.append(Captured(path, headers, body))
        return json.dumps(reply_for(path)(json.loads(body), self.turns)).encode()

    def respond(self, path: str, headers: dict[str, str], body: bytes) -> tuple[bytes, str]:
        """The answer and its content type: an event stream when the request asked for one."""
        self.captured.append(Captured(path, headers, body))
        request = json.loads(body)
        reply = reply_for(path)(request, self.turns)
        events = streamed(path, request, reply)
        if events is not None:
            return events, "text/event-stream"
        return json.dumps(reply).encode(), "application/json"

    def transport(self) -> httpx.MockTransport:
        def handle(request: httpx.Request) -> httpx.Response:
            out, kind = self.respond(request.url.path, dict(request.headers), request.content)
            return httpx.Response(200, content=out, headers={"content-type": kind})

        return httpx.MockTransport(handle)


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real APIs do: a client may reuse connections

    def setup(self) -> None:
        super().setup()
        self.server.model.connections += 1

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        out, kind = self.server.model.respond(self.path, dict(self.headers), body)
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True
    model: FakeModel


@contextmanager
def loopback(
    model: FakeModel, handler: type[BaseHTTPRequestHandler] | None = None
) -> Iterator[str]:
    """Serve ``model`` on 127.0.0.1 (a free port) in a thread, answered by ``handler`` (the
    vendor-shaped one by default); yields the base URL."""
    server = ModelServer(("127.0.0.1", 0), handler or _Handler)
    server.model = model
    with _serving(server) as url:
        yield url


@contextmanager
def _serving(server: ThreadingHTTPServer, path: str = "") -> Iterator[str]:
    """Run ``server`` in a thread until the block ends; yields its base URL (plus ``path``)."""
    # A short poll interval: shutdown() waits for the serving loop to notice it.
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass(slots=True)
class SlowModel:
    """A scripted model (the OpenAI protocol, whole answers) that holds its answer to request
    ``slow_request`` (0-based) for ``hold_seconds``, unless its client closes the connection
    first. ``events`` says what became of that request, in order: ``asked`` as it arrived,
    then ``closed`` (the client left before the answer was sent) or ``answered``."""

    turns: Sequence[Turn]
    slow_request: int
    hold_seconds: float = 15.0
    requests: int = 0
    events: list[str] = field(default_factory=list)
    asked: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)

    def reply(self, body: bytes) -> tuple[bytes, bool]:
        """The answer to the next request, and whether it is the one to hold."""
        number, self.requests = self.requests, self.requests + 1
        answer = json.dumps(openai_reply(json.loads(body), self.turns)).encode()
        return answer, number == self.slow_request

    def note(self, event: str) -> None:
        self.events.append(event)
        if event == "asked":
            self.asked.set()
        else:
            self.ended.set()


class _SlowHandler(BaseHTTPRequestHandler):
    server: _SlowServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        model = self.server.model
        answer, slow = model.reply(self.rfile.read(int(self.headers["content-length"])))
        if slow:
            model.note("asked")
            if self._client_left(time.monotonic() + model.hold_seconds):
                model.note("closed")
                return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)
        self.wfile.flush()
        if slow:
            model.note("answered")

    def _client_left(self, deadline: float) -> bool:
        """Wait until ``deadline``; True as soon as the client closes the connection."""
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.01)
            if not readable:
                continue
            try:
                if self.connection.recv(1, socket.MSG_PEEK) == b"":
                    return True
            except OSError:
                return True
        return False

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _SlowServer(ThreadingHTTPServer):
    daemon_threads = True
    model: SlowModel


@contextmanager
def slow_loopback(model: SlowModel) -> Iterator[str]:
    """Serve ``model`` on 127.0.0.1 (a free port) in a thread; yields the base URL (``/v1``)."""
    server = _SlowServer(("127.0.0.1", 0), _SlowHandler)
    server.model = model
    with _serving(server, "/v1") as url:
        yield url


async def no_sleep(seconds: float) -> None:
    return None


def make_provider(
    name: str, *, transport: httpx.AsyncBaseTransport | None = None, base: str | None = None
) -> HttpProvider:
    """One adapter, talking to ``transport`` or to the loopback server at ``base``."""
    http = HttpSettings(transport=transport, sleep=no_sleep, timeout=10)
    if name == "openai":
        url = f"{base}/v1" if base else "https://api.openai.com/v1"
        return OpenAIProvider(model="gpt-test", api_key=KEY, base_url=url, http=http)
    if name == "anthropic":
        url = base or "https://api.anthropic.com"
        return AnthropicProvider(model="claude-test", api_key=KEY, base_url=url, http=http)
    url = f"{base}/v1beta" if base else "https://generativelanguage.googleapis.com/v1beta"
    return GeminiProvider(model="gemini-test", api_key=KEY, base_url=url, http=http)


ADAPTERS = ("openai", "anthropic", "gemini")
