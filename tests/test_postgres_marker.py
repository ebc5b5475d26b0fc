"""Every test that reaches PostgreSQL is marked ``postgres``, so ``-m "not postgres"`` runs the
rest on a machine without a server: collected in a process without ``$TOOLWIRE_TEST_PG_URL``,
no PostgreSQL variant is left, and the modules that reach PostgreSQL in each way (a backend
parameter, a fixture per test, a fixture per module, the queue) pass there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .store.conftest import PG_ENV, pg_base_url

ROOT = Path(__file__).resolve().parents[1]
REACHING = [
    "tests/store/test_governance.py",  # the sqlite/postgresql backend parameter
    "tests/inspector/test_decisions.py",  # a parameter of its own, and pg_schema
    "tests/queue",  # pg_schema, through the queue fixture
    "tests/test_readme_commands.py",  # pg_module_schema, for the README's database
]
_PARAMETERS = re.compile(r"\[(.*)\]$")


def pytest_without_postgresql(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != PG_ENV}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not postgres", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip


def on_postgresql(node_id: str) -> bool:
    found = _PARAMETERS.search(node_id)
    return found is not None and "postgresql" in found.group(1).split("-")


def test_leaving_postgres_out_collects_no_postgresql_variant() -> None:
    done = pytest_without_postgresql("--collect-only", "-q", "tests")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert [i for i in ids if on_postgresql(i)] == []
    assert any(i.endswith("[sqlite]") for i in ids)  # their SQLite variants stay
    assert re.search(r"collected \([1-9]\d* deselected\)", done.stdout), done.stdout[-500:]


def test_leaving_postgres_out_runs_the_rest_of_the_modules_that_reach_it() -> None:
    done = pytest_without_postgresql("-q", *REACHING)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"\b[1-9]\d* passed, [1-9]\d* deselected\b", done.stdout), done.stdout[-500:]


def test_asking_for_postgresql_unmarked_fails_naming_the_test(
    request: pytest.FixtureRequest,
) -> None:
    expected = f"{request.node.nodeid} uses PostgreSQL but is not marked postgres"
    with pytest.raises(pytest.fail.Exception, match=re.escape(expected)):
        pg_base_url()
