"""Every command in the ``sh`` blocks of the README and the docs' pages runs as a real process,
so the pages cannot drift.

Each command runs through ``bash`` in a scratch copy of the checkout, with its own data folder,
store and state key, and must exit 0. Placeholders are filled: ``DEMO_FOLDER`` with the demo
workspace ``toolwire demo`` uses, ``RUN_ID`` with a run made earlier in this test (a waiting
one for the commands that decide on a run), an API key's ``...`` with a dummy key, and the
OTLP endpoint ``http://localhost:4318`` with a loopback receiver of this test's (which must then
have received the run's spans). Only these are not run as written:

- a command that needs the network (an ``*_API_KEY=`` or a ``--provider`` other than the
  scripted one, ``pip install``) gets ``--help`` appended: its parser still rejects an unknown
  command or option, but nothing is sent;
- a long-running command (``toolwire serve``, ``toolwire demo``) is started on a free port, its
  printed URL must answer, and it is stopped with Ctrl-C; ``toolwire worker`` must say it is
  ready, and stop on Ctrl-C;
- ``toolwire mcp`` is started as a host would: over stdio through the MCP SDK's client (its
  tools listed, one called), or with ``--http`` on a free port, where a request needs the
  printed token;
- the pages' PostgreSQL database (``README_DATABASE``) is a schema of its own in
  ``$TOOLWIRE_TEST_PG_URL``, where a worker runs while the module's commands do;
- ``SKIPPED`` commands, each with its reason.

A command added to a page is run by default, so it is covered the moment it is written; one
that several pages give runs once.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from toolwire.demo import prepare_demo

from . import readme_mcp
from .documented import ROOT, blocks, page, pages
from .fakes import plugin
from .otlp_receiver import Received, receiver
from .served import free_port, interrupt
from .store.conftest import pg_module_schema  # noqa: F401  (a fixture)
from .test_cli_suspend import INPUT_PLUGIN, INPUT_SCRIPT

STATE_KEY = "ab" * 32
COMMAND_TIMEOUT_S = 300  # the slowest command (the screenshot) starts a browser
START_TIMEOUT_S = 120  # a server chained after creating a virtual environment
DUMMY_KEY = "sk-readme-test-not-a-key"

# Commands not run at all, with the reason. Keep this list small: anything that can run does.
SKIPPED = {
    "scripts/test": "the test command itself: it runs this test",
}
LONG_RUNNING = ("toolwire serve ", "toolwire demo", "toolwire worker ")
README_DATABASE = "postgresql+psycopg://toolwire@db.internal/toolwire"
MCP = "toolwire mcp"
_NOT_COPIED = (".git", ".venv", ".venv-test*", "__pycache__", "*_cache", ".hypothesis",
               ".benchmarks", "*egg-info", "node_modules")  # fmt: skip
_NAMED_PATH = re.compile(r"(?<![\w/])((?:examples|bench|scripts|docs|src|tests)/[\w./-]*\w)")
_WRITE_SCRIPT = """
turns:
  - tool_calls: [{name: write_file, arguments: {path: notes/readme.md, text: "hi\\n"}}]
  - content: "Written."
"""
_URL = re.compile(r"(http://127\.0\.0\.1:\d+)/#token=([\w-]+)")
_TOOL_FAILED = re.compile(r"^\[round \d+\]\s+tool (\w+) (?!ok )", re.M)
_RUN_ID = re.compile(r"\brun ([0-9a-f]{8}-[0-9a-f-]{27})\b")
OTLP_ENDPOINT = "http://localhost:4318"  # a collector's usual address; the test's receiver here


def readme_commands() -> list[str]:
    """Each command line of the pages' ``sh`` blocks, without its trailing comment, once."""
    text = "\n".join(b.code for b in blocks("sh")).replace("\\\n", " ")
    lines = (re.sub(r"\s+#\s.*$", "", line).strip() for line in text.splitlines())
    return list(dict.fromkeys(line for line in lines if line and not line.startswith("#")))


def needs_network(part: str) -> bool:
    words = shlex.split(part)
    if re.match(r"[A-Z_]+_API_KEY=", part) or words[:2] == ["pip", "install"]:
        return True
    provider = words[words.index("--provider") + 1] if "--provider" in words else "scripted"
    return provider != "scripted"


def offline(part: str) -> str:
    """The part as run here: a network command only parses its arguments."""
    part = re.sub(r"(_API_KEY)=\.\.\.", rf"\1={DUMMY_KEY}", part)
    return part + " --help" if needs_network(part) else part


