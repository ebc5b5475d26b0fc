"""``toolwire mcp --http``: the served tools over streamable HTTP, behind a bearer token.

- The endpoint is ``/mcp`` on loopback by default. Bound to any loopback address (``127.0.0.2``
  too, where the SDK would check nothing), a request whose ``Host`` is not a loopback name of
  this server with its port is refused with 421, and one whose ``Origin`` is not such an
  origin with 403, before the token is looked at (DNS rebinding): the rule of
  :mod:`toolwire.core.loopback`, the inspector's too. The SDK's own check, which allows any
  port, is off: one rule, one owner.
- Every request needs ``Authorization: Bearer <token>``, compared in constant time; anything
  else is a 401 with a JSON body saying what is missing, before the SDK sees the request.
- Sessions resume: a host whose event stream ends reconnects with ``Last-Event-ID`` and is sent
  what it missed (:mod:`toolwire.mcp.events`).
- The token is ``$TOOLWIRE_MCP_TOKEN`` when set (at least ``MIN_TOKEN_CHARS`` characters), else
  a fresh one, printed once on stderr when the server starts.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from toolwire.core.errors import ConfigError
from toolwire.core.loopback import allowed_host, allowed_origin, is_loopback

TOKEN_VARIABLE = "TOOLWIRE_MCP_TOKEN"  # noqa: S105  (a variable's name, not a token)
TOKEN_BYTES = 32  # 256 bits, like the inspector's token
MIN_TOKEN_CHARS = 16  # a shorter token could be guessed over loopback
ENDPOINT = "/mcp"
MISSING = "this MCP server needs its token: Authorization: Bearer <token>"
WRONG = "the token is wrong"
MISDIRECTED = "this MCP server answers only at a loopback name of its own, with its own port"
CROSS_SITE = "refused: this request came from another site"


def token_from(environ: Mapping[str, str] | None = None) -> tuple[str, bool]:
    """The token, and whether it was made here (then it must be shown); ``ConfigError`` for a
    token in the environment too short to be safe."""
    given = (os.environ if environ is None else environ).get(TOKEN_VARIABLE, "").strip()
    if not given:
        return secrets.token_urlsafe(TOKEN_BYTES), True
    if len(given) < MIN_TOKEN_CHARS:
        raise ConfigError(f"${TOKEN_VARIABLE} must be at least {MIN_TOKEN_CHARS} characters long")
    return given, False


class BearerToken:
    """Pure ASGI, so the SDK's event streams pass through unbuffered."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        await _unauthorized(send, refusal)

    def _refusal(self, scope: Scope) -> str | None:
        header = next((v for k, v in scope.get("headers", []) if k == b"authorization"), b"")
        scheme, _, given = header.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not given.strip():
            return MISSING
        if not secrets.compare_digest(given.strip().encode("latin-1"), self.expected):
            return WRONG
        return None


class LoopbackOnly:
    """Pure ASGI: the ``Host`` and ``Origin`` rule of a server bound to loopback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        server, scheme = scope.get("server"), scope.get("scheme", "http")
        host, origin = headers.get(b"host"), headers.get(b"origin")
        if host is None or not allowed_host(host.decode("latin-1"), server, scheme):
            await _refused(send, 421, "misdirected_request", MISDIRECTED)
        elif origin is not None and not allowed_origin(origin.decode("latin-1"), server):
            await _refused(send, 403, "forbidden", CROSS_SITE)
        else:
            await self.app(scope, receive, send)


async def _unauthorized(send: Send, message: str) -> None:
    extra = ((b"www-authenticate", b'Bearer error="invalid_token"'),)
    await _refused(send, 401, "invalid_token", message, extra)


async def _refused(
    send: Send, status: int, error: str, message: str, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = json.dumps({"error": error, "error_description": message}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def http_app(server: Any, token: str, host: str) -> ASGIApp:
    """The SDK's streamable-HTTP transport for ``server`` at ``ENDPOINT``, each session with an
    event store of its own (:mod:`toolwire.mcp.events`), behind the token, and, bound to
    loopback, behind the ``Host`` and ``Origin`` rule first."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    from toolwire.mcp.events import for_each_session

    checks_off = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    manager = for_each_session(server, security_settings=checks_off)
    app: ASGIApp = Starlette(
        routes=[Route(ENDPOINT, endpoint=StreamableHTTPASGIApp(manager))],
        lifespan=lambda _: manager.run(),
    )
    guarded: ASGIApp = BearerToken(app, token)
    return LoopbackOnly(guarded) if is_loopback(host) else guarded


def endpoint_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{ENDPOINT}"
