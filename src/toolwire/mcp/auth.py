"""OAuth 2.1 for toolwire's MCP client: the SDK's providers, a token file, failures named.

A streamable-HTTP server whose table has an ``auth`` table (:mod:`toolwire.workspace.mcp_auth`)
gets an ``httpx2`` auth (:class:`ServerAuth`) wrapping the MCP SDK's own provider, which runs
the flows the MCP authorization spec describes: protected-resource and authorization-server
metadata discovery (with the 2025-03-26 fallbacks), dynamic client registration, a client ID
metadata document or a pre-registered client, scope selection from ``WWW-Authenticate`` or
``scopes_supported``, a scope step-up on ``403 insufficient_scope``, PKCE with S256, refresh,
and the client credentials grant (``client_secret_basic`` / ``_post`` or ``private_key_jwt``).

Invariants:
- Tokens and a registered client's record live in one file per server (:class:`TokenFile`)
  under ``<data dir>/mcp-auth/``, mode 0600 in a 0700 folder, written whole (a new file
  renamed over the old). A pre-registered client's secret and a private key are never
  written: they stay in the environment variables the table names.
- No token, secret or key is in a repr, a log line or an error: every failure is an
  :class:`AuthFailure` carrying the HTTP status and the server's ``error`` /
  ``error_description``, bounded and masked (the known values first).
- A run signs nobody in: without a person (``sign_in=None``) a server that needs a sign-in
  fails with :class:`SignInNeeded`, which names ``toolwire mcp-login``. A failed sign-in is
  not retried by toolwire: the SDK authorizes at most once per request (one more for a scope
  step-up), so a server that keeps refusing costs one round each time, never a loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx2
import platformdirs
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.utils import extract_field_from_www_auth
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import AnyUrl, ValidationError

from toolwire.core.private import PRIVATE_FILE_MODE, private_dir
from toolwire.mcp.auth_errors import AuthFailure, SignInNeeded
from toolwire.mcp.sign_in import LoopbackSignIn, redirect_uri
from toolwire.workspace.mcp_auth import ResolvedAuth
from toolwire.workspace.mcp_servers import Launch

log = logging.getLogger("toolwire.mcp")

TOKEN_FOLDER = "mcp-auth"  # noqa: S105 (a folder name)
CLIENT_NAME = "toolwire"
_REFUSED = (401, 403)
# The form fields of a token request that are secrets (RFC 6749, RFC 7636, RFC 7523).
_SECRET_FIELDS = ("client_secret", "client_assertion", "code", "code_verifier", "refresh_token")


class _NoFlowDetail(logging.Filter):
    """The SDK logs a failed flow with its exception, whose message may hold what a token
    endpoint echoed (a secret, encoded credentials): the record keeps its message, and the
    failure is told by toolwire, masked (:class:`AuthFailure`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info, record.exc_text = None, None
        return True


logging.getLogger("mcp.client.auth.oauth2").addFilter(_NoFlowDetail())


def token_path(launch: Launch) -> Path:
    """The file of ``launch``'s tokens: named by the server and its URL, so two workspaces'
    servers of one name never share a sign-in."""
    assert launch.auth is not None and launch.url is not None
    folder = launch.auth.settings.tokens or Path(platformdirs.user_data_dir("toolwire"))
    digest = hashlib.sha256(launch.url.encode()).hexdigest()[:12]
    return folder / TOKEN_FOLDER / f"{launch.name}-{digest}.json"


class TokenFile:
    """The SDK's ``TokenStorage`` over one private JSON file. ``fixed`` is a pre-registered
    client's record: returned as the client, never written."""

    def __init__(self, path: Path, fixed: OAuthClientInformationFull | None = None) -> None:
        self.path = path
        self.fixed = fixed

    def __repr__(self) -> str:
        return f"<TokenFile {str(self.path)!r}>"

    async def get_tokens(self) -> OAuthToken | None:
        found = self._read().get("tokens")
        return None if found is None else _parsed(OAuthToken, found)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires = None if tokens.expires_in is None else time.time() + tokens.expires_in
        self._write(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.fixed is not None:
            return self.fixed
        found = self._read().get("client")
        return None if found is None else _parsed(OAuthClientInformationFull, found)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.fixed is None:
            self._write(client=client_info.model_dump(mode="json", exclude_none=True))

    def expires_at(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if it said."""
        value = self._read().get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    def forget(self) -> None:
        """Drop the stored tokens and client."""
        self.path.unlink(missing_ok=True)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            log.warning("the MCP sign-in file %s is unreadable; signing in afresh", self.path)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, **changes: Any) -> None:
        private_dir(self.path.parent)
        data = self._read() | changes
        fresh = self.path.with_name(f".{self.path.name}.{os.getpid()}.new")
        descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
        os.fchmod(descriptor, PRIVATE_FILE_MODE)  # the umask may have taken bits away
        with os.fdopen(descriptor, "w") as out:
            json.dump(data, out)
        os.replace(fresh, self.path)


def _parsed(model: Any, data: object) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


class _Restored:
    """A provider that also restores the stored token's expiry, so a token that expired while
    toolwire was not running is refreshed before it is sent, not after a 401."""

    context: Any

    async def _initialize(self) -> None:
        await super()._initialize()  # type: ignore[misc]  # (the SDK provider's, by the MRO)
        storage = self.context.storage
        if isinstance(storage, TokenFile) and self.context.current_tokens is not None:
            self.context.token_expiry_time = storage.expires_at()


class _AuthorizationCode(_Restored, OAuthClientProvider):
    pass


class _ClientSecret(_Restored, ClientCredentialsOAuthProvider):
    pass


class _PrivateKeyJwt(_Restored, PrivateKeyJWTOAuthProvider):
    pass


class ServerAuth(httpx2.Auth):
    """The SDK's provider for one server, whose failures are kept as :class:`AuthFailure`:
    ``failure`` says why the last refused request was refused (None when none was)."""

    requires_response_body = False  # bodies are read only of refusals, never of a stream

    def __init__(self, server: str, provider: OAuthClientProvider, hide: tuple[str, ...]) -> None:
        self.server = server
        self.provider = provider
        self.failure: AuthFailure | None = None
        self._hide = hide

    def __repr__(self) -> str:
        return f"<ServerAuth {self.server!r}>"

    def take(self) -> AuthFailure | None:
        """Why the last refused request was refused, taken once."""
        failure, self.failure = self.failure, None
        return failure

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = self.provider.async_auth_flow(request)
        refused: httpx2.Response | None = None
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                own = outgoing is request
                if response.status_code >= 400 and (own or outgoing.method == "POST"):
                    await _read_refusal(response)
                    if not own:  # a registration or token request
                        self.failure = self._failure(response, _what(outgoing), outgoing)
                refused = response if own and response.status_code in _REFUSED else None
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            # The request was answered in the end: what was refused on the way is moot.
            self.failure = None if refused is None else self._failure(
                refused, "the server refused toolwire's token")  # fmt: skip
            return
        except AuthFailure as failure:
            self.failure = failure
            raise
        except (OAuthFlowError, ValueError) as exc:  # the SDK's refusals, and its parsing
            self.failure = self.failure or AuthFailure(
                self.server, "the sign-in failed", description=f"{type(exc).__name__}: {exc}",
                hide=self._secrets())  # fmt: skip
            raise self.failure from None
        finally:
            await flow.aclose()

    def _failure(
        self, response: httpx2.Response, what: str, sent: httpx2.Request | None = None
    ) -> AuthFailure:
        error, description = _said(response)
        hide = self._secrets() + (() if sent is None else _sent_secrets(sent))
        return AuthFailure(self.server, what, status=response.status_code, error=error,
                           description=description, hide=hide)  # fmt: skip

    def _secrets(self) -> tuple[str, ...]:
        tokens = self.provider.context.current_tokens
        held = () if tokens is None else (tokens.access_token, tokens.refresh_token or "")
        return (*self._hide, *held)


def _sent_secrets(request: httpx2.Request) -> tuple[str, ...]:
    """What a token request sent that a server may echo back: its credentials (as sent, so
    ``Basic`` credentials in their encoded form) and its secret form fields."""
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    form = dict(parse_qsl(request.content.decode("utf-8", "replace")))
    fields = (form.get(name, "") for name in _SECRET_FIELDS)
    return tuple(value for value in (credentials, scheme + " " + credentials, *fields) if value)


def _what(request: httpx2.Request) -> str:
    if request.url.path.rstrip("/").endswith("register"):
        return "the authorization server refused toolwire's registration"
    return "the authorization server refused the token request"


async def _read_refusal(response: httpx2.Response) -> None:
    # Over the bound, or cut: the status alone will do.
    with contextlib.suppress(httpx2.HTTPError, httpx2.StreamError):
        await response.aread()


def _said(response: httpx2.Response) -> tuple[str | None, str | None]:
    """The OAuth ``error`` and ``error_description``: from ``WWW-Authenticate``, else the body."""
    error = extract_field_from_www_auth(response, "error")
    description = extract_field_from_www_auth(response, "error_description")
    if error is None and response.is_stream_consumed:
        try:
            body = json.loads(response.content)
        except (ValueError, httpx2.HTTPError, httpx2.StreamError):
            return None, None
        if isinstance(body, dict):
            error, description = body.get("error"), body.get("error_description")
    return (error if isinstance(error, str) else None,
            description if isinstance(description, str) else None)  # fmt: skip


def server_auth(launch: Launch, sign_in: LoopbackSignIn | None) -> ServerAuth | None:
    """The auth of ``launch``'s HTTP client (None when its server asks for none). Without
    ``sign_in`` nobody can sign in: a server that needs it fails with :class:`SignInNeeded`."""
    auth = launch.auth
    if auth is None or launch.url is None:
        return None
    storage = TokenFile(token_path(launch), _fixed_client(auth))
    if auth.settings.kind == "client_credentials":
        provider = _machine(launch.url, auth, storage)
    else:
        provider = _person(launch, auth, storage, sign_in)
    hide = tuple(s for s in (auth.client_secret, auth.private_key) if s)
    return ServerAuth(launch.name, provider, hide)


def _person(
    launch: Launch, auth: ResolvedAuth, storage: TokenFile, sign_in: LoopbackSignIn | None
) -> OAuthClientProvider:
    assert launch.url is not None
    settings = auth.settings
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri(settings.redirect_port))],
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method=settings.token_endpoint_auth,
    )
    redirect: Callable[[str], Awaitable[None]]
    callback: Callable[[], Awaitable[AuthorizationCodeResult]]
    if sign_in is None:
        redirect, callback = _refusal(launch.name, settings.source)
    else:
        redirect, callback = sign_in.redirect, sign_in.callback
    return _AuthorizationCode(launch.url, metadata, storage, redirect_handler=redirect,
                              callback_handler=callback,
                              client_metadata_url=settings.client_metadata_url)  # fmt: skip


def _refusal(
    server: str, source: str
) -> tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[AuthorizationCodeResult]]]:
    """The handlers of a run nobody can sign in for: the first one raises."""

    async def refuse(url: str) -> None:
        raise SignInNeeded(server, source)

    async def never() -> AuthorizationCodeResult:
        raise SignInNeeded(server, source)

    return refuse, never


def _machine(url: str, auth: ResolvedAuth, storage: TokenFile) -> OAuthClientProvider:
    settings = auth.settings
    assert settings.client_id is not None
    scope = " ".join(settings.scopes) or None
    with warnings.catch_warnings():
        # Without an issuer the SDK warns (it will want one); the table's docs say to give it.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if auth.private_key is not None:
            signer = SignedJWTParameters(issuer=settings.client_id, subject=settings.client_id,
                                         signing_key=auth.private_key,
                                         signing_algorithm=settings.jwt_algorithm)  # fmt: skip
            return _PrivateKeyJwt(url, storage, settings.client_id,
                                  signer.create_assertion_provider(), scope=scope,
                                  issuer=settings.issuer)  # fmt: skip
        method = settings.token_endpoint_auth
        return _ClientSecret(url, storage, settings.client_id, auth.client_secret or "",
                             token_endpoint_auth_method="client_secret_post"
                             if method == "client_secret_post" else "client_secret_basic",
                             scope=scope, issuer=settings.issuer)  # fmt: skip


def _fixed_client(auth: ResolvedAuth) -> OAuthClientInformationFull | None:
    """A pre-registered client's record (the authorization code kind's), or None."""
    settings = auth.settings
    if settings.kind != "oauth" or settings.client_id is None:
        return None
    return OAuthClientInformationFull(
        client_id=settings.client_id,
        client_secret=auth.client_secret,
        redirect_uris=[AnyUrl(redirect_uri(settings.redirect_port))],
        grant_types=["authorization_code", "refresh_token"],
        token_endpoint_auth_method=settings.token_endpoint_auth,
    )
