"""A server's question during ``toolwire run``: asked at the terminal (a pseudo-terminal),
where an answer that does not fit the form is named and asked again; declined, with the
reason in the run's steps, when no person is at a terminal."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import sqlalchemy

from toolwire.cli.ask import actor
from toolwire.store import RunStore
from toolwire.store.schema import questions

from ..test_cli_input import converse
from .kit import PYTHON, script

PROMPT = "answer as a JSON object, d to decline, c to cancel: "


class Asked:
    """A workspace with the asking server and a script that calls ``sign_up`` once."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.workspace = tmp / "w.toml"
        self.workspace.write_text(f"""
[mcp_servers.asking]
command = "{PYTHON}"
args = [{script("asking.py")}]
enabled = true
admin_only = false
data_class = "public"
""")  # fmt: skip
        self.script = tmp / "script.json"
        call = {"name": "asking__sign_up", "arguments": {}}
        self.script.write_text(json.dumps([{"tool_calls": [call]}, {"content": "signed up"}]))
        src = str(Path(__file__).parents[2] / "src")
        # A key, as a run's question is put in the store only sealed with one.
        self.env = {**os.environ, "PYTHONPATH": src, "TOOLWIRE_DATA_DIR": str(tmp / "data"),
                    "COLUMNS": "200", "TOOLWIRE_STATE_KEY": "7a" * 32}  # fmt: skip

    def args(self, *extra: str, db: str | None = None) -> list[str]:
        """``toolwire run``'s arguments: recorded in the store ``db`` names, else not at all."""
        store = ["--no-store"] if db is None else ["--db", db]
        return ["run", "--workspace", str(self.workspace), "--script", str(self.script),
                *store, *extra, "sign me up"]  # fmt: skip


def test_on_a_terminal_the_question_is_asked_and_a_bad_answer_asked_again(
    tmp_path: Path,
) -> None:
    asked = Asked(tmp_path)
    answers = [(PROMPT, '{"name": 5}'), (PROMPT, '{"name": "Ada", "age": 36}')]
    code, seen = converse(asked, asked.args(), answers)  # type: ignore[arg-type]
    assert code == 0, seen
    lines, flat = seen.splitlines(), " ".join(seen.split())  # the terminal wraps long lines
    assert "server asking asks, during asking__sign_up:" in lines, seen
    assert "  Who are you?" in lines
    assert "  name (string, required): Your name" in lines
    assert "  plan (choice, one of free, pro, default free)" in lines
    assert "error: the answer does not fit the form: name: is not text" in lines, seen
    assert "a server's question answered by " in flat
    assert ": asking__sign_up: 3 of 3 field(s) answered" in flat
    assert '{"action": "accept", "content": {"name": "Ada", "plan": "free", "age": 36}}' in flat


def test_without_a_terminal_the_question_is_declined_with_the_reason(tmp_path: Path) -> None:
    asked = Asked(tmp_path)
    done = subprocess.run([sys.executable, "-m", "toolwire", *asked.args()], env=asked.env,
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    flat = " ".join(done.stdout.split())
    assert '{"action": "decline", "content": null}' in flat
    assert "a server's question declined by toolwire: asking__sign_up: 0 of 3 field(s) " \
           "answered; no person can answer this run's questions" in flat  # fmt: skip


def test_a_question_at_a_terminal_answered_from_another_process_stops_being_asked(
    tmp_path: Path,
) -> None:
    asked = Asked(tmp_path)
    db = str(tmp_path / "runs.db")
    args = asked.args(db=db)
    leader, follower = os.openpty()
    child = subprocess.Popen([sys.executable, "-m", "toolwire", *args], stdin=follower,
                             stdout=follower, stderr=follower, env={**asked.env, "TERM": "dumb"},
                             close_fds=True)  # fmt: skip
    os.close(follower)
    seen, answered = "", None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                seen += os.read(leader, 4096).decode("utf-8", "replace")
            except OSError:
                break
        if answered is None and seen.replace("\r", "").endswith(PROMPT):
            answered = elsewhere(asked, db)
    os.close(leader)
    assert child.wait(timeout=10) == 0, seen
    assert answered is not None and answered.returncode == 0, (answered, seen)
    flat = " ".join(seen.replace("\r", "").split())
    assert "(the question was answered elsewhere, or it expired)" in flat
    assert f"a server's question answered by {actor()}: asking__sign_up: 2 of 3 field(s)" in flat
    assert '{"action": "accept", "content": {"name": "Cy", "plan": "free"}}' in flat


def elsewhere(asked: Asked, db: str) -> subprocess.CompletedProcess[str]:
    """``toolwire runs input`` from another process, on the run the terminal waits on."""

    def toolwire(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "toolwire", *args, "--db", db],
                              env=asked.env, capture_output=True, text=True, timeout=60,
                              check=False)  # fmt: skip

    (waiting,) = json.loads(toolwire("runs", "pending", "--json").stdout)
    return toolwire("runs", "input", waiting["id"], "--json", '{"name": "Cy"}')


def test_a_recorded_run_answered_at_its_terminal_leaves_no_question_in_the_store(
    tmp_path: Path,
) -> None:
    asked = Asked(tmp_path)
    db = str(tmp_path / "runs.db")
    args = asked.args(db=db)
    code, seen = converse(asked, args, [(PROMPT, '{"name": "Di"}')])  # type: ignore[arg-type]
    assert code == 0, seen
    flat = " ".join(seen.split())
    assert '{"action": "accept", "content": {"name": "Di", "plan": "free"}}' in flat
    with RunStore.open(db) as store:
        (run,) = store.list_runs()
        assert (run.status, store.open_questions()) == ("completed", [])
        with store.engine.connect() as connection:
            assert (
                connection.execute(
                    sqlalchemy.select(sqlalchemy.func.count()).select_from(questions)
                ).scalar()
                == 0
            )
