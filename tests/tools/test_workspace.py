from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from toolwire.core.errors import ConfigError
from toolwire.workspace.config import Workspace, load_workspace

from .conftest import invoke


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "workspace.toml"
    path.write_text(text)
    return path


def test_load_resolves_relative_paths_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    sqlite3.connect(tmp_path / "shop.db").close()
    path = write(
        tmp_path,
        'database_url = "sqlite:///shop.db"\nfiles_root = "files"\n'
        'log_files = ["logs/app.log"]\nbase_urls = ["https://shop.example"]\n',
    )
    workspace = load_workspace(path)
    assert workspace.database_url == f"sqlite:///{tmp_path}/shop.db"
    assert workspace.files_root == (tmp_path / "files").resolve()
    assert workspace.log_files == (tmp_path / "logs" / "app.log",)
    assert workspace.base_urls == ("https://shop.example",)


def test_the_engine_is_created_once_and_lazily(tmp_path: Path) -> None:
    workspace = Workspace(database_url=f"sqlite:///{tmp_path}/x.db")
    assert not (tmp_path / "x.db").exists()
    assert workspace.engine() is workspace.engine()
    workspace.dispose()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('databse_url = "sqlite://"\n', "databse_url: unknown key"),
        ("log_files = 3\n", "log_files: Input should be a valid list"),
        ('files_root = "nope"\n', "files_root: "),
        ('database_url = "::not a url::"\n', "database_url: not a valid SQLAlchemy URL"),
        ('base_urls = ["ftp://x"]\n', "base_urls[0]: must be an http(s) URL with a host"),
        ('base_urls = ["https://u:hunter2@x"]\n', "base_urls[0]: must be an http(s) URL"),
        ("database_url = \n", "is not valid TOML"),
    ],
)  # fmt: skip
def test_bad_files_name_the_key_and_never_echo_secrets(
    tmp_path: Path, text: str, error: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_workspace(write(tmp_path, text))
    assert error in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read workspace file"):
        load_workspace(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "url", ["post gres://u:hunter2@x", "postgresql://u:hunter2@host:notaport/db"]
)
def test_database_passwords_never_appear_in_errors(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Workspace.from_flags(database=url)
    assert str(caught.value) == "the command line: database_url: not a valid SQLAlchemy URL"


def test_from_flags_builds_the_same_workspace(tmp_path: Path) -> None:
    sqlite3.connect(tmp_path / "a.db").close()
    workspace = Workspace.from_flags(
        database=f"sqlite:///{tmp_path}/a.db", files=tmp_path, logs=[tmp_path / "l.log"]
    )
    assert workspace.files_root == tmp_path.resolve()
    assert workspace.log_files == (tmp_path / "l.log",)


def test_tools_fail_closed_without_a_workspace() -> None:
    for name in ("read_records", "get_table_schema"):
        assert invoke(None, name, {"table": "t"}).content == (
            "Error: no workspace is configured for this run."
        )
    assert invoke("not a workspace", "get_env").content == (  # type: ignore[arg-type]
        "Error: no workspace is configured for this run."
    )


def test_a_missing_sqlite_database_is_refused_by_name_and_not_created(tmp_path: Path) -> None:
    path = write(tmp_path, 'database_url = "sqlite:///data/shop.db"\n')
    with pytest.raises(ConfigError) as caught:
        load_workspace(path)
    missing = tmp_path / "data" / "shop.db"
    assert str(caught.value) == f"{path}: database_url: no SQLite database at {missing}"
    with pytest.raises(ConfigError) as caught:
        Workspace.from_flags(database=f"sqlite:///{missing}")
    assert str(caught.value) == f"the command line: database_url: no SQLite database at {missing}"
    assert list(tmp_path.iterdir()) == [path]


def test_a_database_removed_after_loading_is_an_error_not_a_new_empty_one(tmp_path: Path) -> None:
    database = tmp_path / "shop db#1.db"  # a space and a '#' survive the URI
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (x)")
    db.close()
    workspace = Workspace.from_flags(database=f"sqlite:///{database}")
    with workspace.engine().connect() as connection:
        assert connection.exec_driver_sql("SELECT name FROM sqlite_master").all() == [("t",)]
    workspace.dispose()
    database.unlink()
    with pytest.raises(OperationalError, match="unable to open database file"):
        workspace.engine().connect()
    assert not database.exists()
