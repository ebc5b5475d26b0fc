"""``toolwire mcp`` fixtures: the demo workspace, made once per module, and a host's setting
over it (environment, store) per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolwire.demo import prepare_demo

from .kit import Host


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_demo(tmp_path_factory.mktemp("mcp-demo")).root


@pytest.fixture
def host(tmp_path: Path, demo: Path) -> Host:
    return Host.make(tmp_path, demo)
