"""The command line behaves like the tools people know, checked through real processes.

stdout holds what a script reads, stderr what a person reads; exit statuses say how it went.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from toolwire.providers.scripted import ScriptedProvider
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.tools.registry import ToolRegistry

ANSWER_SCRIPT = 'turns:\n  - content: "Done: \\x1b[31mred\\x9b"\n    prompt_tokens: 3\n'


def tw(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "COLUMNS": "200"}
    env.pop("TOOLWIRE_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args],
        capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=60,
        check=False,
    )  # fmt: skip


def script(tmp_path: Path, text: str = ANSWER_SCRIPT) -> str:
    path = tmp_path / "script.yaml"
    path.write_text(text)
    return str(path)


def db(tmp_path: Path) -> str:
    return str(tmp_path / "runs.db")


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return tw(tmp_path, "run", "--script", script(tmp_path), "--db", db(tmp_path), *args, "q")


def test_an_error_goes_to_stderr_with_a_non_zero_status(tmp_path: Path) -> None:
    done = tw(tmp_path, "runs", "show", "nope", "--db", db(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "error: no run with id nope\n")


def test_version(tmp_path: Path) -> None:
    done = tw(tmp_path, "--version")
    assert (done.returncode, done.stdout) == (0, "toolwire 0.1.0\n")


@pytest.mark.parametrize(
    "command", [(), ("run",), ("tools",), ("runs", "list"), ("runs", "show"), ("runs", "purge")]
)
def test_boolean_options_are_shown_as_flags(tmp_path: Path, command: tuple[str, ...]) -> None:
    done = tw(tmp_path, *command, "--help")
    assert done.returncode == 0
    assert "<bool>" not in done.stdout
    assert re.search(r"--help +Show this message", done.stdout), done.stdout


def test_run_json_is_one_object_on_stdout_with_the_answer_as_data(tmp_path: Path) -> None:
    done = run(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x9b" not in done.stdout
    assert len(done.stdout.splitlines()) == 1
    outcome = json.loads(done.stdout)
    assert re.fullmatch(r"[0-9a-f-]{36}", outcome.pop("run_id"))
    assert outcome == {
        "status": "completed",
        "reason": "completed",
        "answer": "Done: \x1b[31mred\x9b",
        "output": None,
        "error": None,
        "usage": {
            "prompt_tokens": 3,
            "completion_tokens": 0,
            "total_tokens": 3,
            "tokens_known": True,
        },
        "cost": {"usd": 0.0, "complete": False, "estimated": False},
        "steps": 2,
        "stored_in": str((tmp_path / "runs.db").resolve()),
        "resume": None,
    }


def test_run_quiet_prints_only_the_answer_and_with_json_nothing(tmp_path: Path) -> None:
    quiet = run(tmp_path, "--quiet")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "Done: \\x1b[31mred\\x9b\n", "")
    silent = run(tmp_path, "--quiet", "--json")
    assert (silent.returncode, silent.stdout, silent.stderr) == (0, "", "")


def test_a_failed_run_with_json_still_prints_its_object_and_exits_1(tmp_path: Path) -> None:
    path = script(tmp_path, "turns: [{tool_calls: [{name: list_packages}]}]")
    done = tw(tmp_path, "run", "--script", path, "--db", db(tmp_path), "--admin", "--tool",
              "list_packages", "--json", "q")  # fmt: skip
    assert done.returncode == 1
    outcome = json.loads(done.stdout)
    assert (outcome["status"], outcome["error"]) == (
        "failed",
        "the provider call failed: ScriptExhausted",
    )
    assert done.stderr.splitlines()[-1] == "error: the provider call failed: ScriptExhausted"


def test_runs_list_show_and_tools_json(tmp_path: Path) -> None:
    run_id = json.loads(run(tmp_path, "--json").stdout)["run_id"]
    listed = json.loads(tw(tmp_path, "runs", "list", "--json", "--db", db(tmp_path)).stdout)
    assert [(r["id"], r["status"], r["rounds"]) for r in listed] == [(run_id, "completed", 1)]
    shown = tw(tmp_path, "runs", "show", run_id, "--json", "--db", db(tmp_path))
    stored = json.loads(shown.stdout)
    assert (stored["id"], stored["final_answer"], len(stored["steps"])) == (run_id, None, 2)
    tools = json.loads(tw(tmp_path, "tools", "--json", "--db", db(tmp_path)).stdout)
    assert {"name": "list_tables", "group": "structure", "enabled": True, "why": "default",
            "admin_only": False, "server": None, "data_class": "configuration",
            "description": "List the readable tables of the workspace database and their "
            "column counts."} in tools  # fmt: skip


def test_a_tool_that_does_not_exist_is_an_error_naming_near_names(tmp_path: Path) -> None:
    done = run(tmp_path, "--tool", "list_table")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith("error: no tool is named 'list_table'; did you mean list_tables")
    far = run(tmp_path, "--tool", "zzzz")
    assert far.stderr == "error: no tool is named 'zzzz'; see them with: toolwire tools\n"


def test_workspace_takes_a_folder_holding_workspace_toml(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / "workspace.toml").write_text('max_tokens_field = "max_tokens"\n')
    assert run(tmp_path, "--workspace", str(folder)).returncode == 0
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run(tmp_path, "--workspace", str(empty))
    assert (done.returncode, done.stderr) == (
        1,
        f"error: {empty} is a folder without a workspace.toml\n",
    )


def test_runs_show_takes_the_short_id_the_list_prints(tmp_path: Path) -> None:
    ids = [json.loads(run(tmp_path, "--json").stdout)["run_id"] for _ in range(2)]
    listed = tw(tmp_path, "runs", "list", "--db", db(tmp_path)).stdout.splitlines()
    assert listed[0].split()[0] == "ID"
    short = listed[1].split()[0]
    assert short == ids[1][:8]
    shown = tw(tmp_path, "runs", "show", short, "--db", db(tmp_path))
    assert shown.stdout.splitlines()[0] == f"run {ids[1]}"


def test_an_ambiguous_or_unknown_prefix_is_a_clear_error(tmp_path: Path) -> None:
    with RunStore.open(db(tmp_path)) as store:  # 17 runs: two share a first hex digit
        runtime = Runtime(ToolRegistry(), recorder=store)
        ids = [runtime.run_sync(RunRequest.of("q", provider=answers())).run_id for _ in range(17)]
    first = Counter(i[0] for i in ids).most_common(1)[0][0]
    ambiguous = tw(tmp_path, "runs", "show", first, "--db", db(tmp_path))
    assert ambiguous.returncode == 2
    assert re.fullmatch(rf"error: {first} is the start of \d+ run ids \({first}.*\); give more "
                        r"of the id \(see toolwire runs show --help\)\n", ambiguous.stderr
                        ), ambiguous.stderr  # fmt: skip
    unknown = tw(tmp_path, "runs", "show", "g", "--db", db(tmp_path))
    assert (unknown.returncode, unknown.stderr) == (1, "error: no run with id g\n")


def answers() -> ScriptedProvider:
    return ScriptedProvider.from_turns([{"content": "ok"}])


def test_runs_purge_without_a_terminal_needs_yes(tmp_path: Path) -> None:
    run(tmp_path)
    refused = tw(tmp_path, "runs", "purge", "--older-than", "0d", "--db", db(tmp_path))
    assert refused.returncode == 1
    question = r"delete every finished run created before [-\d]{10}T[\d:]{8}[+-]\d\d:\d\d"
    assert re.fullmatch(rf"error: {question} \(--older-than 0d\)\? No terminal to ask on: add "
                        r"--yes to purge\n", refused.stderr), refused.stderr  # fmt: skip
    done = tw(tmp_path, "runs", "purge", "--older-than", "0d", "--yes", "--db", db(tmp_path))
    assert (done.returncode, done.stdout) == (0, "purged 1 run\n")


def test_one_status_and_right_plurals(tmp_path: Path) -> None:
    refused = script(tmp_path, 'turns: [{stop: refusal, refusal: "no"}]')
    tw(tmp_path, "run", "--script", refused, "--db", db(tmp_path), "q")
    header, row = tw(tmp_path, "runs", "list", "--db", db(tmp_path)).stdout.splitlines()
    cells = dict(zip(header.split(), re.split(r"  +", row), strict=True))
    assert (cells["STATUS"], cells["ROUNDS"], cells["TOKENS"], cells["COST"], cells["STEPS"]) == (
        "completed (refused)", "1", "0", "unknown", "2",
    )  # fmt: skip
    run_id = json.loads(tw(tmp_path, "runs", "list", "--json", "--db", db(tmp_path)).stdout)[0]
    shown = tw(tmp_path, "runs", "show", run_id["id"], "--db", db(tmp_path)).stdout.splitlines()
    assert shown[1:2] == ["  status: completed"]
    assert "  reason: refused" in shown


def test_a_refused_loopback_provider_fails_fast_and_says_where(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}/v1"
    done = tw(tmp_path, "run", "--provider", "openai", "--model", "m", "--base-url", base,
              "--no-tools", "--db", db(tmp_path), "q")  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"error: the provider call failed: openai: cannot connect to {base}/chat/completions "
        "(connection refused) after 1 attempt"
    )


def test_run_says_where_it_was_stored(tmp_path: Path) -> None:
    done = run(tmp_path)
    stored = (tmp_path / "runs.db").resolve()
    assert re.search(rf"^run [0-9a-f-]{{36}} recorded in {re.escape(str(stored))}$",
                     done.stdout, re.MULTILINE), done.stdout  # fmt: skip


def on_a_terminal(tmp_path: Path, *args: str) -> str:
    """What a terminal shows of ``toolwire ARGS`` (stdout and stderr on one pty)."""
    leader, follower = pty.openpty()
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire", *args],
        stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the process closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    process.wait(timeout=30)
    os.close(leader)
    return seen.decode("utf-8", "replace")


def test_a_spinner_shows_while_waiting_on_a_terminal_only(tmp_path: Path) -> None:
    args = ("run", "--script", script(tmp_path), "--db", db(tmp_path), "q")
    assert "waiting for the model" in on_a_terminal(tmp_path, *args)
    assert "waiting for the model" not in on_a_terminal(tmp_path, *args[:-1], "--json", "q")
    piped = run(tmp_path)
    assert "waiting for the model" not in piped.stdout + piped.stderr


def test_times_are_local_iso_8601_and_raw_only_in_json(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "TZ": "Asia/Kolkata"}
    env.pop("TOOLWIRE_DB", None)

    def shown(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "toolwire", *args, "--db", db(tmp_path)],
                              capture_output=True, text=True, env=env, check=True)  # fmt: skip
        return done.stdout

    run_id = json.loads(run(tmp_path, "--json").stdout)["run_id"]
    lines = shown("runs", "show", run_id).splitlines()
    local = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
    assert re.fullmatch(rf"  created: {local}\+05:30", lines[2]), lines
    assert re.fullmatch(rf"  finished: {local}\+05:30", lines[3]), lines
    assert "  cost: unknown" in lines and not any("start_ms" in line for line in lines)
    assert sum(bool(re.fullmatch(rf"  start: {local}\.\d{{3}}\+05:30", x)) for x in lines) == 2
    stored = json.loads(shown("runs", "show", run_id, "--json"))
    assert stored["created_at"].endswith("+00:00")
    assert all(isinstance(step["start_ms"], float) for step in stored["steps"])
    header, row = shown("runs", "list").splitlines()
    assert header.split() == ["ID", "STATUS", "CREATED", "PROVIDER", "ROUNDS", "TOKENS", "COST",
                              "STEPS", "PRIVACY"]  # fmt: skip
    assert re.match(rf"{run_id[:8]}  completed  {local}\+05:30  scripted  ", row), row


def test_audit_is_a_table_with_a_header_and_json(tmp_path: Path) -> None:
    run(tmp_path)  # the admin-only tools are not offered: one row each
    table_lines = tw(tmp_path, "audit", "--db", db(tmp_path)).stdout.splitlines()
    header = ["AT", "RUN", "ROUND", "GATE/REASON", "COUNT", "TOOL", "BY", "DETAIL"]
    assert table_lines[0].split() == header
    rows = [re.split(r"  +", line) for line in table_lines[1:]]
    # The tools not offered (admin-only; needing a workspace): one row per reason, counted.
    assert [r[2:5] for r in rows] == [["1", "offer/requires_admin", "15"],
                                      ["1", "offer/no_workspace", "18"]], rows  # fmt: skip
    assert all(r[6] == "policy" for r in rows)
    listed = json.loads(tw(tmp_path, "audit", "--db", db(tmp_path), "--json").stdout)
    assert [(d["gate"], d["reason"], d["count"]) for d in listed] == [
        ("offer", "requires_admin", 15), ("offer", "no_workspace", 18),
    ]  # fmt: skip


def test_a_closed_stdout_ends_quietly_and_the_run_completes(tmp_path: Path) -> None:
    turns = "".join(f"  - {{content: 'step {i}', tool_calls: [{{name: list_packages}}]}}\n"
                    for i in range(12))  # fmt: skip
    path = script(tmp_path, f"turns:\n{turns}  - content: done\n")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "run", "--script", path, "--max-rounds", "20",
         "--admin", "--tool", "list_packages", "--db", db(tmp_path), "q"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()  # `| head -1`: one line, then the reader is gone
    process.stdout.close()
    errors = process.stderr.read()
    process.stderr.close()
    assert (first, process.wait(timeout=60), errors) == (
        b"[round 1] \xe2\x86\x92 request: 1 messages, 1 tools\n", 0, b"",
    )  # fmt: skip
    with RunStore.open(db(tmp_path)) as store:
        (summary,) = store.list_runs(limit=5)
    assert (summary.status, summary.rounds) == ("completed", 13)
