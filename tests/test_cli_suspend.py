"""Suspended runs from the command line, over real processes and a real SQLite store.

Every command runs as ``python -m toolwire`` in its own process: a run suspended by one
process is decided and resumed by another.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from toolwire.cli.show import CHANGED_NOTICE, WHITESPACE_LEGEND
from toolwire.demo._content import write_database
from toolwire.store import RunStore

KEY = "ab" * 32
UPDATE_SCRIPT = """
name: restock  # a script's own name labels the run; the resume still finds the script
turns:
  - content: "restocking"
    tool_calls:
      - {name: update_record, arguments: {table: products, id: 1, values: {stock: 99}}}
  - content: "Stock is 99 now."
"""
INPUT_PLUGIN = """
    from pydantic import BaseModel
    from toolwire import tool

    class Colour(BaseModel):
        colour: str

    @tool(group="plugin", data_class="public", input_model=Colour)
    def paint(colour: str = "none") -> str:
        return f"painted {colour}"
"""
INPUT_SCRIPT = """
turns:
  - tool_calls: [{name: paint, arguments: {colour: grey}}]
  - content: "Painted."
"""


class Shop:
    """A workspace over a copy of the demo database, with update_record enabled in the store."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.database = tmp_path / "shop.sqlite"
        write_database(self.database)
        self.workspace = tmp_path / "workspace.toml"
        self.workspace.write_text(f'database_url = "sqlite:///{self.database}"\n')
        self.db = str(tmp_path / "runs.sqlite")
        with RunStore.open(self.db) as store:
            store.set_tool_state("update_record", True)
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in ("TOOLWIRE_DB", "COLUMNS")},
            "TOOLWIRE_STATE_KEY": KEY,
            "XDG_DATA_HOME": str(tmp_path / "data"),
            "COLUMNS": "200",
        }

    def script(self, text: str = UPDATE_SCRIPT) -> Path:
        path = self.tmp / "script.yaml"
        path.write_text(text)
        return path

    def tw(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "toolwire", *args],
            capture_output=True, text=True, timeout=60, check=False, env=self.env, input=stdin,
        )  # fmt: skip

    def run(self, *extra: str) -> subprocess.CompletedProcess[str]:
        script = str(self.script())
        workspace = ["--workspace", str(self.workspace)]
        return self.tw("run", "--script", script, *workspace, "--db", self.db, *extra, "q")

    def stock(self) -> int:
        with sqlite3.connect(self.database) as db:
            return int(db.execute("SELECT stock FROM products WHERE id = 1").fetchone()[0])

    def status(self, run_id: str) -> str:
        with RunStore.open(self.db) as store:
            stored = store.get_run(run_id)
        assert stored is not None
        return stored.status

    def tool_steps(self, run_id: str) -> list[str]:
        with RunStore.open(self.db) as store:
            stored = store.get_run(run_id)
        assert stored is not None
        return [s["tool_name"] for s in stored.steps if s["kind"] == "tool"]


@pytest.fixture
def shop(tmp_path: Path) -> Shop:
    return Shop(tmp_path)


def run_id_of(output: str) -> str:
    line = next(line for line in output.splitlines() if line.startswith("resume it with: "))
    return line.split()[6]


def test_a_run_without_a_terminal_waits_and_prints_how_to_resume(shop: Shop) -> None:
    before = shop.stock()
    done = shop.run()
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    run_id = run_id_of(done.stdout)
    assert f"run {run_id} is awaiting_approval" in lines
    assert f"resume it with: toolwire runs approve {run_id} --db {shop.db}" in lines
    assert f"or deny it with: toolwire runs deny {run_id} --db {shop.db}" in lines
    assert "  call 1: update_record" in lines
    assert shop.stock() == before
    assert shop.status(run_id) == "awaiting_approval"
    assert shop.tool_steps(run_id) == []
    assert "Traceback" not in done.stderr


