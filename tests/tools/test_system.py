from __future__ import annotations

import platform
from pathlib import Path

from toolwire import ArtifactType
from toolwire.core.personal import mask_personal
from toolwire.demo._content import CUSTOMERS, LOG_JWT
from toolwire.workspace.config import Workspace

from .conftest import invoke


def test_get_env_redacts_by_name_and_by_value_shape() -> None:
    ws = Workspace(
        environ={
            "HOME": "/home/shop",
            "DB_PASSWORD": "hunter2",
            "STRIPE_SECRET_KEY": "x",
            "DATABASE_URL": "postgresql://shop:pw@db/shop",
            "NOTE": "ann@example.com",
            "LANG": "C.UTF-8",
        }
    )
    result = invoke(ws, "get_env")
    assert result.content == (
        "Environment (secrets redacted):\n"
        "DATABASE_URL=[redacted]\nDB_PASSWORD=[redacted]\nHOME=/home/shop\nLANG=C.UTF-8\n"
        "NOTE=***@***\nSTRIPE_SECRET_KEY=[redacted]"  # personal data, masked by zone
    )
    (artifact,) = result.artifacts
    assert artifact.type is ArtifactType.KEY_VALUE
    assert artifact.data["items"][1] == ["DB_PASSWORD", "[redacted]"]
    assert "hunter2" not in repr(artifact.data)


def test_get_env_raw_is_unredacted_and_carries_no_artifact() -> None:
    result = invoke(Workspace(environ={"DB_PASSWORD": "hunter2"}), "get_env_raw")
    assert result.content == "DB_PASSWORD=hunter2"
    assert result.artifacts == ()


def test_system_status_is_a_key_value_artifact(workspace: Workspace) -> None:
    result = invoke(workspace, "get_system_status")
    (artifact,) = result.artifacts
    items = dict(artifact.data["items"])
    assert list(items) == [
        "python", "implementation", "platform", "cpu_count", "load_average", "memory", "disk_free",
    ]  # fmt: skip
    assert items["python"] == platform.python_version()
    assert result.content.startswith(f"python: {platform.python_version()}\n")


def test_list_packages_lists_installed_distributions() -> None:
    result = invoke(Workspace(), "list_packages")
    rows = dict(map(tuple, result.artifacts[0].data["rows"]))
    assert rows["pydantic"] == "2.13.4"
    assert rows["SQLAlchemy"] == "2.1.9"
    assert "- pydantic 2.13.4" in result.content.split("\n")


def test_fetch_logs_redacts_emails_tokens_and_keys(workspace: Workspace) -> None:
    result = invoke(workspace, "fetch_logs", {"lines": 4})
    assert result.content == (
        "== app.log (last 4 lines)\n"
        '  File "shop/checkout.py", line 10, in place_order\n'
        "    cursor = db.execute(\n"
        "sqlite3.IntegrityError: NOT NULL constraint failed: orders.total_cents "
        "(customer ***@***)\n"
        "2026-03-09 10:03:06 INFO retry scheduled"
    )
    everything = invoke(workspace, "fetch_logs", {"lines": 200}).content
    for customer in CUSTOMERS:
        assert customer[1] not in everything and customer[4] not in everything
    assert LOG_JWT not in everything


def test_fetch_logs_bounds_lines_and_reads_only_the_tail(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    log.write_text("".join(f"line {n}\n" for n in range(100_000)))
    result = invoke(Workspace(log_files=(log,)), "fetch_logs", {"lines": 2})
    assert result.content == "== big.log (last 2 lines)\nline 99998\nline 99999"
    too_many = invoke(Workspace(log_files=(log,)), "fetch_logs", {"lines": 10_000})
    assert too_many.content.startswith('Error: invalid arguments for tool "fetch_logs": lines: ')


def test_get_last_exception_returns_the_redacted_traceback(workspace: Workspace) -> None:
    result = invoke(workspace, "get_last_exception")
    expected = (
        "Traceback (most recent call last):\n"
        '  File "shop/checkout.py", line 10, in place_order\n'
        "    cursor = db.execute(\n"
        "sqlite3.IntegrityError: NOT NULL constraint failed: orders.total_cents "
        "(customer ***@***)"
    )
    assert result.content == f"Last exception in app.log:\n{expected}"
    assert result.artifacts[0].data == {"code": expected, "language": "pytb", "first_line": 1}


def test_log_tools_fail_closed_without_logs(tmp_path: Path) -> None:
    missing = Workspace(log_files=(tmp_path / "nope.log",))
    assert (
        invoke(missing, "fetch_logs").content == "Error: the workspace has no readable log files."
    )
    assert invoke(Workspace(), "get_last_exception").content == (
        "Error: the workspace has no readable log files."
    )


def test_search_logs_searches_redacted_lines_only(workspace: Workspace) -> None:
    result = invoke(workspace, "search_logs", {"text": "LOGIN ok"})
    assert result.content == (
        "app.log: 2026-03-09 10:01:12 INFO login ok for ***@***\n"
        "app.log: 2026-03-09 10:02:40 INFO login ok for ***@***"
    )
    for secret in (CUSTOMERS[0][1], CUSTOMERS[0][4], LOG_JWT):
        probe = invoke(workspace, "search_logs", {"text": secret})
        # the echo of the query is masked too: the run's zone is unknown, the least trusted
        assert probe.content == mask_personal(f"No log lines contain {secret!r}.")
    assert invoke(workspace, "search_logs", {"text": " "}).content == (
        "Error: text must be 1 to 200 characters."
    )
