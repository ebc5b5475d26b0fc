"""Transport security of the inspector: headers on every response, the token, the origin check.

- Every response carries a strict Content-Security-Policy (no inline script or style, no
  framing, no form posts, fetches only to this origin; Trusted Types with no policy, so no
  string ever reaches an HTML or script sink: the page builds DOM nodes only), ``nosniff``
  and ``no-referrer``.
- Every ``/api`` call needs ``Authorization: Bearer <token>``, compared in constant time.
- A state-changing call is refused when its ``Origin`` (or, without one, ``Sec-Fetch-Site:
  cross-site``) says it came from another site. No CORS headers are ever sent.
- A request whose ``Host`` is not a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``) or
  the loopback address it arrived at (``127.0.0.2`` for an inspector bound there), with the
  port it arrived on, is refused with 421 before any routing, page included, and so is one
  whose ``Origin`` is not such a host (403): a web page whose domain resolves to loopback (DNS
  rebinding) is never served. The rule is :mod:`toolwire.core.loopback`'s, the MCP endpoint's
  too. ``allow_remote`` lifts this for a server meant to be reached by other names.
- A request body larger than ``MAX_BODY_BYTES`` is refused with 413, whether its length is
  declared or it arrives chunked.
- An unexpected exception becomes a 500 in the API's error shape, with the same headers.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolwire.core.loopback import allowed_host, allowed_origin
from toolwire.inspector.errors import INTERNAL_MESSAGE, ApiError, error_response

log = logging.getLogger("toolwire.inspector")

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    "require-trusted-types-for 'script'; trusted-types 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
)
MAX_BODY_BYTES = 2_000_000  # a prompt plus arguments; more is a mistake or an attack
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
BODY_TOO_LARGE = f"the request body is larger than {MAX_BODY_BYTES} bytes"
MISDIRECTED = (
    "this inspector answers only at 127.0.0.1, localhost, [::1] or the loopback address it is "
    "bound to, with its own port; start it with --allow-remote to serve it under another name"
)
CROSS_SITE = "refused: this request came from another site"


class SecurityMiddleware:
    """Pure ASGI (streaming stays unbuffered): headers, body cap, last-resort 500."""

    def __init__(self, app: ASGIApp, *, allow_remote: bool = False) -> None:
        self.app = app
        self.allow_remote = allow_remote

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        if not self.allow_remote and not is_loopback_host(scope):
            await error_response(421, MISDIRECTED)(scope, receive, send_with_headers)
            return
        if not self.allow_remote and not _loopback_origin(scope):
            await error_response(403, CROSS_SITE)(scope, receive, send_with_headers)
            return
        if _declared_length(scope) > MAX_BODY_BYTES:
            await error_response(413, BODY_TOO_LARGE)(scope, receive, send_with_headers)
            return
        try:
            await self.app(scope, _capped(receive), send_with_headers)
        except Exception:
            log.exception("inspector request failed: %s %s", scope["method"], scope["path"])
            if not started:
                await error_response(500, INTERNAL_MESSAGE)(scope, receive, send_with_headers)


def _declared_length(scope: Scope) -> int:
    for key, value in scope.get("headers", []):
        if key == b"content-length":
            return int(value) if value.isdigit() else MAX_BODY_BYTES + 1
    return 0


def is_loopback_host(scope: Scope) -> bool:
    """Whether the ``Host`` header names this server by a loopback name and its own port."""
    host = _header(scope, b"host")
    return host is not None and allowed_host(host, scope.get("server"), scope.get("scheme", "http"))


def _loopback_origin(scope: Scope) -> bool:
    """Whether the request has no ``Origin``, or a loopback origin of this server."""
    origin = _header(scope, b"origin")
    return origin is None or allowed_origin(origin, scope.get("server"))


def _header(scope: Scope, name: bytes) -> str | None:
    value = next((v for k, v in scope.get("headers", []) if k == name), None)
    return None if value is None else value.decode("latin-1")


def _capped(receive: Receive) -> Receive:
    """Refuse a chunked body that grows past the cap (no Content-Length to check up front).

    The refusal is an ``HTTPException``: FastAPI passes that through its body parsing, where
    any other exception would become a 400.
    """
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > MAX_BODY_BYTES:
            raise HTTPException(413, BODY_TOO_LARGE)
        return message

    return wrapped


def token_guard(token: str) -> Callable[[Request], None]:
    """The dependency every ``/api`` route has: the admin token, then the origin check."""
    expected = token.encode()

    def guard(request: Request) -> None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not given:
            raise ApiError(401, "this API needs the admin token: Authorization: Bearer <token>")
        if not secrets.compare_digest(given.strip().encode(), expected):
            raise ApiError(401, "the admin token is wrong")
        if request.method not in SAFE_METHODS and _cross_site(request):
            raise ApiError(403, CROSS_SITE)

    return guard


def _cross_site(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is not None:
        return origin != own_origin(request)
    return request.headers.get("sec-fetch-site", "") == "cross-site"


def own_origin(request: Request) -> str:
    """The origin this server was reached at, as a browser would write it."""
    return f"{request.url.scheme}://{request.url.netloc}"
