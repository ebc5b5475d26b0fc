"""The workspace's optional sections: what the second wave of built-in tools reads and where.

Each section maps something the application has onto what a tool understands: named file
roots, the documents folder, configuration files and their schemas, a history table, the
account tables, scheduled jobs and HTTP routes. Every name here comes from the operator's TOML
file, never from a model. Table and column names are only compared with the reflected schema
when a tool runs (``_sql``); paths are absolute once loaded (relative ones are taken from the
TOML file's folder) and a folder that does not exist is refused when the workspace loads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
from pydantic import BaseModel, ConfigDict, Field

from toolwire.core.errors import ConfigError

ROOT_NAME = re.compile(r"[A-Za-z0-9_\-]{1,40}")  # a root name the model types: short and plain
DEFAULT_ROOT = "files"  # the name of the root ``files_root`` configures


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistorySettings(_Section):
    table: str
    table_column: str = "table_name"
    record_column: str = "record_id"
    field_column: str | None = None
    time_column: str | None = None


class AccountSettings(_Section):
    users: str | None = None
    roles: str | None = None
    user_columns: list[str] = []


class JobSettings(_Section):
    crontab: str | None = None
    systemd: str | None = None
    table: str | None = None


class RouteSettings(_Section):
    file: str | None = None
    app: str | None = Field(default=None, pattern=r"^[\w.]+:[\w.]+$")
    app_path: str | None = None


class ConfigSettings(_Section):
    folder: str
    schemas: dict[str, str] = {}


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryMap:
    """The audit table ``record_history`` reads: one row per change of one record."""

    table: str
    table_column: str = "table_name"  # which table the changed record is in
    record_column: str = "record_id"  # the changed record's primary key
    field_column: str | None = None  # which column changed, when a row is one column's change
    time_column: str | None = None  # the order of changes; the primary key when not named


@dataclass(frozen=True, slots=True, kw_only=True)
class AccountMap:
    """The tables ``list_users`` and ``list_roles`` read; credential columns are never read."""

    users: str | None = None
    roles: str | None = None
    user_columns: tuple[str, ...] = ()  # list_users' columns; empty: the usual identity ones


@dataclass(frozen=True, slots=True, kw_only=True)
class JobMap:
    """Where scheduled jobs are declared: a crontab, a folder of systemd timers, a table."""

    crontab: Path | None = None
    systemd: Path | None = None
    table: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RouteMap:
    """Where ``resolve_route`` finds routes: a routes file, or an ASGI/WSGI app it imports."""

    file: Path | None = None
    app: str | None = None  # "module:attribute", imported in a child process, never called
    app_path: Path | None = None  # the folder that module is imported from


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigMap:
    """The application's configuration folder, and JSON schemas for files in it by glob."""

    folder: Path
    schemas: tuple[tuple[str, Path], ...] = ()


def absolute(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def folder(value: str | None, base: Path, where: str) -> Path | None:
    """An existing folder, resolved; ``where`` names the key in the error."""
    if not value:
        return None
    found = absolute(value, base).resolve()
    if not found.is_dir():
        raise ConfigError(f"{where}: {found} is not a folder")
    return found


def http_url(value: str, where: str) -> str:
    """An http(s) URL with a host and no user info (a password in the file would be a secret
    in the file, and in this error); ``where`` names the key in the error."""
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL:
        raise ConfigError(f"{where}: not a URL") from None
    if url.scheme not in ("http", "https") or not url.host or url.userinfo:
        raise ConfigError(f"{where}: must be an http(s) URL with a host and no user info")
    return str(url)


def named_roots(roots: Mapping[str, str], base: Path, source: str) -> dict[str, Path]:
    """The roots ``[files_roots]`` names; ``files`` is not among them (``files_root`` sets it)."""
    found: dict[str, Path] = {}
    for name, value in roots.items():
        where = f"{source}: files_roots.{name[:40]}"
        if not ROOT_NAME.fullmatch(name):
            raise ConfigError(f"{where}: a root name is 1 to 40 letters, digits, _ or -")
        if name == DEFAULT_ROOT:
            raise ConfigError(
                f"{where}: the root {name!r} is already the one files_root sets: set files_root"
            )
        resolved = folder(value, base, where)
        if resolved is None:
            raise ConfigError(f"{where}: must name a folder")
        found[name] = resolved
    return found


def history_map(settings: HistorySettings | None) -> HistoryMap | None:
    return None if settings is None else HistoryMap(**settings.model_dump())


def account_map(settings: AccountSettings | None) -> AccountMap | None:
    if settings is None:
        return None
    return AccountMap(
        users=settings.users, roles=settings.roles, user_columns=tuple(settings.user_columns)
    )


def job_map(settings: JobSettings | None, base: Path, source: str) -> JobMap | None:
    if settings is None:
        return None
    crontab = absolute(settings.crontab, base) if settings.crontab else None
    systemd = folder(settings.systemd, base, f"{source}: jobs.systemd")
    return JobMap(crontab=crontab, systemd=systemd, table=settings.table)


def route_map(settings: RouteSettings | None, base: Path, source: str) -> RouteMap | None:
    if settings is None:
        return None
    if settings.app and not settings.app_path:
        raise ConfigError(f"{source}: routes.app_path: needed with routes.app")
    return RouteMap(
        file=absolute(settings.file, base) if settings.file else None,
        app=settings.app,
        app_path=folder(settings.app_path, base, f"{source}: routes.app_path"),
    )


def config_map(settings: ConfigSettings | None, base: Path, source: str) -> ConfigMap | None:
    if settings is None:
        return None
    found = folder(settings.folder, base, f"{source}: config.folder")
    if found is None:
        raise ConfigError(f"{source}: config.folder: must name a folder")
    schemas = tuple((glob, absolute(path, base)) for glob, path in settings.schemas.items())
    return ConfigMap(folder=found, schemas=schemas)
