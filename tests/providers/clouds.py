"""Loopback stand-ins for the clouds: a model server behind a cloud's door (it answers only a
request carrying the credential and the query it expects, and says what it got otherwise), and
token endpoints of the two shapes the real credential libraries call (Azure's App Service
managed identity, a Google service account's OAuth token URI).

Every credential here is minted per test with a marker, so a test can search any output for it.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from .servers import FakeModel, Turn, _serving

DEMO_THREE_ROUNDS: list[Turn] = [
    [("list_tables", {})],
    [("get_table_schema", {"table": "products"})],
    "The shop sells products.",
]


class Clock:
    """A clock a test moves by hand (tokens expire by it)."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def minted(kind: str) -> str:
    return f"{kind}-CANARY-{uuid.uuid4().hex}"


@dataclass(slots=True)
class CloudDoor:
    """What the server lets in: each header's value and each query parameter's, exactly;
    with ``bearer_of``, an ``Authorization: Bearer`` of the newest token that list holds."""

    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    bearer_of: list[str] | None = None
    refused: list[str] = field(default_factory=list)  # what each refused request carried

    def check(self, path: str, headers: dict[str, str]) -> str | None:
        """Why the request is refused (echoing what it carried, as some servers do), or None."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(path).query).items()}
        lowered = {k.lower(): v for k, v in headers.items()}
        wanted = dict(self.headers)
        if self.bearer_of is not None:
            wanted["authorization"] = f"Bearer {self.bearer_of[-1] if self.bearer_of else '?'}"
        for name, value in wanted.items():
            if lowered.get(name) != value:
                return f"header {name} was {lowered.get(name)!r}"
        for name, value in self.query.items():
            if query.get(name) != value:
                return f"query {name} was {query.get(name)!r}"
        return None


class DoorModel(FakeModel):
    """A FakeModel behind a ``CloudDoor``; each request's path is kept whole (with its query)."""

    __slots__ = ("door",)

    def __init__(self, turns: list[Turn], door: CloudDoor) -> None:
        super().__init__(turns)
        self.door = door


