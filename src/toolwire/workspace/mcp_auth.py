"""How toolwire signs in to a streamable-HTTP MCP server: one ``[mcp_servers.NAME.auth]`` table.

Two kinds, both OAuth 2.1 as the MCP authorization spec has it (the SDK runs the flows, see
:mod:`toolwire.mcp.auth`):

- ``kind = "oauth"``: the authorization code grant with PKCE, for a server a person signs in
  to. The sign-in happens once, with ``toolwire mcp-login NAME``; runs then use (and refresh)
  the stored tokens. Without ``client_id`` toolwire registers itself with the authorization
  server (dynamic client registration), or names itself by ``client_metadata_url`` when the
  server takes client ID metadata documents; with one it is a pre-registered client
  (``client_secret_env`` and ``token_endpoint_auth`` when it has a secret). The sign-in returns
  to ``http://127.0.0.1:<redirect_port>/callback``. The scopes are the ones the server asks for.
- ``kind = "client_credentials"``: a machine client with ``client_id`` and a secret
  (``client_secret_env``, sent ``client_secret_basic`` or ``client_secret_post``) or a private
  key (``private_key_env``, a PEM, for ``private_key_jwt`` signed with ``jwt_algorithm``);
  ``scopes`` are asked for; ``issuer`` names the authorization server the credentials belong
  to, and they are sent nowhere else.

Secrets never sit in the file: ``client_secret_env`` and ``private_key_env`` name the
environment variables holding them, read when the server starts (:meth:`McpAuth.resolve`), so
a missing one is an error naming the variable. :class:`ResolvedAuth` holds the values and shows
none of them in its repr. This module imports no part of the MCP SDK.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolwire.core.errors import ConfigError
from toolwire.workspace.maps import http_url

AuthKind = Literal["oauth", "client_credentials"]
TokenEndpointAuth = Literal["none", "client_secret_basic", "client_secret_post"]
# Beside the inspector's 8765 and toolwire mcp's 8766: where a sign-in's browser comes back to.
DEFAULT_REDIRECT_PORT = 8767
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SCOPE = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")  # a scope token (RFC 6749 §3.3)
JWT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384",
                  "ES512", "EdDSA")  # fmt: skip
_OAUTH_ONLY = ("client_metadata_url", "redirect_port")
_MACHINE_ONLY = ("private_key_env", "jwt_algorithm", "issuer", "scopes")


class McpAuthSettings(BaseModel):
    """One ``[mcp_servers.NAME.auth]`` table as written; checked further by :func:`mcp_auth`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    kind: AuthKind
    client_id: str | None = None
    client_secret_env: str | None = None
    token_endpoint_auth: TokenEndpointAuth | None = None
    client_metadata_url: str | None = None
    redirect_port: int = Field(DEFAULT_REDIRECT_PORT, ge=1, le=65535)
    private_key_env: str | None = None
    jwt_algorithm: str = "RS256"
    issuer: str | None = None
    scopes: list[str] = []


@dataclass(frozen=True, slots=True, kw_only=True)
class McpAuth:
    """A server's sign-in, validated; no secret value is held here. ``tokens`` is the folder
    its tokens are kept in (None: the user data directory); ``source`` the workspace file."""

    kind: AuthKind
    client_id: str | None = None
    client_secret_env: str | None = None
    token_endpoint_auth: TokenEndpointAuth | None = None
    client_metadata_url: str | None = None
    redirect_port: int = DEFAULT_REDIRECT_PORT
    private_key_env: str | None = None
    jwt_algorithm: str = "RS256"
    issuer: str | None = None
    scopes: tuple[str, ...] = ()
    tokens: Path | None = None
    source: str = ""

    def resolve(self, server: str, environ: Mapping[str, str]) -> ResolvedAuth:
        """The sign-in with its secrets read from ``environ``."""
        return ResolvedAuth(
            settings=self,
            client_secret=self._variable(server, environ, self.client_secret_env),
            private_key=self._variable(server, environ, self.private_key_env),
        )

    def _variable(self, server: str, environ: Mapping[str, str], name: str | None) -> str | None:
        if name is None:
            return None
        value = environ.get(name)
        if value is None:
            raise ConfigError(f'MCP server "{server}": auth: the environment variable {name} '
                              "is not set")  # fmt: skip
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedAuth:
    """A sign-in with its secrets; hashable (part of a server's launch), its repr shows none."""

    settings: McpAuth
    client_secret: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)


