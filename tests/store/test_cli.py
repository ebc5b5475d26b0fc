from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from toolwire.cli import run, runs  # noqa: F401  (register the commands)
from toolwire.cli.app import app

RUN_LINE = re.compile(r"run ([0-9a-f-]{36}) recorded")


def script(tmp_path: Path, answer: str) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(f"turns:\n  - content: {answer!r}\n")
    return path


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.output


def record(tmp_path: Path, db: Path, answer: str, privacy: str = "metadata") -> str:
    code, out = invoke(
        "run",
        "hi",
        "--script",
        str(script(tmp_path, answer)),
        "--db",
        str(db),
        "--privacy",
        privacy,
    )
    assert code == 0, out
    found = RUN_LINE.search(out)
    assert found is not None, out
    return found.group(1)


def test_run_records_and_runs_list_shows_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    first = record(tmp_path, db, "one")
    second = record(tmp_path, db, "two", privacy="full")
    code, out = invoke("runs", "list", "--db", str(db))
    assert code == 0
    header, *lines = out.splitlines()
    assert header.startswith("ID        STATUS     CREATED")
    assert [line.split()[0] for line in lines] == [second[:8], first[:8]]  # a short id prefix
    assert lines[0].endswith("scripted  1       0       unknown  2      full")
    assert " completed " in lines[1] and lines[1].endswith("2      metadata")


def test_runs_show_renders_steps_and_escapes_terminal_controls(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = record(tmp_path, db, "mail ann@example.org \x1b[31mred", privacy="redacted")
    code, out = invoke("runs", "show", run_id, "--db", str(db))
    assert code == 0, out
    assert "\x1b" not in out
    assert out.splitlines()[:11] == [
        f"run {run_id}",
        "  status: completed",
        *[line for line in out.splitlines()[2:4]],  # created and finished times
        "  provider: scripted",
        "  privacy: redacted",
        "  rounds: 1",
        "  tokens: 0 prompt, 0 completion",
        "  cost: unknown",
        "  answer: mail ***@*** \\x1b[31mred",
        "",
    ]
    assert "#1 request · round 1 · 0.0 ms" in out
    assert '  messages_sent: [{"role":"user","content":"hi"}]' in out
    assert "  content: mail ***@*** \\x1b[31mred" in out


def test_runs_show_says_when_content_was_withheld(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    run_id = record(tmp_path, db, "secret plans")
    _, out = invoke("runs", "show", run_id, "--db", str(db))
    assert "  answer: withheld (12 characters)" in out
    assert "secret plans" not in out
    assert "  content_length: 12" in out


def test_runs_show_of_an_unknown_run_fails_clearly(tmp_path: Path) -> None:
    code, out = invoke("runs", "show", "nope", "--db", str(tmp_path / "runs.db"))
    assert (code, out) == (1, "error: no run with id nope\n")


def test_runs_purge_and_the_store_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "env.db"
    record(tmp_path, db, "one")
    env = {"TOOLWIRE_DB": str(db)}
    purge = ("runs", "purge", "--yes", "--older-than")
    assert invoke(*purge, "1d", env=env) == (0, "purged 0 runs\n")
    assert invoke(*purge, "0s", env=env) == (0, "purged 1 run\n")
    assert invoke("runs", "list", env=env) == (0, "no runs recorded\n")


def test_a_store_that_cannot_open(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    db = str(blocker / "runs.db")
    refused = f"error: --db: cannot create the store directory {blocker}: a file is in the way\n"
    assert invoke("runs", "list", "--db", db) == (1, refused)
    assert invoke("run", "hi", "--script", str(script(tmp_path, "never")), "--db", db) == (
        1,
        refused,
    )
    assert invoke("tools", "--db", db) == (1, refused)


def test_a_bad_privacy_level_is_refused(tmp_path: Path) -> None:
    code, out = invoke(
        "run", "hi", "--script", str(script(tmp_path, "x")), "--db", str(tmp_path / "r.db"),
        "--privacy", "loud",
    )  # fmt: skip
    assert code == 2  # a usage error, before anything runs
    assert "unknown privacy level 'loud'" in out
