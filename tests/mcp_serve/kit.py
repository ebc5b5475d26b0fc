"""``toolwire mcp`` as hosts meet it: a real process over the demo workspace, reached with the
official SDK's clients or with raw JSON-RPC, its calls in a real SQLite store."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.demo import WORKSPACE_TOML
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import OperatorDecision, Runtime
from toolwire.store import RunStore
from toolwire.tools.defaults import default_registry

from ..fakes import plugin
from ..served import free_port, interrupt

KEY_TEXT = "cd" * 32
KEY = StateKey.parse(KEY_TEXT, "test")
CANARY = "mcp-artifact-canary-4b7e21"
WAIT_SECONDS = 30
# A plug-in whose artifacts hold a canary its content never shows.
CANARY_PLUGIN = f"""
    from toolwire import Artifact, ToolResult, tool

    @tool(group="plugin", data_class="public")
    def leak(word: str) -> ToolResult:
        '''Say a word back; the artifacts hold more.'''
        return ToolResult.text(
            f"said {{word}}",
            Artifact.table("canary table", ["secret"], [["{CANARY}"]]),
            Artifact.text("canary text", "{CANARY}"),
        )
"""
_SERVING = re.compile(r"serving (http://\S+/mcp)")
_TOKEN = re.compile(r"Bearer <token>\): (\S+)")
INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-host", "version": "1"},
    },
}
ACCEPT = {"Accept": "application/json, text/event-stream"}  # a streamable HTTP client's


@dataclass
class Host:
    """One ``toolwire mcp`` setting: its environment, workspace and store."""

    tmp: Path
    demo: Path
    db: Path
    env: dict[str, str]
    workspace: Path | None = None  # another workspace file than the demo's own

    @classmethod
    def make(cls, tmp: Path, demo: Path) -> Host:
        site = tmp / "site"
        site.mkdir(exist_ok=True)
        plugin(site, CANARY_PLUGIN, "leak = twplugin:leak")
        db = tmp / "runs.db"
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp),
            "PYTHONPATH": os.pathsep.join([str(site), *sys.path]),
            "TOOLWIRE_DB": str(db),
            "TOOLWIRE_STATE_KEY": KEY_TEXT,
            "XDG_DATA_HOME": str(tmp / "data"),
        }
        return cls(tmp=tmp, demo=demo, db=db, env=env)

    def command(self, *args: str) -> list[str]:
        workspace = str(self.workspace or self.demo)
        return [sys.executable, "-m", "toolwire", "mcp", "--workspace", workspace, *args]

    @asynccontextmanager
    async def session(self, *args: str, **client: Any) -> AsyncIterator[ClientSession]:
        """An initialised SDK client session with ``toolwire mcp ARGS`` over stdio; ``client``
        goes to the ``ClientSession`` (its callbacks)."""
        command, *rest = self.command(*args)
        params = StdioServerParameters(command=command, args=rest, env=self.env)
        with (self.tmp / "stderr.log").open("a") as errors:
            async with (
                stdio_client(params, errlog=errors) as (read, write),
                ClientSession(read, write, **client) as session,
            ):
                await session.initialize()
                yield session

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``toolwire mcp ARGS`` with nothing on stdin: it starts, or says why not, and ends."""
        return subprocess.run(
            self.command(*args), capture_output=True, text=True, timeout=WAIT_SECONDS,
            check=False, env=self.env, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    @contextmanager
    def store(self, privacy: PrivacyLevel = PrivacyLevel.METADATA) -> Iterator[RunStore]:
        with RunStore.open(str(self.db), privacy=privacy) as store:
            yield store

    @contextmanager
    def http(self, *args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
        """``toolwire mcp --http ARGS`` on a free port, until it answers; stopped with Ctrl-C."""
        command = self.command("--http", "--port", str(free_port()), *args)
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**self.env, **(env or {})}, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            yield announced(process)
        finally:
            interrupt(process, WAIT_SECONDS)

    def decider(self, store: RunStore) -> Runtime:
        """An operator's runtime in this process, sharing only the store file and the key."""
        registry = default_registry()
        registry.availability = store.load_availability()
        return Runtime(registry, recorder=store, state_key=KEY)


def with_prompts(host: Host, prompts: str) -> Path:
    """A workspace file beside the demo's, the demo's own with ``prompts`` (TOML) added; the
    host's workspace from now on."""
    path = host.demo / f"prompts-{host.tmp.name}.toml"
    path.write_text(WORKSPACE_TOML + "\n" + prompts)
    host.workspace = path
    return path


@dataclass
class Served:
    """A ``toolwire mcp --http`` process: its endpoint, the token it printed, its stderr so far."""

    url: str
    token: str | None
    stderr: str
    process: subprocess.Popen[str]


def announced(process: subprocess.Popen[str], timeout: float = WAIT_SECONDS) -> Served:
    """What ``toolwire mcp --http`` printed on stderr up to its token line: endpoint and token."""
    assert process.stderr is not None
    printed, line, deadline = "", "", time.monotonic() + timeout
    while not line.startswith("token") and time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        printed += line
    found = _SERVING.search(printed)
    assert found, printed
    token = _TOKEN.search(printed)
    return Served(url=found.group(1), token=token.group(1) if token else None, stderr=printed,
                  process=process)  # fmt: skip


async def waiting_run(store: RunStore) -> str:
    """The id of the one run waiting in ``store``, once there is one."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        found = await asyncio.to_thread(store.list_runs, waiting=True)
        if found:
            assert len(found) == 1, found
            return str(found[0].id)
        await asyncio.sleep(0.05)
    raise AssertionError("no run started waiting")


async def decide(host: Host, action: str) -> str:
    """Take ``action`` on the waiting run through the runtime API; its id."""
    with host.store() as store:
        run_id = await waiting_run(store)
        runtime = host.decider(store)
        digest = runtime.pending(run_id).digest
        decision = OperatorDecision(action=action, digest=digest, actor="op")  # type: ignore[arg-type]
        await runtime.resume(run_id, decision)
    return run_id


async def status_of(host: Host, run_id: str, wanted: RunStatus) -> None:
    """Wait until the run has ``wanted`` status in the store."""
    deadline = time.monotonic() + WAIT_SECONDS
    with host.store() as store:
        while time.monotonic() < deadline:
            run = await asyncio.to_thread(store.get_run, run_id)
            if run is not None and run.status == wanted.value:
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"run {run_id} never became {wanted}")


def raw_exchange(host: Host, messages: list[dict[str, Any]], *args: str) -> bytes:
    """Every byte ``toolwire mcp`` writes to stdout for these JSON-RPC messages (requests are
    answered before the next one is sent), with stdin closed afterwards."""
    process = subprocess.Popen(
        host.command(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=host.env,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    out = b""
    try:
        for message in messages:
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                line = process.stdout.readline()
                assert line, "the server closed stdout"
                out += line
        process.stdin.close()
        out += process.stdout.read()
        process.wait(timeout=WAIT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
    return out


def handshake_and(*requests: dict[str, Any]) -> list[dict[str, Any]]:
    """initialize, initialized, then ``requests`` numbered from 2."""
    messages: list[dict[str, Any]] = [
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    for number, request in enumerate(requests, start=2):
        messages.append({"jsonrpc": "2.0", "id": number, **request})
    return messages


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"method": "tools/call", "params": {"name": name, "arguments": arguments}}
