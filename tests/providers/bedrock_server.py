"""A fake Bedrock runtime over loopback HTTP: it checks every request's SigV4 signature (computed
again with botocore from the same fake credentials) and answers Converse with JSON and
ConverseStream with real AWS event-stream frames (prelude, CRC32s, typed headers), encoded here
from the specification rather than by the parser under test.

A script is a list of turns, as in :mod:`tests.providers.servers`: turn ``n`` is played when the
request holds ``n`` assistant turns. A turn may also be a whole list of Converse content blocks
(``Blocks``) with its stop reason, for reasoning and other shapes. ``failures`` are answered, in
order, before any turn: an AWS error (status, ``x-amzn-ErrorType``, message) or raw stream bytes.
"""

from __future__ import annotations

import hmac
import json
import re
import struct
import threading
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

from .servers import Captured

ACCESS_KEY = "AKIAZ5BEDROCKFAKE000"  # an access key id's shape: AKIA and 16 more
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYFAKESECRET"  # 40 characters, as AWS's are
SESSION_TOKEN = "IQoJb3JpZ2luX2VjEFAKE" + "SessionTokenCanary" * 8
REGION = "us-east-1"
CREDENTIALS = ReadOnlyCredentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN)
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    "AWS_SESSION_TOKEN": SESSION_TOKEN,
    "AWS_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",  # never ask an instance's metadata service
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
}
_AUTH = re.compile(
    r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)/"
    r"(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<signed>[a-z0-9;-]+), "
    r"Signature=(?P<signature>[0-9a-f]{64})"
)


@dataclass(frozen=True, slots=True)
class Blocks:
    """A turn given as Converse content blocks, with its stop reason."""

    content: list[dict[str, Any]]
    stop: str = "end_turn"


Turn = str | list[tuple[str, dict[str, Any]]] | Blocks


@dataclass(frozen=True, slots=True)
class AwsError:
    status: int
    error_type: str
    message: str


@dataclass(slots=True)
class FakeBedrock:
    """The scripted model behind the fake runtime; every request is kept."""

    turns: Sequence[Turn] = ()
    failures: list[AwsError | bytes] = field(default_factory=list)
    captured: list[Captured] = field(default_factory=list)
    credentials: ReadOnlyCredentials = CREDENTIALS
    region: str = REGION  # the region a signature must be scoped to
    lock: threading.Lock = field(default_factory=threading.Lock)

    def blocks(self, body: dict[str, Any]) -> Blocks:
        done = sum(1 for m in body["messages"] if m["role"] == "assistant")
        turn = self.turns[done] if done < len(self.turns) else "script exhausted"
        if isinstance(turn, Blocks):
            return turn
        if isinstance(turn, str):
            return Blocks([{"text": turn}])
        uses = [{"toolUse": {"toolUseId": f"tooluse_{done}_{n}", "name": name, "input": args}}
                for n, (name, args) in enumerate(turn)]  # fmt: skip
        return Blocks(uses, "tool_use")


USAGE = {"inputTokens": 11, "outputTokens": 7, "totalTokens": 18}


def converse_reply(turn: Blocks) -> dict[str, Any]:
    """A ``ConverseResponse``."""
    return {
        "output": {"message": {"role": "assistant", "content": turn.content}},
        "stopReason": turn.stop,
        "usage": USAGE,
        "metrics": {"latencyMs": 12},
    }


