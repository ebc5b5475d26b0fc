"""Store files on disk: folders toolwire creates are 0700, database and key files 0600.

Every child runs with umask 022, the common default under which files come out 0644.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from toolwire.cli.keys import make_key
from toolwire.demo import prepare_demo

from .test_processes import SRC

UMASK = 0o022
OPEN_AND_STAT = """
import json, os, stat, sys
from toolwire import ScriptedProvider
from toolwire.runs.runtime import RunRequest
from toolwire.store import RunStore

path = sys.argv[1]
store = RunStore.open(path)
store.begin(RunRequest.of("hi", provider=ScriptedProvider.from_turns([{"content": "x"}])))
names = [os.path.dirname(path), path, path + "-wal", path + "-shm"]
print(json.dumps([oct(stat.S_IMODE(os.stat(n).st_mode)) for n in names]))
store.close()
"""


def mode(path: Path) -> str:
    return oct(stat.S_IMODE(path.stat().st_mode))


def toolwire_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"content": "fine"}]}))
    env = {k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "TOOLWIRE_STATE_KEY")}
    env |= {"XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": SRC}
    command = [sys.executable, "-m", "toolwire", "run", "--script", str(script), *args, "q"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=False, env=env, umask=UMASK
    )
    assert done.returncode == 0, done.stderr
    return done


def test_a_run_creates_the_data_folder_0700_and_the_database_0600(tmp_path: Path) -> None:
    toolwire_run(tmp_path)
    data = tmp_path / "data"
    assert mode(data) == "0o700"
    assert mode(data / "toolwire") == "0o700"
    assert mode(data / "toolwire" / "runs.db") == "0o600"


def test_the_data_folder_of_an_earlier_version_is_tightened(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "toolwire"
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    toolwire_run(tmp_path)
    assert mode(folder) == "0o700"
    assert mode(tmp_path / "data") == "0o755"  # not toolwire's: left as it was


def test_an_explicit_db_file_is_0600_and_its_folder_keeps_its_mode(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    mine.chmod(0o755)
    toolwire_run(tmp_path, "--db", str(mine / "audit.sqlite"))
    assert mode(mine) == "0o755"
    assert mode(mine / "audit.sqlite") == "0o600"


def test_the_wal_and_shm_files_are_0600_while_the_store_is_open(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    mine.chmod(0o755)
    path = mine / "runs.sqlite"
    env = {**os.environ, "PYTHONPATH": SRC}
    command = [sys.executable, "-c", OPEN_AND_STAT, str(path)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=True, env=env, umask=UMASK
    )
    assert json.loads(done.stdout) == ["0o755", "0o600", "0o600", "0o600"]


@pytest.fixture
def loose_umask() -> object:
    saved = os.umask(UMASK)
    yield
    os.umask(saved)


@pytest.mark.usefixtures("loose_umask")
def test_the_demo_and_the_key_folders_are_created_0700(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shop = prepare_demo(data)
    assert (mode(data), mode(shop.root)) == ("0o700", "0o700")
    make_key(tmp_path / "keys")
    assert mode(tmp_path / "keys") == "0o700"
    assert mode(tmp_path / "keys" / "state.key") == "0o600"


@pytest.mark.usefixtures("loose_umask")
def test_a_named_key_folder_keeps_its_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLWIRE_STATE_KEY", raising=False)
    named = tmp_path / "named"
    named.mkdir(mode=0o755)
    make_key(named)
    assert mode(named) == "0o755"
    assert mode(named / "state.key") == "0o600"
