"""A streamable-HTTP MCP server on loopback, with its Authorization header taken from the
environment variable the workspace names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from toolwire.core.result import Artifact

from .kit import answers, http_server, remote_registry, run, workspace

TOKEN = "Bearer notes-7d41c9e2"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with http_server("streamable.py", TOKEN) as url:
        yield url


def notes(url: str) -> str:
    return f"""
[mcp_servers.notes]
url = "{url}"
headers = {{ Authorization = "NOTES_TOKEN" }}
enabled = true
data_class = "public"
"""


def test_a_streamable_http_server_with_a_header_from_the_environment(
    server: str, tmp_path: Path
) -> None:
    ws = workspace(tmp_path, notes(server), environ={"NOTES_TOKEN": TOKEN})
    registry, problems = remote_registry(ws)
    assert (problems, registry.names()) == ([], ["notes__add"])
    (tool,) = registry
    assert tool.spec.parameters["required"] == ["a", "b"]
    result = run(registry, [[{"name": "notes__add", "arguments": {"a": 2, "b": 3}}]],
                 trust_zone="external_global")  # fmt: skip
    assert answers(result) == [("notes__add", "5", False)]
    assert result.trace[0].artifacts == (
        Artifact.key_value("structured content", [("result", "5")]),
    )


def test_a_wrong_header_value_leaves_the_server_out_without_showing_the_value(
    server: str, tmp_path: Path
) -> None:
    ws = workspace(tmp_path, notes(server), environ={"NOTES_TOKEN": "Bearer wrong"})
    registry, problems = remote_registry(ws)
    assert len(registry) == 0
    (problem,) = problems
    assert problem.startswith('MCP server "notes": no tools: notes: ')
    assert "wrong" not in problem and TOKEN not in problem
