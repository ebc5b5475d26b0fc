"""Where the command line finds the state key: ``demo`` and ``serve`` create it (mode 0600),
``run`` and ``runs`` read the same file, and the environment wins over it."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from toolwire.cli.serve import build_settings
from toolwire.core.sealing import ensure_key

from .served import served
from .test_cli_suspend import Shop, run_id_of


def test_serve_creates_a_private_key_file_and_reuses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLWIRE_STATE_KEY", raising=False)
    first = build_settings(None, None, key_folder=tmp_path)
    key_file = tmp_path / "state.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    second = build_settings(None, None, key_folder=tmp_path)
    assert first.state_key is not None and second.state_key is not None
    sealed = first.state_key.seal("run-1", "canary")
    assert second.state_key.open("run-1", sealed) == "canary"


def test_serve_takes_the_key_from_the_environment_without_writing_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLWIRE_STATE_KEY", "cd" * 32)
    settings = build_settings(None, None, key_folder=tmp_path)
    assert settings.state_key is not None
    assert settings.state_key.open("r", ensure_key(tmp_path / "other.key").seal("r", "x")) == "x"
    assert not (tmp_path / "state.key").exists()


def test_demo_writes_its_key_into_its_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLWIRE_STATE_KEY", raising=False)
    with served(["demo", "--data-dir", str(tmp_path / "demo")], tmp_path / "data"):
        pass
    key_file = tmp_path / "demo" / "state.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


@pytest.fixture
def shop_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "shop").mkdir()
    env = Shop(tmp_path / "shop").env
    del env["TOOLWIRE_STATE_KEY"]
    return env


def test_run_and_runs_read_the_key_file_in_the_user_data_directory(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    del shop.env["TOOLWIRE_STATE_KEY"]
    ensure_key(tmp_path / "data" / "toolwire" / "state.key")  # as demo or serve would
    waiting = shop.run()
    assert waiting.returncode == 3, waiting.stdout + waiting.stderr
    run_id = run_id_of(waiting.stdout)
    approved = shop.tw("runs", "approve", run_id, "--db", shop.db)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert shop.stock() == 99


def test_another_key_cannot_open_the_run_and_nothing_runs(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    run_id = run_id_of(shop.run().stdout)
    shop.env["TOOLWIRE_STATE_KEY"] = "ef" * 32
    pending = shop.tw("runs", "pending", "--db", shop.db)
    assert pending.returncode == 0
    assert (
        "  cannot show its pending turn: the suspended state cannot be opened: it was changed, "
        "belongs to another run, or was sealed under another key"
    ) in pending.stdout.splitlines()
    approved = shop.tw("runs", "approve", run_id, "--db", shop.db)
    assert approved.returncode == 1
    assert approved.stderr.strip() == (
        "error: the suspended state cannot be opened: it was changed, belongs to another run, "
        "or was sealed under another key"
    )
    assert shop.status(run_id) == "awaiting_approval" and shop.tool_steps(run_id) == []


def test_a_bad_key_file_is_a_clear_error(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    del shop.env["TOOLWIRE_STATE_KEY"]
    key_file = tmp_path / "data" / "toolwire" / "state.key"
    key_file.parent.mkdir(parents=True)
    key_file.write_text("not a key\n")
    done = shop.tw("runs", "approve", "some-run", "--db", shop.db)
    assert done.returncode == 1
    assert done.stderr.strip() == "error: a state key must be 32 bytes, not 5"
    assert "Traceback" not in done.stderr


def test_without_any_key_a_decision_says_so(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    run_id = run_id_of(shop.run().stdout)
    del shop.env["TOOLWIRE_STATE_KEY"]
    done = shop.tw("runs", "approve", run_id, "--db", shop.db)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: no state key: set TOOLWIRE_STATE_KEY")
    assert shop.status(run_id) == "awaiting_approval"
