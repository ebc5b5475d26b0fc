"""Start a ``toolwire`` server command as a real process and find its URL and token."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def interrupt(process: subprocess.Popen[Any], timeout: float = 20, *, group: bool = False) -> None:
    """Stop a server as an operator does, with Ctrl-C (to its whole process group with
    ``group``); kill it if it has not ended within ``timeout`` seconds. Its pipes are closed."""

    def send(number: int) -> None:
        if group:
            os.killpg(process.pid, number)
        else:
            process.send_signal(number)

    send(signal.SIGINT)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        process.wait()
    for pipe in (process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


@contextmanager
def served(args: Sequence[str], data_home: Path) -> Iterator[tuple[str, str]]:
    """Run ``python -m toolwire ARGS --port P`` with a fresh data home; yield (base URL, token)."""
    with served_process(args, data_home) as (base, token, _):
        yield base, token


@contextmanager
def served_process(
    args: Sequence[str], data_home: Path
) -> Iterator[tuple[str, str, subprocess.Popen[str]]]:
    """Like ``served``, also yielding the process (to signal it)."""
    with _serving(args, data_home) as (base, token, process, _):
        yield base, token, process


@contextmanager
def served_output(args: Sequence[str], data_home: Path) -> Iterator[tuple[str, str, str]]:
    """Like ``served``, also yielding what the command printed up to its URL."""
    with _serving(args, data_home) as (base, token, _, printed):
        yield base, token, printed


@contextmanager
def _serving(
    args: Sequence[str], data_home: Path
) -> Iterator[tuple[str, str, subprocess.Popen[str], str]]:
    env = {**os.environ, "XDG_DATA_HOME": str(data_home)}
    env.pop("TOOLWIRE_DB", None)
    command = [sys.executable, "-m", "toolwire", *args, "--port", str(free_port())]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        base, token, printed = _announced(process)
        _wait_until_up(base)
        yield base, token, process, printed
    finally:
        interrupt(process)


def _announced(process: subprocess.Popen[str]) -> tuple[str, str, str]:
    assert process.stdout is not None
    printed = ""
    deadline = time.monotonic() + START_TIMEOUT_S
    while "#token=" not in printed and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        printed += line
    match = re.search(r"(http://127\.0\.0\.1:\d+)/#token=([\w-]+)", printed)
    assert match, printed
    return match.group(1), match.group(2), printed


def _wait_until_up(base: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            httpx.get(base + "/", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the server did not start")
