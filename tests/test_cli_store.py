"""One store for every command, and a store that was asked for is opened or refused.

Every test runs real ``python -m toolwire`` processes on a fresh user data directory, with
``$TOOLWIRE_DB`` unset unless the test sets it.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from toolwire.store import RunStore

from .served import free_port, served_output

ANSWER = "kept answer"


def toolwire(
    tmp_path: Path, *args: str, env_db: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "COLUMNS")}
    env |= {"XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "200"}
    if env_db is not None:
        env["TOOLWIRE_DB"] = env_db
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args],
        capture_output=True, text=True, timeout=60, check=False, env=env, cwd=cwd,
    )  # fmt: skip


def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(f"turns:\n  - content: {ANSWER!r}\n")
    return path


def run(
    tmp_path: Path, *args: str, env_db: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    command = ["run", "--script", str(script(tmp_path)), *args, "hi"]
    return toolwire(tmp_path, *command, env_db=env_db, cwd=cwd)


def stored_runs(path: Path) -> int:
    with RunStore.open(str(path)) as store:
        return len(store.list_runs())


def test_run_runs_serve_and_demo_share_one_default_store(tmp_path: Path) -> None:
    default = tmp_path / "data" / "toolwire" / "runs.db"
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    listed = toolwire(tmp_path, "runs", "list")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 2, listed.stdout  # head
    serve = ["serve", "--script", str(script(tmp_path))]
    with served_output(serve, tmp_path / "data") as (base, token, printed):
        headers = {"Authorization": f"Bearer {token}"}
        seen = httpx.get(base + "/api/runs", headers=headers, timeout=10).json()["runs"]
        body = {"prompt": "hi", "provider": "scripted"}
        ran = httpx.post(base + "/api/runs", json=body, headers=headers, timeout=30)
    assert f"runs are kept in {default}\n" in printed
    assert len(seen) == 1
    assert ran.status_code == 200, ran.text
    assert stored_runs(default) == 2  # serve kept the page's run in the same file
    with served_output(["demo"], tmp_path / "data") as (_, _, printed):
        pass
    assert printed.count(f"runs are kept in {default}\n") == 1
    assert not (tmp_path / "data" / "toolwire" / "runs.sqlite").exists()


def test_toolwire_db_overrides_the_default_and_db_overrides_both(tmp_path: Path) -> None:
    from_env, from_flag = tmp_path / "env.db", tmp_path / "flag.db"
    assert run(tmp_path, env_db=str(from_env)).returncode == 0
    assert run(tmp_path, "--db", str(from_flag), env_db=str(from_env)).returncode == 0
    assert (stored_runs(from_env), stored_runs(from_flag)) == (1, 1)
    assert not (tmp_path / "data" / "toolwire" / "runs.db").exists()


def closed_port_pg() -> str:
    return f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/toolwire"


@pytest.mark.parametrize(
    ("args", "env_db", "expected"),
    [
        (["--db", "mysql://root@127.0.0.1/x"], None,
         "error: --db: unsupported store URL scheme 'mysql': use a file path, sqlite:///PATH or "
         "postgresql+psycopg://USER@HOST/DB"),
        (["--db", "sqlite://"], None,
         "error: --db: an in-memory SQLite store would be a different database on every "
         "connection and is not kept: give a file, e.g. sqlite:///runs.db"),
        ([], "mysql://root@127.0.0.1/x",
         "error: $TOOLWIRE_DB: unsupported store URL scheme 'mysql': use a file path, "
         "sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"),
        ([], "no-such-kind-of-store",
         "error: $TOOLWIRE_DB: not a database URL nor a SQLite file name: give a path ending in "
         ".db, .sqlite or .sqlite3 (or an existing file), sqlite:///PATH or "
         "postgresql+psycopg://USER@HOST/DB"),
    ],
)  # fmt: skip
def test_a_store_that_was_asked_for_and_cannot_open_is_an_error(
    tmp_path: Path, args: list[str], env_db: str | None, expected: str
) -> None:
    done = run(tmp_path, *args, env_db=env_db)
    assert (done.returncode, done.stderr, done.stdout) == (1, expected + "\n", "")


def test_an_unreachable_postgresql_is_an_error_and_nothing_runs(tmp_path: Path) -> None:
    url = closed_port_pg()
    serve = ["serve", "--db", url, "--port", str(free_port())]
    for command in (run(tmp_path, "--db", url), toolwire(tmp_path, *serve)):
        assert (command.returncode, command.stdout) == (1, "")
        assert command.stderr.startswith(f"error: --db: the run store could not open {url}: ")
        assert len(command.stderr.splitlines()) == 1


def test_only_the_implicit_default_degrades_and_it_says_so(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file where the user data directory should be")
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == (
        f"warning: the default store: cannot create the store directory "
        f"{tmp_path / 'data' / 'toolwire'}: a file is in the way; nothing is recorded"
    )
    assert ANSWER in done.stdout


def test_a_db_in_a_missing_folder_is_refused_and_no_folder_is_made(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    for db in (f"sqlite:///{missing}/x.db", str(missing / "x.db")):
        done = run(tmp_path, "--db", db)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (
            f"error: --db: cannot open the store {missing}/x.db: the folder {missing} "
            "does not exist\n"
        )
    assert not (tmp_path / "no").exists()


def test_a_db_that_is_not_a_url_or_a_sqlite_file_is_refused_and_no_file_is_made(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    bad = ("--db", "not a url at all")
    for done in (
        run(tmp_path, *bad, cwd=work),
        toolwire(tmp_path, "serve", *bad, "--port", str(free_port()), cwd=work),
        toolwire(tmp_path, "runs", "list", *bad, cwd=work),
    ):
        assert done.returncode == 1, done.stdout
        assert done.stderr == (
            "error: --db: not a database URL nor a SQLite file name: give a path ending in .db, "
            ".sqlite or .sqlite3 (or an existing file), sqlite:///PATH or "
            "postgresql+psycopg://USER@HOST/DB\n"
        )
    assert list(work.iterdir()) == []


def test_a_plain_path_with_a_sqlite_name_or_to_an_existing_file_is_a_store(tmp_path: Path) -> None:
    existing = tmp_path / "audit"
    assert run(tmp_path, "--db", str(tmp_path / "a.sqlite3")).returncode == 0
    RunStore.open(str(tmp_path / "seed.db")).close()
    (tmp_path / "seed.db").rename(existing)
    assert run(tmp_path, "--db", str(existing)).returncode == 0
    assert (stored_runs(tmp_path / "a.sqlite3"), stored_runs(existing)) == (1, 1)


def test_serve_with_a_workspace_on_a_missing_database_is_refused(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace.toml"
    workspace.write_text('database_url = "sqlite:///shop.db"\n')
    done = toolwire(tmp_path, "serve", "--workspace", str(workspace), "--port", str(free_port()))
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"error: {workspace}: database_url: no SQLite database at {tmp_path / 'shop.db'}"
    )
    assert not (tmp_path / "shop.db").exists()


def test_serve_on_a_busy_port_writes_nothing(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = toolwire(tmp_path, "serve", "--port", str(port))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert not (tmp_path / "data").exists()


def test_a_store_that_cannot_be_written_stops_the_run_before_it_starts(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    assert run(tmp_path, "--db", str(db)).returncode == 0
    lock = sqlite3.connect(db, isolation_level=None)
    try:
        lock.execute("BEGIN IMMEDIATE")  # another process writing, and never done
        locked = run(tmp_path, "--db", str(db))
        unrecorded = run(tmp_path, "--no-store")
    finally:
        lock.close()
    assert (locked.returncode, locked.stdout) == (1, "")
    assert locked.stderr == (
        f"error: {db}: the run store could not begin a run: database is locked; nothing ran "
        "(--no-store runs without recording)\n"
    )
    assert stored_runs(db) == 1
    assert unrecorded.returncode == 0, unrecorded.stderr
    assert ANSWER in unrecorded.stdout and "recorded" not in unrecorded.stdout
    assert not (tmp_path / "data" / "toolwire").exists()


def test_no_store_cannot_go_with_a_store_or_the_queue(tmp_path: Path) -> None:
    for extra, named in ((["--db", str(tmp_path / "x.db")], "--db"), (["--queue"], "--queue")):
        done = run(tmp_path, "--no-store", *extra)
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == f"error: --no-store records nothing: it cannot go with {named}\n"
    assert not (tmp_path / "x.db").exists()
