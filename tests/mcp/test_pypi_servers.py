"""Real MCP servers from PyPI over stdio: mcp-server-time, mcp-server-git, mcp-server-fetch."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from toolwire import ToolRegistry
from toolwire.core.result import ArtifactType
from toolwire.core.trust import TrustZone
from toolwire.policy.trace import RequestStep, RunTrace
from toolwire.tools.api import ToolContext, User, runs_concurrently
from toolwire.tools.policy import Grant, Refusal, ToolPolicy

from ..fakes import only
from .kit import ADMIN, remote_registry, run, workspace


def refused_in_a_hosted_zone(registry: ToolRegistry, name: str) -> str:
    """Why a run in the external_global zone was not offered ``name``."""
    trace = RunTrace()
    result = run(registry, [[{"name": name, "arguments": {}}]], trust_zone="external_global",
                 trace=trace)  # fmt: skip
    assert result.trace == ()  # nothing ran
    request = only(trace.steps[0], RequestStep)
    (refusal,) = [r for r in request.refusals or () if r["tool"] == name]
    return str(refusal["reason"])


# -- time -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def time_tools(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    folder = tmp_path_factory.mktemp("time")
    ws = workspace(folder, """
[mcp_servers.time]
command = "mcp-server-time"
args = ["--local-timezone", "Etc/UTC"]
""")  # fmt: skip
    registry, problems = remote_registry(ws)
    assert problems == []
    return registry


def test_time_tools_register_with_the_servers_description_and_schema(
    time_tools: ToolRegistry,
) -> None:
    assert time_tools.names() == ["time__get_current_time", "time__convert_time"]
    tool = time_tools.get("time__get_current_time")
    assert tool is not None
    assert tool.spec.description == "Get current time in a specific timezone"
    assert tool.spec.parameters["required"] == ["timezone"]
    assert tool.spec.parameters["properties"]["timezone"]["type"] == "string"
    assert "title" not in tool.spec.parameters
    assert (tool.group, getattr(tool, "server", None)) == ("mcp:time", "time")
    # Off by default, admin-only, the strictest data class; reads only, so it may overlap.
    assert (tool.enabled_by_default, tool.requires_admin, tool.data_class) == (
        False, True, "secret_adjacent")  # fmt: skip
    assert runs_concurrently(tool)
    (state,) = [s for s in time_tools.states() if s.name == "time__convert_time"]
    assert (state.server, state.enabled, state.requires_admin) == ("time", False, True)


def test_the_gate_applies_to_remote_tools_like_to_any_tool(time_tools: ToolRegistry) -> None:
    policy = ToolPolicy(time_tools)
    name = "time__get_current_time"

    def decide(context: ToolContext, zone: TrustZone) -> Refusal | None:
        return policy.decide(name, context=context, grant=Grant(), zone=zone).reason

    assert decide(ADMIN, TrustZone.LOCAL) is Refusal.DISABLED
    time_tools.availability.set_tool(name, True)
    try:
        assert decide(ADMIN, TrustZone.LOCAL) is None
        assert decide(ToolContext(user=User("ann")), TrustZone.LOCAL) is Refusal.REQUIRES_ADMIN
        assert decide(ToolContext(), TrustZone.LOCAL) is Refusal.REQUIRES_ADMIN
        assert decide(ADMIN, TrustZone.PRIVATE_HOSTED) is Refusal.TRUST_ZONE
        assert refused_in_a_hosted_zone(time_tools, name) == "trust_zone"
    finally:
        time_tools.availability.set_tool(name, None)


def test_a_time_call_gives_text_to_the_model_and_structure_to_the_run(
    time_tools: ToolRegistry,
) -> None:
    time_tools.availability.set_group("mcp:time", True)
    for name in time_tools.names():
        time_tools.availability.set_tool(name, True)
    calls = [
        {"name": "time__get_current_time", "arguments": {"timezone": "Etc/UTC"}},
        {"name": "time__convert_time", "arguments": {
            "source_timezone": "Etc/UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}},
        {"name": "time__get_current_time", "arguments": {"timezone": "Mars/Olympus"}},
    ]  # fmt: skip
    result = run(time_tools, [calls])
    now, converted, wrong = result.trace
    assert json.loads(now.result)["timezone"] == "Etc/UTC" and not now.is_error
    (kv,) = now.artifacts
    assert kv.type is ArtifactType.KEY_VALUE and kv.label == "structured content"
    assert ["timezone", "Etc/UTC"] in kv.data["items"]
    assert [k for k, _ in kv.data["items"]] == ["timezone", "datetime", "day_of_week", "is_dst"]
    assert json.loads(converted.result)["target"]["timezone"] == "Asia/Tokyo"
    (nested,) = converted.artifacts  # source and target are objects: shown as JSON
    assert (nested.type, nested.data["language"]) == (ArtifactType.CODE, "json")
    assert json.loads(nested.data["code"])["target"]["datetime"].endswith("T21:00:00+09:00")
    assert wrong.is_error and wrong.artifacts == ()
    assert "Invalid timezone" in wrong.result and "Mars/Olympus" in wrong.result


# -- git --------------------------------------------------------------------------------------


def git(repo: Path, *args: str) -> None:
    env = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.test",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.test",
           "HOME": str(repo.parent), "PATH": "/usr/bin:/bin"}  # fmt: skip
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("git") / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "notes.md").write_text("first line\n")
    git(repo, "add", "notes.md")
    git(repo, "commit", "-q", "-m", "Add the notes file")
    return repo


def test_git_reads_a_temporary_repository(repository: Path, tmp_path: Path) -> None:
    ws = workspace(tmp_path, f"""
