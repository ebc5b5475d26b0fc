"""The Gemini wire judged by ``google-genai``'s own types, and a loopback Gemini built on them.

``validate_request`` checks a request body against the SDK's pydantic models under their REST
(camelCase) names: a key the SDK does not know, a snake_case spelling, or a wrong type fails.
Response fixtures are SDK models dumped in the REST JSON shape (thought signatures in the
standard base64 the REST API sends). ``GeminiServer`` answers over real loopback HTTP, whole or
as server-sent events split the way the API streams: text in pieces, a text part's signature on
a last, empty piece, each call whole with its signature, the usage totals on the last chunk.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from google.genai import types
from pydantic import TypeAdapter, ValidationError

from toolwire import ChatMessage, CompletionRequest, ToolCall
from toolwire.core.messages import ProviderState
from toolwire.providers.base import Reasoning
from toolwire.providers.gemini import GeminiProvider

from .conversation import PLAIN, REQUEST, TOOLS
from .servers import KEY

REQUEST_FIELDS: dict[str, Any] = {
    "contents": list[types.Content],
    "systemInstruction": types.Content,
    "tools": list[types.Tool],
    "toolConfig": types.ToolConfig,
    "generationConfig": types.GenerationConfig,
}
TEXT_PIECE = 4  # characters per streamed text piece: several pieces per part in every fixture


def validate_request(body: dict[str, Any]) -> None:
    """Fail unless every field of ``body`` is what the SDK's types say, under its REST name."""
    unknown = body.keys() - REQUEST_FIELDS.keys()
    assert not unknown, f"fields the API does not take: {sorted(unknown)}"
    assert body.get("contents"), "contents is required"
    for key, value in body.items():
        adapter: TypeAdapter[Any] = TypeAdapter(REQUEST_FIELDS[key])
        model = adapter.validate_json(json.dumps(value))
        again = adapter.dump_python(model, mode="json", by_alias=True, exclude_none=True)
        # The round trip through the SDK's names refuses snake_case spellings and coercions.
        assert rest_json(again) == value, key


def rest_json(value: Any) -> Any:
    """The SDK's JSON with thought signatures in standard base64, as the REST API sends them."""
    if isinstance(value, list):
        return [rest_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: rest_json(v) for k, v in value.items()}
    if isinstance(out.get("thoughtSignature"), str):
        raw = base64.urlsafe_b64decode(out["thoughtSignature"])
        out["thoughtSignature"] = base64.b64encode(raw).decode()
    return out


def signature(n: int) -> bytes:
    return bytes([0xFB, 0xFF, n]) * 8  # bytes whose base64 differs between the two alphabets


