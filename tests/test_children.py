"""Child processes: the allow-listed environment, bounded lines and bounded output, with real
children (the route worker importing an application, a Python child that floods stdout)."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path

import pytest

from toolwire.core.children import CHILD_ENV_NAMES, LOCALE_PREFIX, bounded_lines, run_child
from toolwire.workspace.config import Workspace
from toolwire.workspace.maps import RouteMap

from .tools.conftest import invoke

HIDDEN = {
    "OPENAI_API_KEY": "sk-proj-hidden0000000000000000",
    "TOOLWIRE_STATE_KEY": "state-key-hidden-0000000000",
    "TOOLWIRE_MCP_TOKEN": "mcp-token-hidden-000000000",
    "SLACK_BOT_TOKEN": "xoxb-hidden-00000000000",
    "DATABASE_URL": "postgresql://app:hunter2@db/app",
}
SPY_APP = """
import json, os, pathlib
pathlib.Path({seen!r}).write_text(json.dumps(dict(os.environ)))
from starlette.applications import Starlette
from starlette.routing import Route
async def home(request): ...
app = Starlette(routes=[Route("/", home)])
"""


@pytest.fixture
def hidden_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in HIDDEN.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LC_ALL", "C.UTF-8")


def test_the_route_workers_application_sees_none_of_toolwires_secrets(
    tmp_path: Path, hidden_environment: None
) -> None:
    seen = tmp_path / "seen.json"
    (tmp_path / "spy_app.py").write_text(SPY_APP.format(seen=str(seen)))
    ws = Workspace(routes=RouteMap(app="spy_app:app", app_path=tmp_path))
    result = invoke(ws, "resolve_route", {"path": "/"})
    assert result.content.splitlines()[1] == "handler: spy_app.home"
    environment = seen.read_text()
    assert not [value for value in HIDDEN.values() if value in environment]
    names = set(json.loads(environment))
    assert "PATH" in names and "LC_ALL" in names
    assert {n for n in names - CHILD_ENV_NAMES if not n.startswith(LOCALE_PREFIX)} == set()


def test_a_child_that_floods_stdout_is_stopped_at_the_cap(hidden_environment: None) -> None:
    flood = "import sys\nwhile True: sys.stdout.write('z' * 65536)"
    started = time.monotonic()
    done = run_child([sys.executable, "-c", flood], stdin="", timeout=30, max_output=100_000)
    assert (done.overflowed, done.stdout) == (True, "z" * 100_000)
    assert done.returncode != 0 and time.monotonic() - started < 10


def test_a_child_answers_within_the_cap(hidden_environment: None) -> None:
    echo = "import os, sys\nprint(sys.stdin.read().upper(), 'OPENAI_API_KEY' in os.environ)"
    done = run_child([sys.executable, "-c", echo], stdin="ping", timeout=30, max_output=1000)
    assert (done.returncode, done.stdout, done.overflowed) == (0, "PING False\n", False)


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"", []),
        (b"a\nb\n", [b"a", b"b"]),
        (b"a\nb", [b"a", b"b"]),
        (b"\n\n", [b"", b""]),
        (b"0123456789\nab\n" + b"q" * 200_000 + b"\nend", [b"0123", b"ab", b"qqqq", b"end"]),
    ],
)
def test_bounded_lines_cut_each_line(data: bytes, lines: list[bytes]) -> None:
    assert list(bounded_lines(io.BytesIO(data).read, 4)) == lines
