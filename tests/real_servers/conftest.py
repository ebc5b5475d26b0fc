"""One llama-cpp-python server and one LiteLLM proxy in front of it, for the whole session.

They are started once (the model loads in seconds, LiteLLM in tens of them) and checked at the
end for any attempt to reach a host that is not loopback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .servers import Manifest, Server, litellm_proxy, llama_server


@pytest.fixture(scope="session")
def manifest() -> Manifest:
    path = os.environ.get("TOOLWIRE_REAL_SERVERS")
    if not path:
        pytest.fail(
            "TOOLWIRE_REAL_SERVERS is not set: run scripts/test --real-servers, or set it to "
            "the manifest that scripts/real-servers prints",
            pytrace=False,
        )
    return Manifest.load(Path(path))


@pytest.fixture(scope="session")
def llama(manifest: Manifest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with llama_server(manifest, tmp_path_factory.mktemp("llama")) as server:
        yield server
    assert server.refused() == []


@pytest.fixture(scope="session")
def litellm(
    manifest: Manifest, llama: Server, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with litellm_proxy(manifest, llama, tmp_path_factory.mktemp("litellm")) as server:
        yield server
    assert server.refused() == []
