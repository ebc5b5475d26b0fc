"""The MCP servers a workspace lists, as validated values, and how to reach each one.

In the workspace TOML, one table per server under ``mcp_servers``: a stdio server has a
``command`` (with ``args``, ``env``, ``pass_env`` and ``cwd``), a streamable-HTTP server a
``url`` (with ``headers``, and an ``auth`` table when it asks for OAuth: see
:mod:`toolwire.workspace.mcp_auth`). Secrets never sit in the file: ``pass_env`` names
variables copied from toolwire's environment into the server's, and ``headers`` maps each
header to the *name* of the environment variable holding its value. Both are read when the
server starts (:meth:`McpServer.launch`), so a missing variable is an error naming the
variable, never a value. Nothing else of toolwire's environment reaches a stdio server but the
minimal one every child gets (:mod:`toolwire.core.children`).

The server's name becomes its tools' prefix (``<server>__<tool>``), so it is a short plain word
without ``__``. Its tools are off unless ``enabled = true``, admin-only unless
``admin_only = false``, and carry the ``data_class`` given here (default the strictest).
During a call a server may ask a person a question (``elicitation``, on unless ``false``,
waiting at most ``elicitation_timeout`` seconds) and, only when ``sampling = true``, ask the
run's model for a completion.

This module imports no part of the MCP SDK: loading a workspace stays cheap.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from toolwire.core.errors import ConfigError
from toolwire.core.trust import DEFAULT_DATA_CLASS, DataClass
from toolwire.workspace.maps import folder, http_url
from toolwire.workspace.mcp_auth import McpAuth, McpAuthSettings, ResolvedAuth, mcp_auth

# A prefix every provider accepts inside a tool name, leaving room for the tool's own name
# within the 64 characters they allow; no "__", which separates it from the tool's name.
SERVER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*(?:_[A-Za-z0-9-]+)*")
SERVER_NAME_CHARS = 32
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110)
# Seconds a server has to start, and each call to answer. Generous: a call may do real work
# (a fetch, a search), and a server started through a package runner may install first.
DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 3600.0
# Seconds a server's question waits for a person (the call's timeout is extended by as much):
# long enough to read a form and answer it, short enough that a forgotten one ends.
DEFAULT_ELICITATION_TIMEOUT_S = 300.0

Transport = Literal["stdio", "http"]


class McpServerSettings(BaseModel):
    """One ``[mcp_servers.<name>]`` table as written; checked further by :func:`mcp_servers`.

    Strict: TOML has types, so ``enabled = "yes"`` is a mistake, not ``true``."""

    model_config = ConfigDict(extra="forbid", strict=True)
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    pass_env: list[str] = []
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = {}
    auth: McpAuthSettings | None = None
    data_class: str | None = None
    enabled: bool = False
    admin_only: bool = True
    timeout: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    elicitation: bool = True
    elicitation_timeout: float = Field(DEFAULT_ELICITATION_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    sampling: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """Everything needed to reach one server, secrets resolved. Hashable: the process keeps
    one session per launch. Its repr shows no environment or header value."""

    name: str
    timeout: float
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    auth: ResolvedAuth | None = None
    elicitation: bool = True  # the server may ask a person (see toolwire.mcp.elicit)
    elicitation_timeout: float = DEFAULT_ELICITATION_TIMEOUT_S
    sampling: bool = False  # the server may ask the run's model (see toolwire.mcp.sampling)


@dataclass(frozen=True, slots=True, kw_only=True)
class McpServer:
    """One MCP server of a workspace, validated; no secret value is held here."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    pass_env: tuple[str, ...] = ()
    cwd: Path | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()  # header name, environment variable name
    auth: McpAuth | None = None
    data_class: str = DEFAULT_DATA_CLASS
    enabled: bool = False
    admin_only: bool = True
    timeout: float = DEFAULT_TIMEOUT_S
    elicitation: bool = True
    elicitation_timeout: float = DEFAULT_ELICITATION_TIMEOUT_S
    sampling: bool = False

    @property
    def transport(self) -> Transport:
        return "stdio" if self.command is not None else "http"

    @property
    def group(self) -> str:
        """The tool group of this server's tools: toggled, granted and listed together."""
        return f"mcp:{self.name}"

    def launch(self, environ: Mapping[str, str]) -> Launch:
        """How to reach the server now, with values read from ``environ``."""
        passed = tuple((n, self._variable(environ, n, f"pass_env {n}")) for n in self.pass_env)
        headers = tuple(
            (header, self._variable(environ, variable, f"header {header}"))
            for header, variable in self.headers
        )
        return Launch(
            name=self.name,
            timeout=self.timeout,
            command=self.command,
            args=self.args,
            env=self.env + passed,
            cwd=None if self.cwd is None else str(self.cwd),
            url=self.url,
            headers=headers,
            auth=None if self.auth is None else self.auth.resolve(self.name, environ),
            elicitation=self.elicitation,
            elicitation_timeout=self.elicitation_timeout,
            sampling=self.sampling,
        )

    def _variable(self, environ: Mapping[str, str], name: str, what: str) -> str:
        value = environ.get(name)
        if value is None:
            raise ConfigError(
                f'MCP server "{self.name}": {what}: the environment variable {name} is not set'
            )
        return value


