"""Input for a waiting run, and deciding inline on a real terminal (a pseudo-terminal).

Real processes over a real SQLite store; the tool asking for input is an installed plugin.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .fakes import plugin
from .test_cli_suspend import INPUT_PLUGIN, INPUT_SCRIPT, Shop, run_id_of

_ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")
PROMPT_APPROVE = "approve, deny or leave it waiting? [a/d/l] "
PROMPT_INPUT = "input as a JSON object (empty: leave it waiting): "


@pytest.fixture
def painter(tmp_path: Path) -> Shop:
    """A shop whose registry also has ``paint``, a tool that asks a person for a colour."""
    shop = Shop(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    plugin(site, INPUT_PLUGIN, "paint = twplugin:paint")
    shop.env["PYTHONPATH"] = os.pathsep.join([str(site), *sys.path])
    shop.script(INPUT_SCRIPT)
    return shop


def run_paint(shop: Shop) -> subprocess.CompletedProcess[str]:
    script = str(shop.tmp / "script.yaml")
    return shop.tw("run", "--script", script, "--tool", "paint", "--db", shop.db, "q")


def test_input_is_checked_against_the_schema_then_overlays_the_arguments(painter: Shop) -> None:
    waiting = run_paint(painter)
    assert waiting.returncode == 3, waiting.stdout + waiting.stderr
    lines = waiting.stdout.splitlines()
    run_id = run_id_of(waiting.stdout)
    assert f"resume it with: toolwire runs input {run_id} --db {painter.db} --json '{{...}}'" in (
        lines
    )
    schema = next(line for line in lines if line.startswith("  input for paint: "))
    assert '"colour":{"title":"Colour","type":"string"}' in schema.replace(" ", "")

    def give(text: str) -> subprocess.CompletedProcess[str]:
        return painter.tw("runs", "input", run_id, "--db", painter.db, "--json", text)

    not_json = give("{colour: red}")
    assert (not_json.returncode, not_json.stderr.strip()) == (
        2,
        """error: --json is not a JSON object (write it like '{"key": "value"}') """
        "(see toolwire runs input --help)",
    )
    wrong = give('{"colour": 5}')
    assert (wrong.returncode, wrong.stderr.strip()) == (
        1,
        "error: the input does not fit: colour: Input should be a valid string",
    )
    approve = painter.tw("runs", "approve", run_id, "--db", painter.db)
    assert (approve.returncode, approve.stderr.strip()) == (
        1,
        "error: this run waits for input, not approve",
    )
    assert painter.status(run_id) == "awaiting_input"

    answered = give('{"colour": "scarlet"}')
    assert answered.returncode == 0, answered.stdout + answered.stderr
    out = answered.stdout.splitlines()
    assert any(line.endswith("  answered by " + _user()) for line in out), out
    assert any(line.endswith("0 artifacts): painted scarlet") for line in out), out
    assert "scarlet" not in next(line for line in out if "answered by" in line)
    assert out.count("Painted.") == 1  # streamed, then not printed twice
    assert painter.tool_steps(run_id) == ["paint"]


def converse(shop: Shop, args: list[str], answers: list[tuple[str, str]]) -> tuple[int, str]:
    """Run ``toolwire`` on a pseudo-terminal; at each prompt, type its answer."""
    leader, follower = os.openpty()
    env = {**shop.env, "TERM": "dumb"}
    child = subprocess.Popen(
        [sys.executable, "-m", "toolwire", *args],
        stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    seen = ""
    pending = list(answers)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096).decode("utf-8", "replace")
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        if pending and _ANSI.sub("", seen).replace("\r", "").endswith(pending[0][0]):
            os.write(leader, (pending.pop(0)[1] + "\n").encode())
        if child.poll() is not None and not ready:
            break
    os.close(leader)
    code = child.wait(timeout=10)
    assert not pending, f"never prompted for {pending}: {seen}"
    return code, _ANSI.sub("", seen).replace("\r", "")


def test_on_a_terminal_the_run_asks_inline_and_carries_on(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    before = shop.stock()
    args = ["run", "--script", str(shop.script()), "--workspace", str(shop.workspace)]
    code, seen = converse(shop, [*args, "--db", shop.db, "q"], [(PROMPT_APPROVE, "a")])
    assert code == 0, seen
    lines = seen.splitlines()
    assert "  call 1: update_record" in lines
    assert PROMPT_APPROVE + "a" in lines
    assert any(line.endswith("  approved by " + _user()) for line in lines), lines
    assert lines.count("Stock is 99 now.") == 1  # streamed, then not printed twice
    assert (before, shop.stock()) == (40, 99)


def test_on_a_terminal_bad_input_is_asked_again(painter: Shop) -> None:
    script = str(painter.tmp / "script.yaml")
    args = ["run", "--script", script, "--tool", "paint", "--db", painter.db, "q"]
    answers = [
        (PROMPT_INPUT, "red"),
        (PROMPT_INPUT, '{"colour": []}'),
        (PROMPT_INPUT, '{"colour": "blue"}'),
    ]
    code, seen = converse(painter, args, answers)
    assert code == 0, seen
    lines = seen.splitlines()
    assert "error: that is not a JSON object; try again" in lines
    assert "error: the input does not fit: colour: Input should be a valid string" in lines
    assert any(line.endswith("0 artifacts): painted blue") for line in lines), lines
    assert lines.count("Painted.") == 1  # streamed, then not printed twice


def test_on_a_terminal_leaving_it_waiting_exits_3(tmp_path: Path) -> None:
    shop = Shop(tmp_path)
    args = ["run", "--script", str(shop.script()), "--workspace", str(shop.workspace)]
    code, seen = converse(shop, [*args, "--db", shop.db, "q"], [(PROMPT_APPROVE, "l")])
    assert code == 3, seen
    run_id = run_id_of(seen)
    assert shop.status(run_id) == "awaiting_approval"


def _user() -> str:
    import getpass

    return getpass.getuser()
