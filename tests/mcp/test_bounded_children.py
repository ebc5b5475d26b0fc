"""A stdio server's stderr and stdout are read within bounds, and it starts with the child
environment: a server that floods stderr without a newline holds no memory and the connection
still answers; one that floods stdout (where its messages come) is refused at the line limit,
stopped and started again; it never sees a provider key, the state key or a token of
toolwire's own."""

from __future__ import annotations

import logging
import threading
import time
import tracemalloc
from pathlib import Path

import pytest

from toolwire.core.children import CHILD_ENV_NAMES, LOCALE_PREFIX
from toolwire.loop.seam import remote_oversized
from toolwire.mcp.connection import STDERR_CUT, STDERR_LINE_BYTES, STDERR_LOGGED_BYTES, StderrLog
from toolwire.mcp.stdio import STDOUT_LINE_BYTES

from .kit import PYTHON, answers, remote_registry, run, script, workspace
from .test_failures import call, logged

FLOOD_MB = 200  # without a bound the reader holds all of it as one line
HIDDEN = {
    "OPENAI_API_KEY": "sk-proj-hidden0000000000000000",
    "ANTHROPIC_API_KEY": "sk-ant-hidden000000000000",
    "TOOLWIRE_STATE_KEY": "state-key-hidden-0000000000",
    "TOOLWIRE_MCP_TOKEN": "mcp-token-hidden-000000000",
    "GITHUB_TOKEN": "ghp_hidden00000000000000000000000000",
}


def trouble_server(folder: Path) -> str:
    return f"""
[mcp_servers.trouble]
command = "{PYTHON}"
args = [{script("trouble.py")}]
env = {{ TROUBLE_MODE = "plain" }}
pass_env = ["TROUBLE_SECRET"]
enabled = true
timeout = 60
"""


def test_a_server_flooding_stderr_without_newlines_holds_no_memory_and_still_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.mcp")
    ws = workspace(tmp_path, trouble_server(tmp_path), environ={"TROUBLE_SECRET": "s"})
    registry, problems = remote_registry(ws)
    assert problems == []
    tracemalloc.start()
    try:
        result = run(registry, [[call("flood", megabytes=FLOOD_MB)], [call("echo", text="ok")]])
        assert logged(caplog, "trouble: flood over", wait_s=60)
        time.sleep(0.2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answers(result) == [
        ("trouble__flood", f"flooded {FLOOD_MB} MB", False),
        ("trouble__echo", "echo: ok", False),
    ]
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.1f} MiB while {FLOOD_MB} MB went by"
    lines = [r.getMessage() for r in caplog.records if r.name == "toolwire.mcp.stderr"]
    cut = lines.index(f"trouble: {'x' * STDERR_LINE_BYTES}")  # the flood, cut to one log line
    assert lines[cut + 1] == "trouble: flood over"


def test_a_server_flooding_stdout_without_newlines_is_refused_in_bounded_memory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.mcp")
    ws = workspace(tmp_path, trouble_server(tmp_path), environ={"TROUBLE_SECRET": "s"})
    registry, problems = remote_registry(ws)
    assert problems == []
    tracemalloc.start()
    try:
        began = time.monotonic()
        result = run(registry, [[call("flood_stdout", megabytes=FLOOD_MB)],
                                [call("echo", text="ok")]])  # fmt: skip
        took = time.monotonic() - began
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    refused = remote_oversized("trouble__flood_stdout", STDOUT_LINE_BYTES)
    assert answers(result) == [
        ("trouble__flood_stdout", refused, True),
        ("trouble__echo", "echo: ok", False),  # a new process: the flooding one was stopped
    ]
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.1f} MiB while {FLOOD_MB} MB went by"
    assert took < 30  # refused at the limit, not after the call's 60 s timeout
    warning = (
        f"MCP server 'trouble' wrote a stdout line over {STDOUT_LINE_BYTES} "
        "bytes (the limit of one message); the connection is closed and the server stopped"
    )
    assert warning in [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_what_one_server_process_logs_of_its_stderr_is_bounded_in_total(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="toolwire.mcp.stderr")
    ended = threading.Event()
    stderr = StderrLog("chatty", on_end=ended.set)
    line = "y" * 999
    with stderr.file:
        for _ in range(3 * STDERR_LOGGED_BYTES // 1000):
            stderr.file.write(line + "\n")
    assert ended.wait(30)
    lines = [r.getMessage() for r in caplog.records if r.name == "toolwire.mcp.stderr"]
    assert lines[-1] == "chatty: " + STDERR_CUT
    assert lines[:-1] == [f"chatty: {line}"] * (STDERR_LOGGED_BYTES // 1000)
    assert stderr.tail().endswith(f"{line} | {STDERR_CUT}")


def test_a_stdio_server_gets_the_child_environment_and_what_its_table_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in HIDDEN.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TROUBLE_SECRET", "passed-by-name")
    ws = workspace(tmp_path, trouble_server(tmp_path))
    registry, problems = remote_registry(ws)
    assert problems == []
    result = run(registry, [[call("environment")]])
    names = set(answers(result)[0][1].split())
    assert {"PATH", "TROUBLE_SECRET", "TROUBLE_MODE"} <= names
    assert not names & set(HIDDEN)
    unexpected = {
        n
        for n in names - CHILD_ENV_NAMES - {"TROUBLE_SECRET", "TROUBLE_MODE"}
        if not n.startswith(LOCALE_PREFIX)
    }
    assert unexpected == set()