def test_pending_shows_the_preview_and_approve_in_a_new_process_completes(shop: Shop) -> None:
    before = shop.stock()
    run_id = run_id_of(shop.run().stdout)
    pending = shop.tw("runs", "pending", "--db", shop.db)
    assert pending.returncode == 0, pending.stderr
    lines = pending.stdout.splitlines()
    heading = next(line for line in lines if line.startswith(f"run {run_id}  awaiting_approval"))
    preview = lines[lines.index(heading) + 1 :]
    assert preview[0].startswith("waiting for approval · turn ")
    assert preview[1] == "  call 1: update_record"
    assert any("99" in line for line in preview[2:]), preview
    assert shop.stock() == before

    approved = shop.tw("runs", "approve", run_id, "--db", shop.db, "--reason", "restock")
    assert approved.returncode == 0, approved.stdout + approved.stderr
    out = approved.stdout.splitlines()
    assert any(line.endswith(" approved by " + _user() + ": restock") for line in out), out
    assert any("tool update_record ok" in line for line in out), out
    assert out.count("Stock is 99 now.") == 1  # streamed, then not printed twice
    assert shop.stock() == 99
    assert shop.tool_steps(run_id) == ["update_record"]
    assert shop.status(run_id) == "completed"

    again = shop.tw("runs", "approve", run_id, "--db", shop.db)
    assert again.returncode == 1
    assert again.stderr.strip() == "error: no waiting run has this id"
    assert shop.tool_steps(run_id) == ["update_record"]


def test_deny_lets_the_model_read_the_refusal_and_writes_nothing(shop: Shop) -> None:
    before = shop.stock()
    run_id = run_id_of(shop.run().stdout)
    denied = shop.tw("runs", "deny", run_id, "--db", shop.db, "--reason", "not today")
    assert denied.returncode == 0, denied.stdout + denied.stderr
    out = denied.stdout.splitlines()
    assert any(line.endswith(" denied by " + _user() + ": not today") for line in out), out
    assert any("tool update_record error" in line for line in out), out
    assert shop.stock() == before
    assert shop.status(run_id) == "completed"


def test_a_stale_turn_is_a_clear_error_and_changes_nothing(shop: Shop) -> None:
    run_id = run_id_of(shop.run().stdout)
    stale = shop.tw("runs", "approve", run_id, "--db", shop.db, "--turn", "0" * 32)
    assert stale.returncode == 1
    assert stale.stderr.strip() == (
        "error: the pending turn changed (the decision was made on another turn than the one "
        "pending); see the current one with: toolwire runs pending"
    )
    assert shop.status(run_id) == "awaiting_approval"
    assert shop.tool_steps(run_id) == []


def test_cancel_a_waiting_run(shop: Shop) -> None:
    before = shop.stock()
    run_id = run_id_of(shop.run().stdout)
    cancelled = shop.tw("runs", "cancel", run_id, "--db", shop.db)
    assert (cancelled.returncode, cancelled.stdout.strip()) == (0, f"run {run_id} cancelled")
    assert shop.status(run_id) == "cancelled"
    late = shop.tw("runs", "approve", run_id, "--db", shop.db)
    assert (late.returncode, late.stderr.strip()) == (1, "error: no waiting run has this id")
    again = shop.tw("runs", "cancel", run_id, "--db", shop.db)
    assert again.returncode == 1
    assert again.stderr.strip() == f"error: no running or waiting run has the id {run_id}"
    assert shop.stock() == before


def test_without_a_key_the_run_fails_clearly(shop: Shop) -> None:
    del shop.env["TOOLWIRE_STATE_KEY"]
    before = shop.stock()
    done = shop.run()
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "error: the run could not be suspended: no state key: set TOOLWIRE_STATE_KEY (32 "
        "bytes, hex or base64url) or start toolwire serve or demo, which create one; without "
        "it a run cannot be suspended"
    )
    assert "Traceback" not in done.stderr
    assert shop.stock() == before
    assert not (shop.tmp / "data" / "toolwire" / "state.key").exists()


def _user() -> str:
    import getpass

    return getpass.getuser()


def test_write_file_waits_shows_its_diff_and_writes_once_approved(shop: Shop) -> None:
    files = shop.tmp / "files"
    files.mkdir()
    (files / "notes.txt").write_text("old line\n")
    shop.workspace.write_text(f'files_root = "{files}"\n')
    shop.script(
        "turns:\n"
        '  - tool_calls: [{name: write_file, arguments: {path: notes.txt, text: "new line\\n"}}]\n'
        "  - content: Written.\n"
    )
    workspace = ["--workspace", str(shop.workspace)]
    done = shop.tw(
        "run", "--script", str(shop.tmp / "script.yaml"), *workspace, "--db", shop.db, "q"
    )
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "  call 1: write_file" in lines
    assert "    -old line" in lines and "    +new line" in lines
    assert (files / "notes.txt").read_text() == "old line\n"
    approved = shop.tw("runs", "approve", run_id_of(done.stdout), "--db", shop.db)
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert approved.stdout.splitlines().count("Written.") == 1
    assert (files / "notes.txt").read_text() == "new line\n"