@dataclass
class Sandbox:
    """A scratch checkout, data folder and store, with the demo workspace and one run in it."""

    checkout: Path
    env: dict[str, str]
    demo_folder: Path
    tmp: Path
    otlp: Received
    database: str = ""
    first_run: str = ""
    made: list[str] = field(default_factory=list)

    def bash(self, command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            check=False,
            cwd=self.checkout,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )

    def new_run(self, script: str, *extra: str) -> str:
        """Record a run with this script over the demo workspace; its id."""
        path = self.tmp / f"script{len(self.made)}.yaml"
        path.write_text(script)
        workspace = self.demo_folder / "workspace.toml"
        made = self.bash(
            shlex.join(["toolwire", "run", "--workspace", str(workspace), "--script", str(path)])
            + " "
            + shlex.join([*extra, "a question"])
        )
        match = _RUN_ID.search(made.stdout)
        assert match, made.stdout + made.stderr
        self.made.append(match.group(1))
        return match.group(1)

    def run_id_for(self, part: str) -> str:
        """A run the command can act on: waiting runs for the commands that decide."""
        decision = re.search(r"toolwire runs (\w+) RUN_ID", part)
        verb = decision.group(1) if decision else ""
        if verb == "input":
            return self.new_run(INPUT_SCRIPT, "--tool", "paint")
        if verb in ("approve", "deny", "cancel"):
            return self.new_run(_WRITE_SCRIPT)
        return self.first_run

    def filled(self, part: str) -> str:
        part = part.replace("DEMO_FOLDER", str(self.demo_folder))
        part = part.replace(OTLP_ENDPOINT, self.otlp.url)
        part = part.replace(README_DATABASE, shlex.quote(self.database))
        return part.replace("RUN_ID", self.run_id_for(part)) if "RUN_ID" in part else part


@pytest.fixture(scope="module")
def otlp() -> Iterator[Received]:
    with receiver() as received:
        yield received


@pytest.fixture(scope="module")
def sandbox(
    tmp_path_factory: pytest.TempPathFactory,
    otlp: Received,
    pg_module_schema: str,  # noqa: F811  (the README's README_DATABASE)
) -> Iterator[Sandbox]:
    tmp = tmp_path_factory.mktemp("readme")
    checkout = tmp / "checkout"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(*_NOT_COPIED))
    data, bin_dir, site = tmp / "data", tmp / "bin", tmp / "site"
    for folder in (data, bin_dir, site):
        folder.mkdir()
    # `toolwire` is this interpreter's, whatever else is on PATH.
    (bin_dir / "toolwire").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m toolwire "$@"\n')
    (bin_dir / "toolwire").chmod(0o755)
    plugin(site, INPUT_PLUGIN, "paint = twplugin:paint")  # a tool that asks for a colour
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(data),
        "TOOLWIRE_DB": str(data / "runs.db"),
        "TOOLWIRE_STATE_KEY": STATE_KEY,
        "PATH": os.pathsep.join([str(bin_dir), os.environ["PATH"]]),
        "PYTHONPATH": os.pathsep.join([str(site), *sys.path]),
    }
    for name in [n for n in env if n.endswith("_API_KEY")]:
        del env[name]
    demo = prepare_demo(data / "toolwire")  # where `toolwire demo` keeps it
    box = Sandbox(checkout=checkout, env=env, demo_folder=demo.root, tmp=tmp,
                  otlp=otlp, database=pg_module_schema)  # fmt: skip
    box.first_run = box.new_run(demo.script_path.read_text(), "--admin")
    worker, drain = start_worker(box)  # the queued runs' worker
    try:
        yield box
    finally:
        os.killpg(worker.pid, signal.SIGINT)
        worker.wait(timeout=30)
        drain.join(timeout=10)  # it read to the end
        if worker.stdout is not None:
            worker.stdout.close()


def start_worker(sandbox: Sandbox) -> tuple[subprocess.Popen[bytes], threading.Thread]:
    """A worker on the README's database, running while the module's commands do."""
    command = shlex.join(["toolwire", "worker", "--db", sandbox.database, "--concurrency", "4"])
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=sandbox.checkout, env=sandbox.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    said = ready(process)
    assert b" ready: " in said, said.decode(errors="replace")
    drain = threading.Thread(target=_drain, args=(process,), daemon=True)
    drain.start()
    return process, drain


def ready(process: subprocess.Popen[bytes]) -> bytes:
    """What a worker printed up to its ready line (or until it ended)."""
    assert process.stdout is not None
    said = b""
    deadline = time.monotonic() + START_TIMEOUT_S
    while b" ready: " not in said and time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        said += line
    return said


def _drain(process: subprocess.Popen[bytes]) -> None:
    assert process.stdout is not None
    for _ in process.stdout:
        pass