def mcp_auth(
    settings: McpAuthSettings | None, where: str, tokens: Path | None, source: str
) -> McpAuth | None:
    """The sign-in of one server's table; ``ConfigError`` names the bad key."""
    if settings is None:
        return None
    where = f"{where}.auth"
    given = settings.model_fields_set
    wrong = _MACHINE_ONLY if settings.kind == "oauth" else _OAUTH_ONLY
    for key in wrong:
        if key in given:
            raise ConfigError(f'{where}.{key}: not a setting of kind "{settings.kind}"')
    _check_names(settings, where)
    if settings.kind == "client_credentials":
        _check_machine(settings, where)
    elif settings.client_id is None and _pre_registered(settings):
        raise ConfigError(f"{where}: client_secret_env and token_endpoint_auth are a "
                          "pre-registered client's: give its client_id too")  # fmt: skip
    return McpAuth(
        kind=settings.kind,
        client_id=settings.client_id,
        client_secret_env=settings.client_secret_env,
        token_endpoint_auth=_method(settings),
        client_metadata_url=_metadata_url(settings.client_metadata_url, where),
        redirect_port=settings.redirect_port,
        private_key_env=settings.private_key_env,
        jwt_algorithm=settings.jwt_algorithm,
        issuer=None if settings.issuer is None else http_url(settings.issuer, f"{where}.issuer"),
        scopes=tuple(settings.scopes),
        tokens=tokens,
        source=source,
    )


def _pre_registered(settings: McpAuthSettings) -> bool:
    return settings.client_secret_env is not None or settings.token_endpoint_auth is not None


def _check_names(settings: McpAuthSettings, where: str) -> None:
    for key in ("client_secret_env", "private_key_env"):
        name = getattr(settings, key)
        if name is not None and ENV_NAME.fullmatch(name) is None:
            raise ConfigError(f"{where}.{key}: the name of the environment variable holding "
                              "the secret, not the secret itself")  # fmt: skip
    if settings.client_id is not None and not settings.client_id.strip():
        raise ConfigError(f"{where}.client_id: empty")
    for scope in settings.scopes:
        if SCOPE.fullmatch(scope) is None:
            raise ConfigError(f"{where}.scopes: {scope[:40]!r} is not one scope")


def _check_machine(settings: McpAuthSettings, where: str) -> None:
    if settings.client_id is None:
        raise ConfigError(f"{where}.client_id: a client_credentials client needs its client_id")
    secret, key = settings.client_secret_env is not None, settings.private_key_env is not None
    if secret == key:
        raise ConfigError(f"{where}: give either client_secret_env or private_key_env "
                          "(private_key_jwt), not both")  # fmt: skip
    if key and settings.token_endpoint_auth is not None:
        raise ConfigError(f"{where}.token_endpoint_auth: a private key signs its own request")
    if settings.token_endpoint_auth == "none":  # noqa: S105 (a method's name)
        raise ConfigError(f'{where}.token_endpoint_auth: "none" sends no secret')
    if settings.jwt_algorithm not in JWT_ALGORITHMS:
        raise ConfigError(f"{where}.jwt_algorithm: {settings.jwt_algorithm[:20]!r} is not "
                          f"one of {', '.join(JWT_ALGORITHMS)}")  # fmt: skip


def _method(settings: McpAuthSettings) -> TokenEndpointAuth | None:
    if settings.token_endpoint_auth is not None or settings.client_id is None:
        return settings.token_endpoint_auth
    if settings.private_key_env is not None:
        return None
    return "client_secret_basic" if settings.client_secret_env is not None else "none"


def _metadata_url(url: str | None, where: str) -> str | None:
    if url is None:
        return None
    checked = http_url(url, f"{where}.client_metadata_url")
    if not checked.startswith("https://") or checked.rstrip("/").count("/") < 3:
        raise ConfigError(f"{where}.client_metadata_url: an https URL with a path (the client "
                          "ID metadata document's)")  # fmt: skip
    return checked