def mcp_servers(
    tables: Mapping[str, McpServerSettings], base: Path, source: str, tokens: Path | None = None
) -> tuple[McpServer, ...]:
    """The servers of a workspace file, each checked; ``ConfigError`` names the bad key.
    ``tokens`` is the folder a signed-in server's tokens are kept in (None: the default)."""
    found = []
    for name, settings in tables.items():
        where = f"{source}: mcp_servers.{name}"
        server = _server(name, settings, base, where)
        auth = mcp_auth(settings.auth, where, tokens, source)
        found.append(server if auth is None else dataclasses.replace(server, auth=auth))
    return tuple(found)


def _server(name: str, settings: McpServerSettings, base: Path, where: str) -> McpServer:
    _check_name(name, where)
    stdio = settings.command is not None
    if stdio == (settings.url is not None):
        raise ConfigError(f"{where}: give either command (a stdio server) or url, not both")
    _check_keys(settings, where)
    try:
        data_class = DataClass.parse(settings.data_class).name.lower()
    except ConfigError as exc:
        raise ConfigError(f"{where}.data_class: {exc}") from None
    return McpServer(
        name=name,
        command=_command(settings.command, base, where) if stdio else None,
        args=tuple(settings.args),
        env=tuple(settings.env.items()),
        pass_env=tuple(settings.pass_env),
        cwd=(folder(settings.cwd, base, f"{where}.cwd") or base.resolve()) if stdio else None,
        url=None if stdio else http_url(settings.url or "", f"{where}.url"),
        headers=tuple(settings.headers.items()),
        data_class=data_class,
        enabled=settings.enabled,
        admin_only=settings.admin_only,
        timeout=settings.timeout,
        elicitation=settings.elicitation,
        elicitation_timeout=settings.elicitation_timeout,
        sampling=settings.sampling,
    )


def _check_name(name: str, where: str) -> None:
    if len(name) > SERVER_NAME_CHARS or SERVER_NAME.fullmatch(name) is None:
        raise ConfigError(
            f"{where}: a server name is 1 to {SERVER_NAME_CHARS} letters, digits, - or single "
            "_, starting with a letter (it prefixes its tools' names)"
        )


def _check_keys(settings: McpServerSettings, where: str) -> None:
    given = settings.model_fields_set
    wrong = ("headers", "auth") if settings.command is not None else ("args", "env", "pass_env",
                                                                       "cwd")  # fmt: skip
    for key in wrong:
        if key in given:
            kind = "a stdio server" if settings.command is not None else "an HTTP server"
            raise ConfigError(f"{where}.{key}: not a setting of {kind}")
    for key in settings.env:
        _check(ENV_NAME, key, f"{where}.env", "an environment variable name")
    for key in settings.pass_env:
        _check(ENV_NAME, key, f"{where}.pass_env", "an environment variable name")
    for header, variable in settings.headers.items():
        _check(HEADER_NAME, header, f"{where}.headers", "an HTTP header name")
        _check(ENV_NAME, variable, f"{where}.headers.{header}",
               "the name of the environment variable holding the value")  # fmt: skip


def _check(pattern: re.Pattern[str], value: str, where: str, what: str) -> None:
    if pattern.fullmatch(value) is None:
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ConfigError(f"{where}: {shown!r} is not {what}")


def _command(command: str | None, base: Path, where: str) -> str:
    if not command or not command.strip():
        raise ConfigError(f"{where}.command: empty")
    path = Path(command).expanduser()
    # A bare name is looked up on PATH; a relative path is the workspace file's, like its others.
    if "/" in command and not path.is_absolute():
        return str(base / path)
    return str(path) if "/" in command else command