def stream_events(turn: Blocks) -> list[tuple[str, dict[str, Any]]]:
    """The ``ConverseStreamOutput`` events of ``turn``: each text and tool input in two pieces."""
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(turn.content):
        events += _block_events(index, block)
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    events.append(("messageStop", {"stopReason": turn.stop}))
    events.append(("metadata", {"usage": USAGE, "metrics": {"latencyMs": 12}}))
    return events


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    def delta(value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return "contentBlockDelta", {"contentBlockIndex": index, "delta": value}

    if "text" in block:
        return [delta({"text": piece}) for piece in _halves(block["text"])]
    if "toolUse" in block:
        use = block["toolUse"]
        start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
        pieces = _halves(json.dumps(use["input"]))
        return [("contentBlockStart", {"contentBlockIndex": index, "start": start})] + [
            delta({"toolUse": {"input": piece}}) for piece in pieces
        ]
    reasoning = block["reasoningContent"]
    if "redactedContent" in reasoning:
        return [delta({"reasoningContent": {"redactedContent": reasoning["redactedContent"]}})]
    said = reasoning["reasoningText"]
    out = [delta({"reasoningContent": {"text": piece}}) for piece in _halves(said["text"])]
    return [*out, delta({"reasoningContent": {"signature": said["signature"]}})]


def _halves(text: str) -> list[str]:
    return [text[: len(text) // 2], text[len(text) // 2 :]]


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: total and headers lengths, their CRC32, the headers (name
    length, name, type 7 for a string, value length, value), the payload, the CRC32 of it all."""
    encoded = b"".join(
        struct.pack("!B", len(name)) + name.encode() + struct.pack("!BH", 7, len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )  # fmt: skip
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack("!II", total, len(encoded))
    prelude += struct.pack("!I", zlib.crc32(prelude))
    message = prelude + encoded + payload
    return message + struct.pack("!I", zlib.crc32(message))


def event_frame(name: str, data: dict[str, Any]) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, json.dumps(data).encode())


def exception_frame(error_type: str, message: str) -> bytes:
    headers = {":exception-type": error_type, ":content-type": "application/json",
               ":message-type": "exception"}  # fmt: skip
    return frame(headers, json.dumps({"message": message}).encode())


def signature_problem(
    path: str,
    headers: dict[str, str],
    body: bytes,
    credentials: ReadOnlyCredentials,
    region: str = REGION,
) -> str | None:
    """Why the request's SigV4 signature is not the one botocore computes; None when it is."""
    match = _AUTH.fullmatch(headers.get("authorization", ""))
    if match is None:
        return "no SigV4 Authorization header"
    if match["key"] != credentials.access_key:
        return "The security token included in the request is invalid."
    if (match["region"], match["service"]) != (region, "bedrock"):
        return f"Credential should be scoped to {region}/bedrock"
    if headers.get("x-amz-security-token") != credentials.token:
        return "The security token included in the request is invalid."
    signed = match["signed"].split(";")
    if not {"host", "x-amz-date", "x-amz-security-token"} <= set(signed):
        return f"SignedHeaders {match['signed']} leaves out what must be signed"
    request = AWSRequest(method="POST", url=f"http://{headers['host']}{path}", data=body,
                         headers={name: headers.get(name, "") for name in signed})  # fmt: skip
    request.context["timestamp"] = headers.get("x-amz-date", "")
    auth = SigV4Auth(credentials, "bedrock", region)
    expected = auth.signature(
        auth.string_to_sign(request, auth.canonical_request(request)), request
    )
    if not hmac.compare_digest(expected, match["signature"]):
        return (
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method."
        )
    return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        model = self.server.model
        body = self.rfile.read(int(self.headers["content-length"]))
        headers = {k.lower(): v for k, v in self.headers.items()}
        with model.lock:
            model.captured.append(Captured(self.path, headers, body))
            failure = model.failures.pop(0) if model.failures else None
        problem = signature_problem(self.path, headers, body, model.credentials, model.region)
        if problem is not None:
            self._error(AwsError(403, "InvalidSignatureException", problem))
        elif isinstance(failure, AwsError):
            self._error(failure)
        elif isinstance(failure, bytes):
            self._send(200, "application/vnd.amazon.eventstream", failure)
        else:
            self._answer(json.loads(body), model.blocks(json.loads(body)))

    def _answer(self, request: dict[str, Any], turn: Blocks) -> None:
        if self.path.endswith("/converse-stream"):
            frames = b"".join(event_frame(n, d) for n, d in stream_events(turn))
            self._send(200, "application/vnd.amazon.eventstream", frames)
        elif self.path.endswith("/converse"):
            self._send(200, "application/json", json.dumps(converse_reply(turn)).encode())
        else:
            self._error(AwsError(404, "UnknownOperationException", f"no operation {self.path}"))

    def _error(self, error: AwsError) -> None:
        body = json.dumps({"message": error.message}).encode()
        kind = f"{error.error_type}:http://internal.amazon.com/coral/com.amazon.coral.service/"
        self._send(error.status, "application/json", body, {"x-amzn-ErrorType": kind})

    def _send(
        self, status: int, kind: str, body: bytes, extra: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.send_header("x-amzn-RequestId", "00000000-0000-4000-8000-000000000000")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: FakeBedrock


@contextmanager
def bedrock_loopback(model: FakeBedrock) -> Iterator[str]:
    """Serve ``model`` on 127.0.0.1 (a free port) in a thread; yields the base URL."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.model = model
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
