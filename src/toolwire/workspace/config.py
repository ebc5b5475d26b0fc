"""The workspace built-in tools work on: a SQL database, folders of files, log files, web bases.

Files live in named roots: ``files_root`` is the root called ``files`` (the default a file
tool uses), and ``[files_roots]`` names more (``docs = "docs"``). The optional sections in
``maps`` name a documents folder, configuration files, a history table, account
tables, scheduled jobs and routes. ``data_dir`` is where toolwire keeps what it derives from
the workspace (the documents index); by default the user data directory.

``personal_data_shown_to`` lists the trust zones whose models may read personal data (e-mail
addresses, phone numbers, IBANs, card numbers) in tool output; by default ``local`` and
``private_hosted`` (``toolwire.core.trust.PERSONAL_DATA_ZONES``). Secrets are masked for every
zone, whatever it says.

``name`` says what the workspace is called: a run given no name of its own takes it (its
telemetry's agent name). It may also say how to talk to the workspace's model server:
``max_tokens_field`` names the output-cap field an OpenAI-compatible server reads
(``max_tokens`` or ``max_completion_tokens``), ``region`` the cloud region its model runs in
(Azure OpenAI, Vertex AI: the trust zone follows it, see
:func:`toolwire.core.trust.region_zone`), and list MCP servers whose tools runs may use
(``mcp_servers``: see :mod:`toolwire.workspace.mcp_servers`). ``prompts`` declares prompt
templates that ``toolwire mcp`` offers hosts (:mod:`toolwire.workspace.prompts`).
``[containment]`` sets its containment policy and integrity labels by tool name
(:mod:`toolwire.workspace.containment`). ``[egress]`` limits what its runs may send providers of
tool output (see :mod:`toolwire.policy.egress`): ``max_run_bytes`` each run (a run may ask for
less with its own ``max_egress_bytes``, never for more), ``max_workspace_bytes`` every run of
the workspace together within ``window`` (a duration: ``"30m"``, ``"24h"`` (the default),
``"7d"``), and ``on_limit``, what passing one does: ``"stop"`` (the default) or ``"approve"``.

A ``Workspace`` is configuration plus one lazily created SQLAlchemy engine. Every part is
optional; a tool that needs a missing part fails closed with a clear error result. Paths are
absolute once loaded (relative ones are taken from the TOML file's folder), and the hosts
``probe_url`` may reach come only from here, never from the model.

A workspace reads an existing database, it never makes one: a SQLite file that does not exist
is refused when the workspace is loaded (naming the path), and the engine opens SQLite files
with ``mode=rw``, so a file removed later is an error, not a new empty database.

The DNS resolver and the HTTP transport are injectable so that ``probe_url`` can be tested, and
pinned, without network.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import socket
import tomllib
import urllib.parse
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

from toolwire.core.egress import DEFAULT_EGRESS_WINDOW, parse_window
from toolwire.core.errors import ConfigError
from toolwire.core.text import check_name, read_capped
from toolwire.core.trust import PERSONAL_DATA_ZONES, TrustZone
from toolwire.providers.presets import MaxTokensField, parse_fallback
from toolwire.workspace.containment import (
    DEFAULT_CONTAINMENT,
    Containment,
    ContainmentSettings,
    containment,
)
from toolwire.workspace.maps import (
    DEFAULT_ROOT,
    AccountMap,
    AccountSettings,
    ConfigMap,
    ConfigSettings,
    HistoryMap,
    HistorySettings,
    JobMap,
    JobSettings,
    RouteMap,
    RouteSettings,
    absolute,
    account_map,
    config_map,
    folder,
    history_map,
    http_url,
    job_map,
    named_roots,
    route_map,
)
from toolwire.workspace.mcp_servers import McpServer, McpServerSettings, mcp_servers
from toolwire.workspace.prompts import PromptSettings, PromptTemplate, prompt_templates

Resolver = Callable[[str, int], list[str]]
MAX_WORKSPACE_FILE_BYTES = 1_000_000  # a hand-written settings file; larger is a mistake


def system_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, through the operating system."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    """What the built-in tools may read. ``None`` or empty means that part is not configured."""

    database_url: str | None = None
    files_root: Path | None = None
    log_files: tuple[Path, ...] = ()
    base_urls: tuple[str, ...] = ()
    environ: Mapping[str, str] | None = None  # None: the process environment
    resolver: Resolver = system_resolver
    transport: httpx.BaseTransport | None = None  # None: a real network transport
    source: Path | None = None  # the TOML file it was read from, so a resumed run finds it again
    max_tokens_field: MaxTokensField | None = None  # None: the provider's own default
    region: str | None = None  # the cloud region its model runs in (its trust zone follows)
    # Providers its runs fall back to, in order, each NAME or NAME:MODEL as ``--fallback``
    # takes them (toolwire.providers.fallback); ``toolwire run --fallback`` says otherwise.
    fallback: tuple[str, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()
    files_roots: Mapping[str, Path] = field(default_factory=dict)  # more roots, by name
    documents: Path | None = None  # the folder search_documents indexes
    data_dir: Path | None = None  # None: the user data directory
    config: ConfigMap | None = None
    history: HistoryMap | None = None
    accounts: AccountMap | None = None
    jobs: JobMap | None = None
    routes: RouteMap | None = None
    # The zones whose models read personal data in tool output; every other zone sees it masked.
    personal_data_shown_to: frozenset[TrustZone] = PERSONAL_DATA_ZONES
    name: str | None = None  # what the workspace is called: its runs' name, unless they have one
    prompts: tuple[PromptTemplate, ...] = ()  # offered to MCP hosts by ``toolwire mcp``
    # What a consequential call planned on untrusted context becomes, and integrity labels by
    # tool name (see toolwire.workspace.containment).
    containment: Containment = DEFAULT_CONTAINMENT
    # The bytes of tool output each run may send its providers ([egress] max_run_bytes).
    max_egress_bytes: int | None = None
    # The bytes every run of the workspace may send together within ``egress_window`` seconds
    # ([egress] max_workspace_bytes, window), and what passing a limit does ([egress] on_limit).
    max_workspace_bytes: int | None = None
    egress_window: float = DEFAULT_EGRESS_WINDOW
    egress_on_limit: str | None = None
    _engines: dict[str, Engine] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_flags(
        cls,
        *,
        database: str | None = None,
        files: str | Path | None = None,
        logs: Sequence[str | Path] = (),
        base_urls: Sequence[str] = (),
    ) -> Workspace:
        """A workspace from command-line values, validated like a TOML file's."""
        raw: dict[str, Any] = {"database_url": database, "files_root": str(files or "") or None}
        raw |= {"log_files": [str(p) for p in logs], "base_urls": list(base_urls)}
        return _build(raw, Path.cwd(), "the command line")

    def engine(self) -> Engine:
        """The database engine, created on first use. Raises ``ConfigError`` without one."""
        if not self.database_url:
            raise ConfigError("the workspace has no database")
        engine = self._engines.get(self.database_url)
        if engine is None:
            url = make_url(self.database_url)
            # A SQLite file's connection is closed as soon as a tool is done with it, so the
            # file is not held open between calls and no connection is left to the garbage
            # collector (which Python 3.13 warns of); opening one again costs microseconds.
            pool = {"poolclass": NullPool} if _sqlite_file(url) else {}
            engine = create_engine(_never_created(url), **pool)
            self._engines[self.database_url] = engine
            _OPEN.add(engine)
        return engine

    def roots(self) -> dict[str, Path]:
        """Every file root by name: ``files`` (``files_root``) first, then the named ones."""
        found = {} if self.files_root is None else {DEFAULT_ROOT: self.files_root}
        return found | {k: v for k, v in self.files_roots.items() if k != DEFAULT_ROOT}

    def folders(self) -> tuple[Path, ...]:
        """Every folder the workspace names: its file roots, the documents and configuration
        folders, the systemd timers' folder and the routes' application folder."""
        named = [
            *self.roots().values(),
            self.documents,
            None if self.config is None else self.config.folder,
            None if self.jobs is None else self.jobs.systemd,
            None if self.routes is None else self.routes.app_path,
        ]
        return tuple(dict.fromkeys(folder for folder in named if folder is not None))

    def env(self) -> Mapping[str, str]:
        return os.environ if self.environ is None else self.environ

    def dispose(self) -> None:
        """Close pooled database connections."""
        for engine in self._engines.values():
            engine.dispose()
        self._engines.clear()

    def __del__(self) -> None:
        # A workspace let go of (one a resumed run reloaded from its file, say) closes its
        # pooled connections rather than leave them to the collector, which warns of each.
        try:
            for engine in self._engines.values():
                engine.dispose()
        except Exception:  # noqa: S110 (a finaliser must not raise; nothing is left to do)
            pass