[mcp_servers.git]
command = "mcp-server-git"
args = ["--repository", "{repository}"]
enabled = true
data_class = "source_code"
""")  # fmt: skip
    registry, problems = remote_registry(ws)
    assert problems == []
    assert {"git__git_log", "git__git_status", "git__git_commit"} <= set(registry.names())
    commit = registry.get("git__git_commit")
    assert commit is not None and not runs_concurrently(commit)  # may write: runs alone
    (repository / "notes.md").write_text("first line\nsecond line\n")
    where = {"repo_path": str(repository)}
    calls = [
        {"name": "git__git_log", "arguments": where},
        {"name": "git__git_diff_unstaged", "arguments": where},
    ]
    log, diff = run(registry, [calls]).trace
    assert "Add the notes file" in log.result and "Ada" in log.result
    assert "+second line" in diff.result
    assert not log.is_error and not diff.is_error
    # source code is never offered to a hosted model
    assert refused_in_a_hosted_zone(registry, "git__git_log") == "trust_zone"


# -- fetch ------------------------------------------------------------------------------------

PAGE = b"""<html><head><title>Loopback page</title></head><body><article>
<h1>Hello from loopback</h1><p>The fetch server read this paragraph over 127.0.0.1.</p>
</article></body></html>"""


class _Page(BaseHTTPRequestHandler):
    paths: list[str]

    def do_GET(self) -> None:
        self.paths.append(self.path)
        body = PAGE if self.path == "/page" else b"not here"
        self.send_response(200 if self.path == "/page" else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[str, list[str]]]:
    paths: list[str] = []
    handler = type("Page", (_Page,), {"paths": paths})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", paths
    finally:
        server.shutdown()
        server.server_close()


def test_fetch_reads_a_loopback_page_without_asking_for_robots_txt(
    site: tuple[str, list[str]], tmp_path: Path
) -> None:
    base, paths = site
    ws = workspace(tmp_path, """
[mcp_servers.fetch]
command = "mcp-server-fetch"
args = ["--ignore-robots-txt", "--allow-private-ips"]
enabled = true
data_class = "public"
""")  # fmt: skip
    registry, problems = remote_registry(ws)
    assert (problems, registry.names()) == ([], ["fetch__fetch"])
    (page,) = run(registry, [[{"name": "fetch__fetch", "arguments": {"url": f"{base}/page"}}]],
                  trust_zone="external_global").trace  # fmt: skip
    assert not page.is_error
    assert "Hello from loopback" in page.result and "over 127.0.0.1" in page.result
    assert paths == ["/page"]  # no robots.txt, and nothing but loopback


def test_fetch_refusing_a_private_address_is_an_error_result_with_its_words(
    site: tuple[str, list[str]], tmp_path: Path
) -> None:
    base, paths = site
    ws = workspace(tmp_path, """
[mcp_servers.fetch]
command = "mcp-server-fetch"
args = ["--ignore-robots-txt"]
enabled = true
""")  # fmt: skip
    registry, _ = remote_registry(ws)
    (page,) = run(
        registry, [[{"name": "fetch__fetch", "arguments": {"url": f"{base}/page"}}]]
    ).trace
    assert page.is_error and page.artifacts == ()
    assert "not a public address" in page.result
    assert paths == []