@pytest.mark.parametrize("command", readme_commands())
def test_the_readme_command_runs(sandbox: Sandbox, command: str) -> None:
    if command in SKIPPED:  # not run (it runs this test), but checked for what it must be
        check_the_test_command(command)
        return
    parts = [sandbox.filled(offline(part.strip())) for part in command.split("&&")]
    if parts[-1].startswith(MCP):
        check_mcp(sandbox, parts)
        return
    if parts[-1].startswith("toolwire worker "):
        check_works(sandbox, " && ".join(parts))
        return
    if parts[-1].startswith(LONG_RUNNING):
        parts[-1] += f" --port {free_port()}"
        check_serves(sandbox, " && ".join(parts))
        return
    sent = len(sandbox.otlp.requests)
    done = sandbox.bash(" && ".join(parts))
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    if OTLP_ENDPOINT in command:  # the run's spans reached the collector before the process ended
        spans = b"".join(
            body for path, body in sandbox.otlp.requests[sent:] if path == "/v1/traces"
        )
        assert b"invoke_agent" in spans and b"execute_tool read_records" in spans
    if any(needs_network(part) for part in parts):
        assert "Usage:" in done.stdout, done.stdout
    if parts[-1].startswith("toolwire run "):  # (a denied call is an error turn, on purpose)
        assert _TOOL_FAILED.findall(done.stdout) == [], done.stdout  # its tools work too


def check_serves(sandbox: Sandbox, command: str) -> None:
    """Start the command, fetch the page and the API at the printed URL, stop it with Ctrl-C."""
    process = subprocess.Popen(
        ["bash", "-c", command],
        cwd=sandbox.checkout,
        env=sandbox.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        base, token = announced(process)
        assert httpx.get(base + "/", timeout=10).status_code == 200
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.get(base + "/api/runs", headers=headers, timeout=10).status_code == 200
    finally:
        interrupt(process, group=True)


def check_mcp(sandbox: Sandbox, parts: list[str]) -> None:
    """Serve the command's tools to a host: over HTTP on a free port, or over stdio."""
    if "--http" in shlex.split(parts[-1]):
        parts = [*parts[:-1], f"{parts[-1]} --port {free_port()}"]
        readme_mcp.check_http(" && ".join(parts), sandbox.env, sandbox.checkout)
        return
    readme_mcp.check_stdio(["bash", "-c", " && ".join(parts)], sandbox.env, sandbox.checkout)


def test_the_host_configuration_starts_a_server_that_serves(sandbox: Sandbox) -> None:
    """The docs' JSON for a host, with its workspace path pointing at the demo's."""
    (block,) = [b for b in blocks("json") if b.page == page("deployment.md")]
    (server,) = json.loads(block.code)["mcpServers"].values()
    args = [str(sandbox.demo_folder / "workspace.toml") if a.endswith(".toml") else a
            for a in server["args"]]  # fmt: skip
    assert server["command"] == "toolwire" and args[0] == "mcp"
    names = readme_mcp.check_stdio([server["command"], *args], sandbox.env, sandbox.checkout)
    assert "list_tables" not in names  # external_global: content-class tools only


def check_works(sandbox: Sandbox, command: str) -> None:
    """Start the worker, wait for its ready line, stop it with Ctrl-C: it exits 0."""
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=sandbox.checkout, env=sandbox.env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:
        said = ready(process)
        assert b" ready: " in said, said.decode(errors="replace")
    finally:
        os.killpg(process.pid, signal.SIGINT)
        try:
            rest, _ = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
    assert process.returncode == 0, (said + rest).decode(errors="replace")
    assert rest.decode().strip().endswith("worker stopped")


def announced(process: subprocess.Popen[bytes]) -> tuple[str, str]:
    """The base URL and token the server prints, once it answers."""
    assert process.stdout is not None
    printed, deadline = b"", time.monotonic() + START_TIMEOUT_S
    while not _URL.search(printed.decode(errors="replace")) and time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 1)
        chunk = os.read(process.stdout.fileno(), 65536) if ready else b"-"
        if not chunk:
            break  # the command ended
        printed += chunk if ready else b""
    match = _URL.search(printed.decode(errors="replace"))
    assert match, printed.decode(errors="replace")
    while time.monotonic() < deadline:
        try:
            httpx.get(match.group(1) + "/", timeout=2)
            return match.group(1), match.group(2)
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"nothing answers at {match.group(1)}")


def check_the_test_command(command: str) -> None:
    """The README's test command exists, parses, and is exactly what CI runs."""
    root = Path(__file__).resolve().parents[1]
    script = root / command
    assert script.is_file() and os.access(script, os.X_OK), command
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    ci = (root / ".ci" / "run").read_text()
    assert f"exec {command}\n" in ci, ci


def test_the_skip_list_is_small_and_names_commands_the_readme_has() -> None:
    assert len(SKIPPED) <= 3
    assert set(SKIPPED) <= set(readme_commands())


def test_every_path_the_pages_name_exists() -> None:
    named = {path for page in pages() for path in _NAMED_PATH.findall(page.read_text())}
    assert "examples/lookup.yaml" in named
    assert sorted(p for p in named if not (ROOT / p).exists()) == []
