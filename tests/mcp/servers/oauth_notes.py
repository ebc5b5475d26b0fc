"""An MCP server over streamable HTTP on 127.0.0.1:PORT that is its own OAuth 2.1
authorization server, as the MCP authorization spec describes one.

Run as ``python oauth_notes.py PORT CLIENT_SECRET``. ``/mcp`` wants a bearer token it issued
(else 401 with ``WWW-Authenticate`` naming its protected-resource metadata). It registers
clients (``/register``), answers ``/authorize`` at once with a redirect carrying a code (a
person who always says yes), and ``/token`` grants ``authorization_code`` (PKCE checked),
``refresh_token`` and ``client_credentials`` (for ``machine`` with ``CLIENT_SECRET``, sent
basic). A refused token request says why, and echoes what it was sent, as careless servers do.
``POST /forget`` revokes every token it issued.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import sys
from urllib.parse import urlencode

import uvicorn
from mcp.server import MCPServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

mcp = MCPServer("oauth-notes")
ISSUED: set[str] = set()
CODES: dict[str, str] = {}  # code -> PKCE challenge
REFRESH: set[str] = set()


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def base(request: Request) -> str:
    return f"http://{request.headers['host']}"


async def resource(request: Request) -> Response:
    return JSONResponse({"resource": base(request) + "/mcp",
                         "authorization_servers": [base(request)]})  # fmt: skip


async def metadata(request: Request) -> Response:
    root = base(request)
    return JSONResponse({
        "issuer": root, "authorization_endpoint": root + "/authorize",
        "token_endpoint": root + "/token", "registration_endpoint": root + "/register",
        "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
    })  # fmt: skip


async def register(request: Request) -> Response:
    body = await request.json()
    return JSONResponse({"client_id": "registered-" + secrets.token_hex(4),
                         "redirect_uris": body["redirect_uris"],
                         "token_endpoint_auth_method": "none"}, status_code=201)  # fmt: skip


async def authorize(request: Request) -> Response:
    code = secrets.token_hex(8)
    CODES[code] = request.query_params["code_challenge"]
    query = urlencode({"code": code, "state": request.query_params["state"]})
    return RedirectResponse(f"{request.query_params['redirect_uri']}?{query}", status_code=302)


def issued() -> Response:
    access, refresh = "at-" + secrets.token_hex(12), "rt-" + secrets.token_hex(12)
    ISSUED.add(access)
    REFRESH.add(refresh)
    return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                         "refresh_token": refresh})  # fmt: skip


def refused(error: str, sent: str) -> Response:
    return JSONResponse({"error": error, "error_description": f"refused what was sent: {sent}"},
                        status_code=401)  # fmt: skip


async def token(request: Request) -> Response:
    form = await request.form()
    grant = form.get("grant_type")
    if grant == "authorization_code":
        verifier = str(form.get("code_verifier", ""))
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        if CODES.pop(str(form.get("code")), None) != challenge.decode().rstrip("="):
            return refused("invalid_grant", verifier)
        return issued()
    if grant == "refresh_token" and form.get("refresh_token") in REFRESH:
        return issued()
    if grant == "client_credentials":
        sent = request.headers.get("authorization", "")
        expected = base64.b64encode(f"machine:{SECRET}".encode()).decode()
        return issued() if sent == f"Basic {expected}" else refused("invalid_client", sent)
    return refused("unsupported_grant_type", str(grant))


async def forget(request: Request) -> Response:
    ISSUED.clear()
    REFRESH.clear()
    return Response(status_code=204)


class RequireToken:
    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            sent = dict(scope["headers"]).get(b"authorization", b"").decode()
            if sent.removeprefix("Bearer ") not in ISSUED:
                host = dict(scope["headers"])[b"host"].decode()
                challenge = (f'Bearer resource_metadata="http://{host}/.well-known/'
                             'oauth-protected-resource/mcp"')  # fmt: skip
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"www-authenticate", challenge.encode())]})  # fmt: skip
                await send({"type": "http.response.body", "body": b""})
                return
        await self.inner(scope, receive, send)


SECRET = ""


def main() -> None:
    global SECRET
    port, SECRET = int(sys.argv[1]), sys.argv[2]
    served = mcp.streamable_http_app()
    app = Starlette(routes=[
        Route("/.well-known/oauth-protected-resource/mcp", resource),
        Route("/.well-known/oauth-authorization-server", metadata),
        Route("/register", register, methods=["POST"]),
        Route("/authorize", authorize),
        Route("/token", token, methods=["POST"]),
        Route("/forget", forget, methods=["POST"]),
        Mount("/", RequireToken(served)),
    ], lifespan=lambda _: served.router.lifespan_context(served))  # type: ignore[arg-type]  # fmt: skip
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
