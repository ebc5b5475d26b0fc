"""Choosing and resolving the store: one default, what was asked for, nothing made by mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.core.errors import StoreError
from toolwire.store import RunStore
from toolwire.store.engine import (
    DEFAULT_ORIGIN,
    NOT_A_STORE,
    StoreChoice,
    choose_store,
    resolve_url,
    where,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("TOOLWIRE_DB", raising=False)
    return tmp_path


def test_db_wins_then_the_demo_folder_then_the_environment_then_the_default(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = str(home / "data" / "toolwire" / "runs.db")
    assert choose_store(None) == StoreChoice(target=default, origin=DEFAULT_ORIGIN)
    monkeypatch.setenv("TOOLWIRE_DB", "env.db")
    assert choose_store(None) == StoreChoice(target="env.db", origin="$TOOLWIRE_DB")
    folder = home / "demo"
    assert choose_store(None, folder=folder) == StoreChoice(
        target=str(folder / "runs.db"), origin="--data-dir"
    )
    assert choose_store("x.db", folder=folder) == StoreChoice(target="x.db", origin="--db")
    assert [c.asked_for for c in (choose_store("x.db"), choose_store(None))] == [True, True]
    monkeypatch.delenv("TOOLWIRE_DB")
    assert choose_store(None).asked_for is False


@pytest.mark.parametrize("text", ["not a url at all", "runs", "store.txt", "folder/"])
def test_a_plain_path_must_look_like_a_sqlite_file(home: Path, text: str) -> None:
    with pytest.raises(StoreError) as caught:
        resolve_url(str(home / text))
    assert str(caught.value) == NOT_A_STORE
    assert sorted(p.name for p in home.iterdir()) == []


def test_sqlite_names_and_existing_files_are_stores(home: Path) -> None:
    existing = home / "audit"
    existing.write_bytes(b"")
    for name in ("a.db", "b.SQLITE", "c.sqlite3"):
        assert resolve_url(str(home / name)).database == str(home / name)
    assert resolve_url(str(existing)).database == str(existing)


def test_a_relative_sqlite_url_becomes_absolute(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(home)
    assert resolve_url("sqlite:///runs.db").database == str(home / "runs.db")


def test_a_missing_folder_is_refused_and_not_created(home: Path) -> None:
    missing = home / "no" / "such" / "dir"
    with pytest.raises(StoreError) as caught:
        RunStore.open(f"sqlite:///{missing}/x.db")
    assert str(caught.value) == (
        f"cannot open the store {missing}/x.db: the folder {missing} does not exist"
    )
    assert not (home / "no").exists()


def test_only_the_default_store_gets_its_folder_made(home: Path) -> None:
    with RunStore.open(None) as store:
        assert where(store.url) == str(home / "data" / "toolwire" / "runs.db")
    assert (home / "data" / "toolwire" / "runs.db").is_file()


def test_in_memory_sqlite_is_refused_as_not_kept() -> None:
    for url in ("sqlite://", "sqlite:///:memory:"):
        with pytest.raises(StoreError) as caught:
            resolve_url(url)
        assert str(caught.value) == (
            "an in-memory SQLite store would be a different database on every connection and "
            "is not kept: give a file, e.g. sqlite:///runs.db"
        )


def test_where_names_a_file_by_its_path_and_a_server_without_its_password() -> None:
    assert where(resolve_url("sqlite:////srv/runs.db")) == "/srv/runs.db"
    url = resolve_url("postgresql+psycopg://me:topsecret@db.internal:5433/audit")
    assert where(url) == "postgresql+psycopg://me:***@db.internal:5433/audit"