def test_a_provider_that_cannot_be_rebuilt_is_a_clear_error_and_the_run_still_waits(
    shop: Shop,
) -> None:
    run_id = run_id_of(shop.run().stdout)
    script = shop.tmp / "script.yaml"
    script.unlink()
    done = shop.tw("runs", "approve", run_id, "--db", shop.db)
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: ") and str(script) in done.stderr
    assert "Traceback" not in done.stderr
    assert shop.status(run_id) == "awaiting_approval" and shop.tool_steps(run_id) == []


INDENTED = "def main():\n    if ready:\n        start()\n        report()\n"
MOVED_OUT = "def main():\n    if ready:\n        start()\n    report()\n"


def _write_file_run(shop: Shop, before: str, text: str) -> tuple[Path, str]:
    """A run of write_file on ``app.py`` (holding ``before``) that waits; the file, the run id."""
    files = shop.tmp / "files"
    files.mkdir()
    (files / "app.py").write_text(before)
    shop.workspace.write_text(f'files_root = "{files}"\n')
    arguments = json.dumps({"path": "app.py", "text": text})
    shop.script(f"turns:\n  - tool_calls: [{{name: write_file, arguments: {arguments}}}]\n"
                "  - content: Written.\n")  # fmt: skip
    workspace = ["--workspace", str(shop.workspace)]
    done = shop.tw("run", "--script", str(shop.tmp / "script.yaml"), *workspace, "--db", shop.db,
                   "q")  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    return files / "app.py", run_id_of(done.stdout)


def _turn_of(output: str) -> str:
    return next(line for line in output.splitlines() if " · turn " in line).split()[-1]


def test_pending_shows_an_indentation_moved_out_of_a_block_with_visible_whitespace(
    shop: Shop,
) -> None:
    app, run_id = _write_file_run(shop, INDENTED, MOVED_OUT)
    pending = shop.tw("runs", "pending", "--db", shop.db)
    assert pending.returncode == 0, pending.stderr
    lines = pending.stdout.splitlines()
    start = lines.index("  call 1: write_file")
    assert lines[start + 1 :] == [
        "    --- a/app.py", "    +++ b/app.py", "    @@ -1,4 +1,4 @@",
        "     def main():", "    ·····if ready:", "    ·········start()",
        "    -········report()", "    +····report()",
        "  " + WHITESPACE_LEGEND,
    ]  # fmt: skip
    assert app.read_text() == INDENTED
    assert shop.status(run_id) == "awaiting_approval"


def test_a_file_changed_after_its_preview_waits_again_and_the_old_turn_is_refused(
    shop: Shop,
) -> None:
    app, run_id = _write_file_run(shop, "old\n", "mine\n")
    first = _turn_of(shop.tw("runs", "pending", "--db", shop.db).stdout)
    app.write_text("theirs\n")
    again = shop.tw("runs", "approve", run_id, "--db", shop.db, "--turn", first)
    assert again.returncode == 3, again.stdout + again.stderr
    out = again.stdout.splitlines()
    assert "  " + CHANGED_NOTICE in out and "  call 1: write_file (changed)" in out
    assert "    -theirs" in out and "    +mine" in out
    assert app.read_text() == "theirs\n"
    assert shop.status(run_id) == "awaiting_approval" and shop.tool_steps(run_id) == []
    second = _turn_of(again.stdout)
    assert second != first
    stale = shop.tw("runs", "approve", run_id, "--db", shop.db, "--turn", first)
    assert stale.returncode == 1
    assert stale.stderr.strip().startswith("error: the pending turn changed")
    assert app.read_text() == "theirs\n"
    done = shop.tw("runs", "approve", run_id, "--db", shop.db, "--turn", second)
    assert done.returncode == 0, done.stdout + done.stderr
    assert app.read_text() == "mine\n" and shop.status(run_id) == "completed"
