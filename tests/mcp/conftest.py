"""Each module's MCP servers are stopped when it ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from toolwire.mcp.hub import HUB


@pytest.fixture(autouse=True, scope="module")
def _stop_servers() -> Iterator[None]:
    yield
    HUB.close()
