"""Where the store lives and how it connects: URL resolution, engines, errors.

A store URL is a SQLAlchemy URL (``sqlite:///PATH`` or ``postgresql+psycopg://...``) or a plain
file path, which means SQLite. Every command uses one store, chosen by :func:`choose_store`:
``--db``, else (for the demo) its ``--data-dir``, else ``$TOOLWIRE_DB``, else ``runs.db`` in the
user data directory. Only that last one, the implicit default, was not asked for.

Nothing is created by mistake: a plain path must look like a SQLite file (a ``.db``, ``.sqlite``
or ``.sqlite3`` name, or an existing file), an in-memory SQLite URL is refused (nothing in it is
kept), and a SQLite file's folder must exist, except toolwire's own data folder, which is
created 0700. A new database file is created 0600 (see :mod:`toolwire.core.private`).

SQLite is opened in WAL mode (readers never block the writer), with foreign keys on, a busy
timeout (several processes may share one file) and ``synchronous=NORMAL``: in WAL mode that
keeps the database consistent after a crash and loses at most the last commits on power loss,
which suits an audit log of runs that were shown live anyway.

Every failure leaves this module as a :class:`toolwire.core.errors.StoreError` whose message says
what could not be done and why, with any password in the URL hidden.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

from toolwire.core.errors import StoreError
from toolwire.core.private import private_dir, private_file

ENV_VAR = "TOOLWIRE_DB"
DEFAULT_FILE = "runs.db"
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
# A PostgreSQL server that never answers would otherwise hold a command until TCP gives up.
PG_CONNECT_TIMEOUT_S = 10
DEFAULT_ORIGIN = "the default store"  # the one choice nobody made: it may degrade to a warning
NOT_A_STORE = (
    "not a database URL nor a SQLite file name: give a path ending in .db, .sqlite or "
    ".sqlite3 (or an existing file), sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
)
NOT_KEPT = (
    "an in-memory SQLite store would be a different database on every connection and is not "
    "kept: give a file, e.g. sqlite:///runs.db"
)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreChoice:
    """The store a command uses and where the choice came from.

    ``target`` may hold a password: show ``origin`` and :func:`where`, never ``target`` itself.
    """

    target: str
    origin: str  # "--db", "--data-dir", "$TOOLWIRE_DB" or DEFAULT_ORIGIN

    @property
    def asked_for(self) -> bool:
        """False only for the implicit default, the one store that may fail without an error."""
        return self.origin != DEFAULT_ORIGIN


def choose_store(db: str | None, *, folder: Path | None = None) -> StoreChoice:
    """``db`` (``--db``), else ``runs.db`` in ``folder`` (the demo's ``--data-dir``), else
    ``$TOOLWIRE_DB``, else ``runs.db`` in the user data directory."""
    if db is not None:
        return StoreChoice(target=db, origin="--db")
    if folder is not None:
        return StoreChoice(target=str(Path(folder) / DEFAULT_FILE), origin="--data-dir")
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return StoreChoice(target=from_env, origin=f"${ENV_VAR}")
    return StoreChoice(target=str(default_path()), origin=DEFAULT_ORIGIN)


def resolve_url(url: str | None) -> URL:
    """The SQLAlchemy URL for ``url``, ``$TOOLWIRE_DB`` or the default SQLite file.

    Raises ``StoreError`` for a value that cannot name a store that is kept; nothing is created.
    """
    text = url or os.environ.get(ENV_VAR) or str(default_path())
    if "://" not in text:
        return _sqlite_file(Path(text).expanduser())
    try:
        parsed = make_url(text)
    except ArgumentError:
        raise StoreError("the store URL is not a valid database URL") from None
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise StoreError(NOT_KEPT)
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise StoreError(
            f"unsupported store URL scheme {parsed.drivername!r}: use a file path, "
            "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        )
    if parsed.get_backend_name() == "sqlite" and not str(parsed.database).startswith("file:"):
        # Absolute, so that the folder check and every message name the file that is used.
        return parsed.set(database=str(Path(str(parsed.database)).expanduser().absolute()))
    return parsed


def _sqlite_file(path: Path) -> URL:
    if path.suffix.lower() not in SQLITE_SUFFIXES and not path.is_file():
        raise StoreError(NOT_A_STORE)
    return URL.create("sqlite", database=str(path.absolute()))


def default_path() -> Path:
    return Path(platformdirs.user_data_dir("toolwire")) / DEFAULT_FILE


def where(url: URL) -> str:
    """Where the store is, for a person: a SQLite file's path, else the URL without password."""
    if url.get_backend_name() == "sqlite" and url.database:
        return url.database
    return shown(url)


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
    if "connect_timeout" not in url.query:
        extra["connect_args"] = {"connect_timeout": PG_CONNECT_TIMEOUT_S}
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
    """Create the database file 0600 where it is missing; its folder must exist.

    Only toolwire's own data folder is created (0700, and tightened when it exists): a missing
    folder the user named is a typo far more often than a wish, so it is refused.
    SQLite gives the -wal and -shm files the main file's mode, so they are private too.
    """
    directory = path.parent
    if path == default_path():
        try:
            private_dir(directory, tighten=True)
        except OSError as exc:
            blocked = any(folder.is_file() for folder in (directory, *directory.parents))
            why = "a file is in the way" if blocked else exc.strerror
            raise StoreError(f"cannot create the store directory {directory}: {why}") from None
    elif directory.exists() and not directory.is_dir():
        raise StoreError(f"cannot create the store directory {directory}: a file is in the way")
    elif not directory.is_dir():
        raise StoreError(f"cannot open the store {path}: the folder {directory} does not exist")
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
