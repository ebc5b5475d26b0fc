"""Where the store lives and how it connects: URL resolution, engines, errors.

A store URL is a SQLAlchemy URL (``sqlite:///PATH`` or ``postgresql+psycopg://...``) or a plain
file path, which means SQLite. With no URL, ``$TOOLWIRE_DB`` is used, else a SQLite file in the
user data directory.

The SQLite folder is created 0700 and the file 0600 (see :mod:`toolwire.store.private`).

SQLite is opened in WAL mode (readers never block the writer), with foreign keys on, a busy
timeout (several processes may share one file) and ``synchronous=NORMAL``: in WAL mode that
keeps the database consistent after a crash and loses at most the last commits on power loss,
which suits an audit log of runs that were shown live anyway.

Every failure leaves this module as a :class:`toolwire.errors.StoreError` whose message says
what could not be done and why, with any password in the URL hidden.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

from toolwire.errors import StoreError
from toolwire.store.private import private_dir, private_file

ENV_VAR = "TOOLWIRE_DB"
DEFAULT_FILE = "runs.db"
# A writer may hold the SQLite lock while it commits; wait this long before failing.
BUSY_TIMEOUT_MS = 5_000
# Driver messages are shown to the operator; a long one is cut, it only needs to say why.
REASON_CHARS = 300
_SQLITE_PRAGMAS = (
    "PRAGMA journal_mode=WAL",
    "PRAGMA synchronous=NORMAL",
    "PRAGMA foreign_keys=ON",
    f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
)


def resolve_url(url: str | None) -> URL:
    """The SQLAlchemy URL for ``url``, ``$TOOLWIRE_DB`` or the default SQLite file."""
    text = url or os.environ.get(ENV_VAR) or str(default_path())
    if "://" not in text:
        return URL.create("sqlite", database=str(Path(text).expanduser().absolute()))
    try:
        parsed = make_url(text)
    except ArgumentError:
        raise StoreError("the store URL is not a valid database URL") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise StoreError(
            "an in-memory SQLite store would be a different database on every connection: "
            "give a file, e.g. sqlite:///runs.db"
        )
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise StoreError(
            f"unsupported store URL scheme {parsed.drivername!r}: use a file path, "
            "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        )
    return parsed


def default_path() -> Path:
    return Path(platformdirs.user_data_dir("toolwire")) / DEFAULT_FILE


def shown(url: URL) -> str:
    """The URL as it may appear in a message: never with its password."""
    return url.render_as_string(hide_password=True)


def make_engine(url: URL, *, pooled: bool = True) -> Engine:
    """An engine for ``url``; SQLite gets its directory created and its pragmas set.

    ``pooled=False`` gives an engine that opens a new driver connection on every request,
    for callers that keep their own connections.
    """
    extra: dict[str, Any] = {} if pooled else {"poolclass": NullPool}
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url, extra)
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")  # the driver we ship
    with errors(f"connect to {shown(url)}"):
        return create_engine(url, pool_pre_ping=pooled, **extra)


def _sqlite_engine(url: URL, extra: dict[str, Any]) -> Engine:
    database = url.database or ""
    if database and database != ":memory:":
        _private_database(Path(database))
    # Connections move between threads through the pool (the inspector records from workers).
    engine = create_engine(url, connect_args={"check_same_thread": False}, **extra)
    event.listen(engine, "connect", _set_pragmas)
    return engine


def _private_database(path: Path) -> None:
    """Create the database's folder 0700 and its file 0600 where they are missing.

    SQLite gives the -wal and -shm files the main file's mode, so they are private too.
    toolwire's own data folder is tightened even when it exists; a folder the user named is not.
    """
    directory = path.parent
    try:
        private_dir(directory, tighten=path == default_path())
    except OSError as exc:
        why = "a file is in the way" if directory.is_file() else exc.strerror
        raise StoreError(f"cannot create the store directory {directory}: {why}") from None
    try:
        private_file(path)
    except OSError as exc:
        raise StoreError(f"cannot create the store file {path}: {exc.strerror}") from None


def _set_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    try:
        for pragma in _SQLITE_PRAGMAS:
            cursor.execute(pragma)
    finally:
        cursor.close()


@contextmanager
def errors(action: str) -> Iterator[None]:
    """Turn any failure (database, file system, encoding) into a ``StoreError`` naming ``action``.

    The cause stays chained for the operator's log; the message carries only the reason.
    """
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:  # any driver's error class: SQLAlchemy's, sqlite3's, psycopg's
        raise StoreError(f"the run store could not {action}: {reason(exc)}") from exc


def reason(exc: BaseException) -> str:
    """The driver's own short message, never the SQL statement or its parameters."""
    original = getattr(exc, "orig", None) or exc
    text = str(original).strip().splitlines()[0] if str(original).strip() else ""
    text = text or type(original).__name__
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "…"
