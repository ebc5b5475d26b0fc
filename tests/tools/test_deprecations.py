"""``list_deprecations``: deprecation warnings in the logs, grouped, masked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.demo._content import CUSTOMERS
from toolwire.workspace.config import Workspace

from .conftest import assert_artifacts_within_text, invoke


def test_the_demo_log_grouped_most_frequent_first(workspace: Workspace) -> None:
    result = invoke(workspace, "list_deprecations")
    assert result.content == (
        "Deprecation warnings: 3 distinct messages, most frequent first:\n"
        "- 2 times DeprecationWarning: datetime.datetime.utcnow() is deprecated and scheduled for"
        " removal in a future version. (first 2026-03-09 09:58:01, last 2026-03-09 10:00:30,"
        " /srv/shop/shop/report.py:40)\n"
        "- 1 times PendingDeprecationWarning: the 'sync' command will be removed; use 'refresh'"
        " (token=*** (first 2026-03-09 09:58:02, last 2026-03-09 09:58:02,"
        " /srv/shop/shop/stock.py:12)\n"
        "- 1 times deprecation: shop.payments: the v1 checkout endpoint is deprecated; move to"
        " /v2/checkout by 2026-06-30 (first 2026-03-09 10:00:45, last 2026-03-09 10:00:45,"
        " app.log:4)"
    )
    assert result.artifacts[0].data["rows"][0][:2] == ["2", "DeprecationWarning"]
    assert CUSTOMERS[0][4] not in result.content
    assert_artifacts_within_text(result)


def test_groups_across_logs_and_addresses(tmp_path: Path) -> None:
    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text(
        "[2026-01-01T00:00:00Z] lib.py:3: DeprecationWarning: <Obj at 0x7f00aa> is old\n"
        "plain line\n"
    )
    second.write_text(
        "2026-01-02 00:00:00,123 WARN lib.py:3: DeprecationWarning: <Obj at 0x7f11bb> is old\n"
        "no time stamp: this API is Deprecated\n"
    )
    result = invoke(Workspace(log_files=(first, second)), "list_deprecations")
    assert result.artifacts[0].data["rows"] == [
        ["2", "DeprecationWarning", "<Obj at 0x…> is old", "2026-01-01T00:00:00Z",
         "2026-01-02 00:00:00,123", "lib.py:3"],
        ["1", "deprecation", "no time stamp: this API is Deprecated", "b.log:2", "b.log:2",
         "b.log:2"],
    ]  # fmt: skip


def test_no_deprecations(tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"
    log.write_text("all fine\n")
    result = invoke(Workspace(log_files=(log,)), "list_deprecations")
    assert (
        result.content == "No deprecation warnings in the configured logs." and not result.artifacts
    )


def test_refusals(tmp_path: Path, workspace: Workspace) -> None:
    assert invoke(Workspace(), "list_deprecations").content == (
        "Error: the workspace has no readable log files."
    )
    assert workspace.files_root is not None
    linked = tmp_path / "deprecations.log"
    os.link(workspace.files_root / ".env", linked)
    (tmp_path / "id_rsa.log").write_text("x DeprecationWarning: secret-canary\n")
    secret_logs = Workspace(
        files_root=workspace.files_root, log_files=(linked, tmp_path / "id_rsa.log")
    )
    assert invoke(secret_logs, "list_deprecations").content == (
        "Error: the workspace has no readable log files."
    )
    extra = invoke(workspace, "list_deprecations", {"since": "today"})
    assert extra.content.startswith('Error: invalid arguments for tool "list_deprecations"')


def test_the_number_of_groups_is_bounded(tmp_path: Path) -> None:
    log = tmp_path / "many.log"
    log.write_text("".join(f"m.py:1: DeprecationWarning: thing {n} is old\n" for n in range(500)))
    result = invoke(Workspace(log_files=(log,)), "list_deprecations")
    assert result.content.startswith("Deprecation warnings: 500 distinct messages")
    assert len(result.artifacts[0].data["rows"]) == 100


SHORT = st.text(st.characters(codec="utf-8"), max_size=30)
LINES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="\n\r\x00"), max_size=80),
    st.builds(lambda a, b: f"{a} DeprecationWarning: {b}", SHORT, SHORT),
    st.builds(lambda a: f"2026-01-01 00:00:00 WARNING {a} is deprecated, token=zz9top", SHORT),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(LINES, max_size=30))
def test_every_artifact_row_is_a_line_of_the_text(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    log = tmp_path_factory.mktemp("logs") / "app.log"
    log.write_text("\n".join(line.replace("\n", " ") for line in lines) + "\n")
    result = invoke(Workspace(log_files=(log,)), "list_deprecations")
    assert_artifacts_within_text(result)
    text = result.content.split("\n")
    for count, kind, message, first, last, where in (
        result.artifacts[0].data["rows"] if result.artifacts else []
    ):
        assert f"- {count} times {kind}: {message} (first {first}, last {last}, {where})" in text
    assert "zz9top" not in result.content