# Every workspace engine still open: their pooled connections are closed when the process
# exits, before the interpreter would collect them unclosed (which Python 3.13 warns of).
_OPEN: weakref.WeakSet[Engine] = weakref.WeakSet()


@atexit.register
def _close_open_engines() -> None:
    for engine in list(_OPEN):
        engine.dispose()


class EgressSettings(BaseModel):
    """The ``[egress]`` table: what runs may send of tool output, in bytes."""

    model_config = ConfigDict(extra="forbid", strict=True)
    max_run_bytes: int | None = Field(default=None, ge=0)
    max_workspace_bytes: int | None = Field(default=None, ge=0)
    window: str | None = None
    on_limit: Literal["stop", "approve"] | None = None


def _egress(settings: EgressSettings | None, source: str) -> dict[str, Any]:
    """The workspace's egress fields from its ``[egress]`` table."""
    if settings is None:
        return {}
    window = DEFAULT_EGRESS_WINDOW
    if settings.window is not None:
        try:
            window = parse_window(settings.window)
        except ValueError as exc:
            raise ConfigError(f"{source}: egress.window: {exc}") from None
    return {"max_egress_bytes": settings.max_run_bytes,
            "max_workspace_bytes": settings.max_workspace_bytes, "egress_window": window,
            "egress_on_limit": settings.on_limit}  # fmt: skip


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    database_url: str | None = None
    files_root: str | None = None
    log_files: list[str] = []
    base_urls: list[str] = []
    max_tokens_field: MaxTokensField | None = None
    region: str | None = None
    fallback: list[str] = []
    mcp_servers: dict[str, McpServerSettings] = {}
    files_roots: dict[str, str] = {}
    documents: str | None = None
    data_dir: str | None = None
    config: ConfigSettings | None = None
    history: HistorySettings | None = None
    accounts: AccountSettings | None = None
    jobs: JobSettings | None = None
    routes: RouteSettings | None = None
    personal_data_shown_to: list[str] | None = None
    prompts: dict[str, PromptSettings] = {}
    containment: ContainmentSettings | None = None
    egress: EgressSettings | None = None


