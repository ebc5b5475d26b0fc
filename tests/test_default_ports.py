"""The tests pass beside a running ``toolwire demo``: the inspector's and the MCP server's
default ports are held for the whole session (tests/conftest.py), so every test that serves
runs while they are taken, and each picks a free port instead."""

from __future__ import annotations

import errno
import socket

import pytest

from toolwire.cli.mcp import DEFAULT_MCP_PORT
from toolwire.cli.server import DEFAULT_PORT


@pytest.mark.parametrize("port", [DEFAULT_PORT, DEFAULT_MCP_PORT])
def test_the_default_port_is_taken_while_the_tests_run(port: int) -> None:
    with socket.socket() as probe, pytest.raises(OSError) as refused:
        probe.bind(("127.0.0.1", port))
    assert refused.value.errno == errno.EADDRINUSE
