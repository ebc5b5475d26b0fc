"""Store fixtures: every store test runs on a real SQLite file and on a real PostgreSQL.

PostgreSQL comes from ``$TOOLWIRE_TEST_PG_URL``; each test gets a schema of its own, dropped
afterwards. Without the variable the PostgreSQL variants fail (they are never skipped):
``scripts/test`` starts a throwaway server and sets it.

Every test that reaches PostgreSQL carries the ``postgres`` marker, so ``-m "not postgres"``
leaves exactly those out: a parameter that picks PostgreSQL is ``POSTGRESQL`` (marked), and the
root conftest marks every test whose fixtures include one of ``PG_FIXTURES``. A test that asks
for the server's URL without the marker fails, naming itself, so a new way in cannot go
unmarked.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

PG_ENV = "TOOLWIRE_TEST_PG_URL"
MARKER = "postgres"
POSTGRESQL = pytest.param("postgresql", marks=pytest.mark.postgres)  # a backend parameter
PG_FIXTURES = frozenset({"pg_schema", "pg_module_schema"})  # a test using one is marked
_running: list[pytest.Item] = []  # the test being set up or run (set by the root conftest)


def uses_postgres(item: pytest.Item) -> bool:
    """Whether ``item`` reaches PostgreSQL through one of its fixtures (marked parameters
    carry the marker already)."""
    return not PG_FIXTURES.isdisjoint(getattr(item, "fixturenames", ()))


def running(item: pytest.Item | None) -> None:
    """Note the test now being set up or run (None once it is over)."""
    _running[:] = [] if item is None else [item]


@dataclass
class Backend:
    """One database for one test: its URL and a way to read everything it holds as bytes."""

    kind: str
    url: str
    path: Path | None = None
    stores: list[RunStore] = field(default_factory=list)

    def open(self, privacy: PrivacyLevel = PrivacyLevel.METADATA) -> RunStore:
        store = RunStore.open(self.url, privacy=privacy)
        self.stores.append(store)
        return store

    def raw_bytes(self) -> bytes:
        """SQLite: the database file and its WAL; PostgreSQL: every column of every table."""
        if self.path is not None:
            files = [self.path, Path(f"{self.path}-wal")]
            return b"".join(f.read_bytes() for f in files if f.exists())
        return pg_dump(self.url)

    def close(self) -> None:
        for store in self.stores:
            store.close()


def pg_dump(url: str) -> bytes:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            names = inspect(connection).get_table_names()
            rows = [
                value
                for name in names
                for value in connection.execute(text(f'SELECT t::text FROM "{name}" t')).scalars()
            ]
    finally:
        engine.dispose()
    return "\n".join(rows).encode("utf-8")


def pg_base_url() -> str:
    unmarked = [item.nodeid for item in _running if not item.get_closest_marker(MARKER)]
    if unmarked:
        pytest.fail(
            f"{unmarked[0]} uses PostgreSQL but is not marked {MARKER}: use POSTGRESQL as its "
            f"parameter or one of {', '.join(sorted(PG_FIXTURES))} as its fixture"
        )
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.fail(
            f"${PG_ENV} is not set: run scripts/test, which starts a PostgreSQL server and sets it"
        )
    return url


@contextmanager
def scratch_schema(prefix: str = "tw") -> Iterator[str]:
    """A fresh PostgreSQL schema in ``$TOOLWIRE_TEST_PG_URL``, dropped afterwards; yields a URL
    whose connections use it."""
    base = pg_base_url()
    schema = f"{prefix}_{uuid.uuid4().hex[:16]}"
    admin = create_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f"CREATE SCHEMA {schema}"))
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema; yields a URL whose connections use it."""
    with scratch_schema() as url:
        yield url


@pytest.fixture(scope="module")
def pg_module_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema for a whole module; yields a URL whose connections use it."""
    with scratch_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", POSTGRESQL])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        path = tmp_path / "runs.db"
        found = Backend(kind="sqlite", url=str(path), path=path)
        yield found
        found.close()
        return
    url = request.getfixturevalue("pg_schema")
    found = Backend(kind="postgresql", url=url)
    yield found
    found.close()


@pytest.fixture
def store(backend: Backend) -> RunStore:
    return backend.open()


OpenStore = Callable[[PrivacyLevel], RunStore]