def response(
    parts: list[types.Part],
    *,
    finish: str | None = "STOP",
    usage: types.GenerateContentResponseUsageMetadata | None = None,
    finish_message: str | None = None,
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` body as the REST API sends it."""
    candidate = types.Candidate(
        content=types.Content(role="model", parts=parts),
        finish_reason=types.FinishReason(finish) if finish else None,
        finish_message=finish_message,
        index=0,
    )
    model = types.GenerateContentResponse(
        candidates=[candidate],
        usage_metadata=usage or default_usage(),
        model_version="gemini-3-pro-preview",
        response_id="resp-1",
    )
    return dump(model)


def dump(model: types.GenerateContentResponse) -> dict[str, Any]:
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dict(rest_json(dumped))


def default_usage() -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=11, candidates_token_count=7, thoughts_token_count=5,
        total_token_count=23,
    )  # fmt: skip


def call(name: str, args: dict[str, Any], *, id: str | None = None, sig: int | None = None
         ) -> types.Part:  # fmt: skip
    return types.Part(
        function_call=types.FunctionCall(name=name, args=args, id=id),
        thought_signature=None if sig is None else signature(sig),
    )


def said(text: str, *, sig: int | None = None, thought: bool | None = None) -> types.Part:
    return types.Part(
        text=text, thought=thought, thought_signature=None if sig is None else signature(sig)
    )


def chunks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """``body`` as the stream would send it, each chunk a valid ``GenerateContentResponse``."""
    if not body.get("candidates"):
        return [body]
    candidate = body["candidates"][0]
    pieces = [p for part in candidate["content"]["parts"] for p in split_part(part)]
    head = {k: v for k, v in body.items() if k in ("modelVersion", "responseId")}
    early = {"promptTokenCount": body["usageMetadata"].get("promptTokenCount", 0)}
    out = []
    for n, piece in enumerate(pieces):
        chunk_candidate: dict[str, Any] = {"content": {"role": "model", "parts": [piece]}}
        if n == len(pieces) - 1:
            chunk_candidate.update({k: v for k, v in candidate.items() if k != "content"})
        usage = body["usageMetadata"] if n == len(pieces) - 1 else early
        out.append({**head, "candidates": [chunk_candidate], "usageMetadata": usage})
    if not pieces:
        out.append(body)
    for chunk in out:
        types.GenerateContentResponse.model_validate_json(json.dumps(chunk))
    return out


def split_part(part: dict[str, Any]) -> list[dict[str, Any]]:
    if "text" not in part:
        return [part]
    flag = {"thought": True} if part.get("thought") else {}
    text = part["text"]
    out = [{"text": text[i : i + TEXT_PIECE], **flag} for i in range(0, len(text), TEXT_PIECE)]
    if "thoughtSignature" in part:
        out.append({"text": "", **flag, "thoughtSignature": part["thoughtSignature"]})
    return out or [part]


@dataclass(slots=True)
class GeminiServer:
    """Plays ``turns`` (REST response bodies) in order and records each request."""

    turns: list[dict[str, Any]]
    paths: list[str] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, path: str, body: bytes) -> tuple[str, bytes]:
        self.paths.append(path)
        self.bodies.append(json.loads(body))
        turn = self.turns[min(len(self.bodies), len(self.turns)) - 1]
        if path.endswith(":streamGenerateContent?alt=sse"):
            events = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks(turn))
            return "text/event-stream", events.encode()
        return "application/json", json.dumps(turn).encode()


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        kind, out = self.server.gemini.answer(self.path, body)
        self.send_response(200)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    gemini: GeminiServer


@contextmanager
def serving(gemini: GeminiServer, model: str = "gemini-3-pro-preview") -> Iterator[GeminiProvider]:
    """A provider talking to ``gemini`` on 127.0.0.1."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.gemini = gemini
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1beta"
        yield GeminiProvider(model=model, api_key=KEY, base_url=base)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# The validator itself must be able to fail.


@pytest.mark.parametrize(
    "body",
    [
        {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "toolChoice": "none"},
        {"contents": [{"role": "user", "parts": [{"text": "x", "cacheControl": {}}]}]},
        {"contents": [{"role": "model", "parts": [{"function_call": {"name": "a"}}]}]},
        {"contents": [{"role": "model", "parts": [{"functionCall": {"name": "a", "args": []}}]}]},
        {"contents": [{"role": "user", "parts": [{"text": "x"}]}],
         "generationConfig": {"thinkingConfig": {"thinkingLevel": "SOMETIMES"}}},
        {"contents": [{"role": "user", "parts": [{"text": "x"}]}],
         "generationConfig": {"maxOutputTokens": "many"}},
        {"contents": []},
    ],
)  # fmt: skip
def test_the_validator_refuses_what_the_sdk_refuses(body: dict[str, Any]) -> None:
    with pytest.raises((AssertionError, ValidationError)):
        validate_request(body)


def test_fixtures_carry_standard_base64_signatures() -> None:
    body = response([call("clock", {}, sig=1)])
    part = body["candidates"][0]["content"]["parts"][0]
    assert part["thoughtSignature"] == base64.b64encode(signature(1)).decode()
    assert "+" in part["thoughtSignature"] or "/" in part["thoughtSignature"]


# Every body the adapter encodes is one the SDK accepts.

STATE = ProviderState(
    "gemini",
    {
        "parts": [
            {"text": "Weighing it.", "thought": True},
            {"text": "Checking.", "thoughtSignature": base64.b64encode(signature(2)).decode()},
            {"functionCall": {"id": "fc-1", "name": "weather", "args": {"city": "Oslo"}},
             "thoughtSignature": base64.b64encode(signature(3)).decode()},
            {"functionCall": {"name": "add", "args": {"a": 2}}},
        ]
    },
)  # fmt: skip
REPLAYED = CompletionRequest(
    messages=(
        ChatMessage.user("Weather?"),
        ChatMessage.assistant(
            "Checking.",
            [ToolCall("fc-1", "weather", '{"city":"Oslo"}'), ToolCall("call_x", "add", "{")],
            STATE,
        ),
        ChatMessage.tool_result("fc-1", '{"temp": 3}'),
        ChatMessage.tool_result("call_x", "no", is_error=True),
    ),
    tools=TOOLS,
)


@pytest.mark.parametrize(
    ("model", "request_"),
    [
        ("gemini-2.5-flash", REQUEST),
        ("gemini-2.5-flash", PLAIN),
        ("gemini-2.5-flash", REPLAYED),
        ("gemini-2.5-pro", CompletionRequest(messages=REQUEST.messages, tools=TOOLS,
                                             tool_choice="none")),
        ("gemini-2.5-pro", CompletionRequest(messages=PLAIN.messages,
                                             reasoning=Reasoning(budget_tokens=2048))),
        ("gemini-3-pro-preview", CompletionRequest(messages=REPLAYED.messages, tools=TOOLS,
                                                   reasoning=Reasoning("low"))),
        ("gemini-3-flash-preview", CompletionRequest(messages=PLAIN.messages,
                                                     reasoning=Reasoning("high"))),
    ],
)  # fmt: skip
def test_every_encoded_body_is_valid_for_the_sdk(model: str, request_: CompletionRequest) -> None:
    validate_request(GeminiProvider(model=model, api_key=KEY).encode(request_))
