"""The SQLite store binds every moment it writes or filters on as text it formats itself:
sqlite3's default datetime and date adapters (deprecated since Python 3.12) are never called,
on any Python. Each is replaced by one that records what it was given."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from toolwire.store import RunStore
from toolwire.store.browse import RunQuery

from ..governed import governed_run
from .helpers import run


@pytest.fixture
def defaults_called(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """Every value sqlite3's default adapters are asked to bind while the test runs."""
    called: list[object] = []

    def recorded(value: object) -> str:
        called.append(value)
        return str(value)

    for kind in (datetime, date):
        key: tuple[type[Any], type[Any]] = (kind, sqlite3.PrepareProtocol)
        monkeypatch.setitem(sqlite3.adapters, key, recorded)
    yield called


def test_the_recorder_sees_a_datetime_bound_by_sqlite3_itself(
    defaults_called: list[object],
) -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with sqlite3.connect(":memory:") as connection:
        connection.execute("SELECT ?, ?", (moment, moment.date()))
    assert defaults_called == [moment, moment.date()]


def test_the_store_writes_and_filters_moments_without_the_default_adapters(
    tmp_path: Path, defaults_called: list[object]
) -> None:
    store = RunStore.open(str(tmp_path / "runs.db"))
    try:
        _, governed = governed_run(store)  # created_at, finished_at and the gates' at
        plain = run(store)
        before = datetime.now(UTC) - timedelta(hours=1)
        after = datetime.now(UTC) + timedelta(hours=1)
        window = RunQuery(since=before, until=after)
        assert {r.id for r in store.find_runs(window).runs} == {governed.run_id, plain.run_id}
        assert store.find_runs(RunQuery(until=before)).runs == []
        assert store.list_gate_decisions(since=before) != []
        assert store.list_gate_decisions(since=after) == []
        exported = [r.id for r in store.export(RunQuery(since=before, limit=1))]  # page by page
        assert sorted(exported) == sorted([governed.run_id, plain.run_id])
        assert store.purge(older_than_days=0) == 2
    finally:
        store.close()
    assert defaults_called == []
