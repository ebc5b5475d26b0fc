"""Test-wide guards: no network but loopback, no run recorded outside the test's files, the
default ports taken as a running demo takes them, and every PostgreSQL test marked."""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .store.conftest import MARKER, running, uses_postgres

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(address: Any) -> bool:
    if isinstance(address, str | bytes):  # a Unix socket path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _guarded(real: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address):
            raise OSError(f"tests may only connect to loopback, not {address!r}")
        return real(self, address)

    return connect


@pytest.fixture(autouse=True, scope="session")
def _loopback_only() -> Iterator[None]:
    socket.socket.connect = _guarded(_real_connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded(_real_connect_ex)  # type: ignore[method-assign]
    yield
    socket.socket.connect = _real_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _real_connect_ex  # type: ignore[method-assign]


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path, for installing a test plugin into."""
    folder = tmp_path / "site"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    sys.modules.pop("twplugin", None)


@pytest.fixture(autouse=True, scope="session")
def _no_telemetry() -> Iterator[None]:
    """Telemetry is off unless a test turns it on: no ``OTEL_*`` variable of the caller's."""
    saved = {name: value for name, value in os.environ.items() if name.startswith("OTEL_")}
    for name in saved:
        del os.environ[name]
    yield
    os.environ.update(saved)


@pytest.fixture(autouse=True, scope="session")
def _store_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Commands that record runs by default write to a scratch file, never the user's store."""
    saved = os.environ.get("TOOLWIRE_DB")
    os.environ["TOOLWIRE_DB"] = str(tmp_path_factory.mktemp("store") / "runs.db")
    # ...and a state key that serve or demo creates goes to a scratch data directory.
    saved_data = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data"))
    yield
    if saved is None:
        os.environ.pop("TOOLWIRE_DB", None)
    else:
        os.environ["TOOLWIRE_DB"] = saved
    if saved_data is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = saved_data


@pytest.fixture(autouse=True, scope="session")
def _default_ports_taken() -> Iterator[None]:
    """The inspector's and the MCP server's default ports are held while the tests run, as a
    running ``toolwire demo`` holds them, so a test that binds a fixed port fails here as it
    would beside one: a test that serves picks a free port. A port already taken is left so."""
    from toolwire.cli.mcp import DEFAULT_MCP_PORT
    from toolwire.cli.server import DEFAULT_PORT

    held = []
    for port in (DEFAULT_PORT, DEFAULT_MCP_PORT):
        listener = socket.socket()
        try:
            listener.bind(("127.0.0.1", port))
            listener.listen()
        except OSError:  # taken already: by a demo, say, which is as good
            listener.close()
            continue
        held.append(listener)
    yield
    for listener in held:
        listener.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-servers",
        action="store_true",
        help="run the tests against real model servers too (tests/real_servers; "
        "scripts/test --real-servers installs the servers first)",
    )
    parser.addoption(
        "--phoenix",
        metavar="PATH",
        help="the phoenix command of an Arize Phoenix installed apart (its pins clash with "
        "the dev extra's): the tests marked phoenix read toolwire's traces back from it",
    )


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that reaches PostgreSQL through a fixture is marked ``postgres`` (see
    tests/store/conftest.py), so ``-m "not postgres"`` runs without a server. Tests marked
    ``real_servers`` run only with ``--real-servers``: they need servers that take minutes to
    build (see scripts/real-servers); those marked ``phoenix`` only with ``--phoenix PATH``."""
    for item in items:
        if uses_postgres(item):
            item.add_marker(MARKER)
    opted_out = [] if config.getoption("--real-servers") else ["real_servers"]
    opted_out += [] if config.getoption("--phoenix") else ["phoenix"]
    left = [item for item in items if any(item.get_closest_marker(m) for m in opted_out)]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item not in left]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    running(item)  # so that asking for PostgreSQL's URL can check the test is marked
