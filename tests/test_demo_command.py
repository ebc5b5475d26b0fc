"""``toolwire demo`` end to end: a real process on a fresh data directory, driven over HTTP."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def demo_server(tmp_path: Path) -> Iterator[tuple[str, str, Path]]:
    """Start ``toolwire demo`` with a fresh user data directory; yield (base URL, token, home)."""
    home = tmp_path / "data"
    env = {**os.environ, "XDG_DATA_HOME": str(home)}
    env.pop("TOOLWIRE_DB", None)
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    try:
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
        base, token = match.groups()
        _wait_until_up(base)
        yield base, token, home
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _wait_until_up(base: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            httpx.get(base + "/", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("the demo server did not start")


def test_demo_serves_the_page_and_a_scripted_run_completes_with_artifacts(
    demo_server: tuple[str, str, Path],
) -> None:
    base, token, home = demo_server
    page = httpx.get(base + "/", timeout=10)
    assert page.status_code == 200
    assert '<script type="module"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]

    headers = {"Authorization": f"Bearer {token}"}
    defaults = httpx.get(base + "/api/defaults", headers=headers, timeout=10).json()
    assert defaults["provider"] == "scripted" and defaults["prompt"]

    body = {"prompt": defaults["prompt"], "provider": "scripted"}
    with httpx.stream(
        "POST", base + "/api/runs/stream", json=body, headers=headers, timeout=60
    ) as response:
        assert response.status_code == 200
        events = [json.loads(line) for line in response.iter_lines() if line.strip()]

    assert events[0]["type"] == "context"
    assert events[0]["replay_label"].startswith("Demo replay")
    assert events[-1]["type"] == "done"
    assert events[-1]["status"] == "completed"
    steps = [e["step"] for e in events if e["type"] == "step"]
    tool_steps = [s for s in steps if s["kind"] == "tool"]
    assert len(tool_steps) == 5 and not any(s["tool_is_error"] for s in tool_steps)
    kinds = {a["type"] for s in tool_steps for a in s.get("tool_artifacts", [])}
    assert {"table", "tree", "code", "key_value"} <= kinds

    everything = json.dumps(events)
    assert "password_hash" not in json.dumps([s["tool_artifacts"] for s in tool_steps[:1]])
    assert "$argon2" not in everything and "pbkdf2" not in everything

    assert (home / "toolwire" / "demo" / "shop.db").is_file()
    assert (home / "toolwire" / "runs.sqlite").is_file()
    stored = httpx.get(base + "/api/runs", headers=headers, timeout=10).json()
    assert stored["runs"][0]["status"] == "completed"


def test_demo_with_a_real_provider_and_no_key_fails_clearly(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env["XDG_DATA_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "demo", "--provider", "openai", "--model", "m"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "OPENAI_API_KEY" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