class _DoorHandler(BaseHTTPRequestHandler):
    server: _DoorServer
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        model = self.server.model
        body = self.rfile.read(int(self.headers["content-length"]))
        headers = dict(self.headers)
        why = model.door.check(self.path, headers)
        if why is not None:
            model.door.refused.append(why)
            refusal = {"error": {"code": "401", "message": f"Access denied: {why}"}}
            return self._send(401, json.dumps(refusal).encode(), "application/json")
        path, asked = self.path.partition("?")[0], body
        if "/publishers/anthropic/" in path:  # Claude on Vertex: the Messages API, model in URL
            named = path.rpartition("/")[2].partition(":")[0]
            asked = json.dumps({**json.loads(body), "model": named}).encode()
            path = "/v1/messages"
        out, kind = model.respond(path, headers, asked)
        model.captured[-1].path = self.path  # keep the path and query the request came with
        model.captured[-1].body = body
        self._send(200, out, kind)

    def _send(self, status: int, out: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _DoorServer(ThreadingHTTPServer):
    daemon_threads = True
    model: DoorModel


@contextmanager
def door_loopback(model: DoorModel) -> Iterator[str]:
    """Serve ``model`` behind its door on 127.0.0.1; yields the server's root URL."""
    server = _DoorServer(("127.0.0.1", 0), _DoorHandler)
    server.model = model
    with _serving(server) as url:
        yield url


# -- token endpoints ---------------------------------------------------------------------------


@dataclass(slots=True)
class TokenIssuer:
    """Mints a new access token for each request, valid ``lifetime`` seconds; keeps them."""

    lifetime: int = 3600
    issued: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # each request's path (and query)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def mint(self, path: str) -> str:
        with self.lock:
            self.requests.append(path)
            token = minted(f"token{len(self.issued)}")
            self.issued.append(token)
            return token


class _TokenHandler(BaseHTTPRequestHandler):
    server: _TokenServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # Azure App Service managed identity (api-version 2019-08-01)
        issuer = self.server.issuer
        if self.headers.get("x-identity-header") != self.server.secret:
            return self._send(401, {"error": "bad identity header"})
        token = issuer.mint(self.path)
        expires = int(time.time()) + issuer.lifetime
        self._send(200, {"access_token": token, "expires_on": str(expires),
                         "resource": "https://cognitiveservices.azure.com",
                         "token_type": "Bearer"})  # fmt: skip

    def do_POST(self) -> None:  # a Google service account's token URI (JWT bearer grant)
        issuer = self.server.issuer
        form = parse_qs(self.rfile.read(int(self.headers["content-length"])).decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return self._send(400, {"error": "unsupported_grant_type"})
        token = issuer.mint(self.path)
        self._send(200, {"access_token": token, "expires_in": issuer.lifetime,
                         "token_type": "Bearer"})  # fmt: skip

    def _send(self, status: int, body: dict[str, Any]) -> None:
        out = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


class _TokenServer(ThreadingHTTPServer):
    daemon_threads = True
    issuer: TokenIssuer
    secret: str


@contextmanager
def token_endpoint(issuer: TokenIssuer, secret: str = "") -> Iterator[str]:
    """Serve ``issuer`` on 127.0.0.1; yields its root URL."""
    server = _TokenServer(("127.0.0.1", 0), _TokenHandler)
    server.issuer, server.secret = issuer, secret
    with _serving(server) as url:
        yield url


def managed_identity_env(root: str, secret: str) -> dict[str, str | None]:
    """The environment that makes ``DefaultAzureCredential`` ask App Service's managed
    identity at ``root`` (and no other credential: the others' variables unset)."""
    unset = ("AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_USERNAME",
             "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_FEDERATED_TOKEN_FILE", "MSI_ENDPOINT",
             "MSI_SECRET", "IMDS_ENDPOINT", "IDENTITY_SERVER_THUMBPRINT",
             "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN")  # fmt: skip
    return {**dict.fromkeys(unset), "IDENTITY_ENDPOINT": f"{root}/msi/token",
            "IDENTITY_HEADER": secret}  # fmt: skip


def service_account_file(folder: Path, token_root: str, project: str = "tw-adc-project") -> Path:
    """A service-account ADC file (a fresh RSA key) whose token URI is ``token_root``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()  # fmt: skip
    path = folder / "adc.json"
    path.write_text(json.dumps({
        "type": "service_account", "project_id": project, "private_key_id": "k1",
        "private_key": pem, "client_email": f"toolwire@{project}.iam.gserviceaccount.com",
        "client_id": "1", "token_uri": f"{token_root}/token",
    }))  # fmt: skip
    return path


@dataclass(slots=True)
class FakeEntraCredential:
    """What azure-identity's credentials are: ``get_token`` gives a token and its expiry. Each
    call mints a new token lasting ``lifetime`` seconds of ``clock``."""

    lifetime: float = 3600.0
    clock: Any = time.time
    scopes: list[tuple[str, ...]] = field(default_factory=list)
    issued: list[str] = field(default_factory=list)

    def get_token(self, *scopes: str, **kwargs: Any) -> Any:
        from azure.core.credentials import AccessToken

        self.scopes.append(scopes)
        token = minted(f"entra{len(self.issued)}")
        self.issued.append(token)
        return AccessToken(token, int(self.clock() + self.lifetime))


def google_credentials(lifetime: float = 3600.0, clock: Any = time.time) -> tuple[Any, list[str]]:
    """google-auth's own ``Credentials`` with a refresh handler that mints a token lasting
    ``lifetime`` seconds of ``clock``; and the list of tokens it minted."""
    from google.oauth2.credentials import Credentials

    issued: list[str] = []

    def refresh(request: Any, scopes: Any) -> tuple[str, datetime]:
        issued.append(minted(f"google{len(issued)}"))
        expiry = datetime.fromtimestamp(clock() + lifetime, UTC).replace(tzinfo=None)
        return issued[-1], expiry  # google-auth keeps expiries as naive UTC

    credentials = Credentials(token=None, refresh_handler=refresh)  # type: ignore[no-untyped-call]
    return credentials, issued
