"""Egress through an MCP server: structured content and images never reach a provider.

An MCP server (``servers/canary.py``) answers each call with a plain text, and with canaries in
its structured content and in its image. Over a three-round run on every adapter, talking real
HTTP to a fake model on loopback, every request body is searched for every canary in every
encoding (and for the image's base64); the canaries are in the run's trace all the same.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest

from toolwire import ChatMessage, RunOptions, ToolLoop, ToolRegistry
from toolwire.core.result import ArtifactType
from toolwire.tools.api import ToolContext

from ..providers.servers import ADAPTERS, FakeModel, loopback, make_provider
from ..providers.test_egress import assert_no_canary, canary
from .kit import PYTHON, remote_registry, script, workspace

CANARIES = [canary(f"mcp{n}") for n in range(3)]
# What the server puts in its image: the PNG signature, then the canary's bytes.
PICTURES = [base64.b64encode(b"\x89PNG\r\n\x1a\n" + c.encode()).decode() for c in CANARIES]
TURNS: list[Any] = [[("canary__probe", {"n": n})] for n in range(3)] + ["done"]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    environ = {f"CANARY_{n}": c for n, c in enumerate(CANARIES)}
    ws = workspace(tmp_path_factory.mktemp("egress"), f"""
[mcp_servers.canary]
command = "{PYTHON}"
args = [{script("canary.py")}]
pass_env = ["CANARY_0", "CANARY_1", "CANARY_2"]
enabled = true
admin_only = false
data_class = "public"
""", environ=environ)  # fmt: skip
    tools, problems = remote_registry(ws)
    assert (problems, tools.names()) == ([], ["canary__probe"])
    return tools


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[FakeModel, str]]:
    fake = FakeModel()
    with loopback(fake) as base:
        yield fake, base


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("name", ADAPTERS)
def test_no_canary_from_an_mcp_server_reaches_any_adapters_wire(
    registry: ToolRegistry, model: tuple[FakeModel, str], name: str, stream: bool
) -> None:
    fake, base = model
    fake.turns, fake.captured = TURNS, []
    loop = ToolLoop(make_provider(name, base=base), registry)
    result = probe(loop, stream)
    assert result.final_content == "done" and result.iterations == 4
    assert len(fake.captured) == 4
    bodies = [c.body for c in fake.captured]
    assert_no_canary(bodies, [*CANARIES, *PICTURES])
    last = bodies[-1].decode()
    assert all(f"probe {n} answered" in last for n in range(3))  # the text did go out
    for n, invocation in enumerate(result.trace):  # ...and the canaries are in the run
        image, table = invocation.artifacts
        assert image.type is ArtifactType.IMAGE and image.data["data"] == PICTURES[n]
        assert table.type is ArtifactType.TABLE and table.label == "rows"
        assert table.data["rows"] == [[str(n), CANARIES[n]]]


def probe(loop: ToolLoop, stream: bool) -> Any:
    """A run with no user: the tools are not admin-only, and hosted models get public data."""
    return loop.run_sync([ChatMessage.user("probe three times")], context=ToolContext(),
                         options=RunOptions(stream=stream))  # fmt: skip


def test_the_search_would_find_a_leaked_picture() -> None:
    with pytest.raises(AssertionError):
        assert_no_canary([json.dumps({"x": PICTURES[1]}).encode()], PICTURES)
