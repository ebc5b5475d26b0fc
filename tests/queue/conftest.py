"""Queue fixtures: a PostgreSQL schema of its own per test (``$TOOLWIRE_TEST_PG_URL``), the
tools plugin the workers load, and the workers a test starts, stopped afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..store.conftest import pg_schema  # noqa: F401  (a fixture: one schema per test)
from .kit import Queue, queue_in


@pytest.fixture
def queue(pg_schema: str, tmp_path: Path) -> Iterator[Queue]:  # noqa: F811
    with queue_in(tmp_path, pg_schema) as found:
        yield found