def load_workspace(path: str | Path) -> Workspace:
    """Load a workspace from TOML; ``ConfigError`` names the file and the bad key."""
    path = Path(path)
    raw = read_capped(path, MAX_WORKSPACE_FILE_BYTES, "workspace file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"workspace file {path} is not valid TOML: {exc}") from None
    resolved = path.resolve()
    return dataclasses.replace(_build(data, resolved.parent, str(path)), source=resolved)


def _build(data: Mapping[str, Any], base: Path, source: str) -> Workspace:
    try:
        settings = _Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {_problems(exc)}") from None
    files_root = folder(settings.files_root, base, f"{source}: files_root")
    roots = named_roots(settings.files_roots, base, source)
    return Workspace(
        database_url=_database_url(settings.database_url, base, source),
        files_root=files_root,
        log_files=tuple(absolute(p, base) for p in settings.log_files),
        # Entries are named by position: a URL with user info would put a password in the error.
        base_urls=tuple(
            http_url(u, f"{source}: base_urls[{n}]") for n, u in enumerate(settings.base_urls)
        ),
        max_tokens_field=settings.max_tokens_field,
        region=settings.region,
        fallback=_fallback(settings.fallback, source),
        mcp_servers=mcp_servers(
            settings.mcp_servers,
            base,
            source,
            absolute(settings.data_dir, base) if settings.data_dir else None,
        ),
        files_roots=roots,
        documents=folder(settings.documents, base, f"{source}: documents"),
        data_dir=absolute(settings.data_dir, base) if settings.data_dir else None,
        config=config_map(settings.config, base, source),
        history=history_map(settings.history),
        accounts=account_map(settings.accounts),
        jobs=job_map(settings.jobs, base, source),
        routes=route_map(settings.routes, base, source),
        personal_data_shown_to=_zones(settings.personal_data_shown_to, source),
        name=_name(settings.name, source),
        prompts=prompt_templates(settings.prompts, source),
        containment=containment(settings.containment, source),
        **_egress(settings.egress, source),
    )


def _fallback(entries: list[str], source: str) -> tuple[str, ...]:
    """The workspace's fallback chain, each entry checked as ``--fallback`` checks it."""
    try:
        parse_fallback(",".join(entries) if entries else None, "fallback")
    except ConfigError as exc:
        raise ConfigError(f"{source}: fallback: {exc}") from None
    return tuple(entry.strip() for entry in entries)


def _name(name: str | None, source: str) -> str | None:
    if name is None:
        return None
    try:
        return check_name(name, "name")
    except ValueError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _zones(names: list[str] | None, source: str) -> frozenset[TrustZone]:
    if names is None:
        return PERSONAL_DATA_ZONES
    try:
        zones = frozenset(TrustZone.parse(name) for name in names)
    except ConfigError as exc:
        raise ConfigError(f"{source}: personal_data_shown_to: {exc}") from None
    # A zone shown personal data is one a more trusted zone may be shown too: so the least
    # trusted zone a run can reach (a fallback chain's) decides for every zone it can reach.
    for zone in sorted(zones, key=list(TrustZone).index):
        missing = [z.value for z in zone.more_trusted if z not in zones]
        if missing:
            raise ConfigError(
                f"{source}: personal_data_shown_to names {zone.value} but not "
                f"{', '.join(missing)}: a zone more trusted than one shown personal data must "
                "be shown it too"
            )
    return zones


def _problems(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors(include_url=False, include_input=False):
        key = ".".join(str(p) for p in error["loc"]) or "workspace"
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        parts.append(f"{key}: {message}")
    return "; ".join(parts)


def _database_url(value: str | None, base: Path, source: str) -> str | None:
    if not value:
        return None
    try:
        url = make_url(value)
    except (ArgumentError, ValueError):
        # The value may hold a password: name the key, never echo it.
        raise ConfigError(f"{source}: database_url: not a valid SQLAlchemy URL") from None
    if _sqlite_file(url):
        path = absolute(str(url.database), base)
        if not path.is_file():
            raise ConfigError(f"{source}: database_url: no SQLite database at {path}")
        url = url.set(database=str(path))
    return url.render_as_string(hide_password=False)


def _sqlite_file(url: URL) -> bool:
    """True for a SQLite database named by a plain path (not in memory, not a ``file:`` URI)."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return False
    return not database.startswith("file:")


def _never_created(url: URL) -> URL:
    """A SQLite file opened through a ``mode=rw`` URI: SQLite fails rather than create it."""
    if not _sqlite_file(url):
        return url
    uri = "file:" + urllib.parse.quote(str(url.database))
    return url.set(database=uri, query={**url.query, "mode": "rw", "uri": "true"})
