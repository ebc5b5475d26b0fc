"""Servers that crash, hang, fail to start, answer garbage or print secrets: the run goes on
with an error turn, and what the server said goes to the log only."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

import pytest

from toolwire import ChatMessage, RunOptions, ToolLoop, ToolRegistry
from toolwire.core.jsonenc import dumps
from toolwire.policy.trace import RunTrace
from toolwire.providers.scripted import ScriptedProvider

from ..fakes import RecordingProvider
from .kit import ADMIN, PYTHON, answers, remote_registry, run, script, workspace

SECRET = "tok-9f2c41d7e8a3b5c6"


def trouble(folder: Path, *extra: str, timeout: float = 20) -> ToolRegistry:
    args = ", ".join([script("trouble.py"), *(f'"{a}"' for a in extra)])
    ws = workspace(folder, f"""
[mcp_servers.trouble]
command = "{PYTHON}"
args = [{args}]
pass_env = ["TROUBLE_SECRET"]
enabled = true
timeout = {timeout}
""", environ={"TROUBLE_SECRET": SECRET})  # fmt: skip
    registry, problems = remote_registry(ws)
    assert problems == []
    return registry


def call(name: str, **arguments: object) -> dict[str, object]:
    return {"name": f"trouble__{name}", "arguments": arguments}


def logged(caplog: pytest.LogCaptureFixture, text: str, wait_s: float = 5) -> bool:
    """Whether ``text`` reached the log; a server's stderr arrives from a reader thread."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if any(text in record.getMessage() for record in caplog.records):
            return True
        time.sleep(0.05)
    return False


def test_a_server_killed_mid_call_is_an_error_turn_and_starts_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.mcp")
    registry = trouble(tmp_path)
    result = run(registry, [[call("crash")], [call("echo", text="again")]])
    assert answers(result) == [
        ("trouble__crash", 'Error: the server of tool "trouble__crash" stopped during the call; '
         "whether the call took effect is unknown.", True),
        ("trouble__echo", "echo: again", False),
    ]  # fmt: skip
    assert result.final_content == "done"
    assert logged(caplog, "trouble: crashing now")  # its stderr, in the log


def test_a_server_that_exited_between_calls_is_started_again_for_the_next(tmp_path: Path) -> None:
    registry = trouble(tmp_path)
    turns: list[dict[str, Any]] = [{"tool_calls": [call("quit_soon")]},
             {"tool_calls": [call("echo", text="back")], "delay_ms": 1500},
             {"content": "done"}]  # fmt: skip
    loop = ToolLoop(ScriptedProvider.from_turns(turns), registry)
    result = asyncio.run(loop.run([ChatMessage.user("go")], context=ADMIN))
    assert answers(result) == [("trouble__quit_soon", "bye", False),
                               ("trouble__echo", "echo: back", False)]  # fmt: skip


def test_a_server_that_never_answers_times_out_and_others_calls_still_run(tmp_path: Path) -> None:
    # The server takes about a second to start on an idle machine, several on a loaded one:
    # the same timeout bounds its start.
    registry = trouble(tmp_path, timeout=6)
    started = time.perf_counter()
    result = run(registry, [[call("hang"), call("echo", text="meanwhile")]])
    assert answers(result) == [
        ("trouble__hang", 'Error: tool "trouble__hang" did not answer within 6 seconds.', True),
        ("trouble__echo", "echo: meanwhile", False),
    ]
    assert 6 <= time.perf_counter() - started < 16


def test_a_server_that_cannot_start_again_is_an_error_turn_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.mcp")
    registry = trouble(tmp_path, "--once", str(tmp_path / "started"))
    result = run(registry, [[call("crash")], [call("echo", text="x")]])
    assert answers(result)[1] == (
        "trouble__echo",
        'Error: the server of tool "trouble__echo" could not be started; nothing was executed.',
        True,
    )
    assert result.final_content == "done"
    assert logged(caplog, "trouble: cannot start: the database is locked")
    assert "locked" not in dumps(answers(result))


def test_a_server_missing_or_silent_at_start_is_listed_as_a_problem(tmp_path: Path) -> None:
    ws = workspace(tmp_path, f"""
[mcp_servers.ghost]
command = "{tmp_path / "no-such-server"}"

[mcp_servers.mute]
command = "{PYTHON}"
args = ["-c", "import time; time.sleep(60)"]
timeout = 1

[mcp_servers.needs_key]
url = "http://127.0.0.1:9/mcp"
headers = {{ Authorization = "MUTE_KEY" }}
""", environ={})  # fmt: skip
    registry, problems = remote_registry(ws)
    assert len(registry) == 0
    assert problems[0] == (
        'MCP server "needs_key": header Authorization: the environment variable MUTE_KEY is not set'
    )
    assert problems[1].startswith('MCP server "ghost": no tools: ghost: FileNotFoundError')
    assert problems[2] == 'MCP server "mute": no tools: mute: did not start within 1 s'


def test_garbage_for_an_answer_is_an_error_turn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws = workspace(tmp_path, f"""
[mcp_servers.garbage]
command = "{PYTHON}"
args = [{script("garbage.py")}]
enabled = true
timeout = 2
""")  # fmt: skip
    registry, problems = remote_registry(ws)
    assert (problems, registry.names()) == ([], ["garbage__mangled", "garbage__babble"])
    result = run(registry, [[{"name": "garbage__mangled"}], [{"name": "garbage__babble"}]])
    assert answers(result) == [
        ("garbage__mangled",
         'Error: tool "garbage__mangled" answered with something that is not a tool result.',
         True),
        ("garbage__babble", 'Error: tool "garbage__babble" did not answer within 2 seconds.',
         True),
    ]  # fmt: skip
    assert logged(caplog, "sent something unreadable")


def test_a_secret_a_server_prints_on_stderr_reaches_the_log_and_nothing_else(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.mcp")
    registry = trouble(tmp_path)
    turns: list[dict[str, Any]] = [{"tool_calls": [call("leak", text="status")]},
                                   {"content": "done"}]  # fmt: skip
    model = RecordingProvider(ScriptedProvider.from_turns(turns))
    trace = RunTrace()
    result = asyncio.run(ToolLoop(model, registry).run(
        [ChatMessage.user("go")], context=ADMIN, options=RunOptions(), trace=trace))  # fmt: skip
    assert answers(result) == [("trouble__leak", "done: status", False)]
    assert logged(caplog, f"trouble: debug: token={SECRET}")
    sent = dumps([[m.to_dict() for m in r.messages] for r in model.requests])
    assert "done: status" in sent and SECRET not in sent
    assert SECRET not in dumps([step.to_dict() for step in trace.steps])
