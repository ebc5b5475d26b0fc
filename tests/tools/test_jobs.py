"""``list_scheduled_jobs``: a crontab, systemd timers and a job table, commands masked."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.demo._content import JOB_TOKEN
from toolwire.workspace.config import Workspace, load_workspace
from toolwire.workspace.maps import JobMap

from .conftest import assert_artifacts_within_text, invoke

DEMO = Path(__file__).parents[2] / "src" / "toolwire" / "demo" / "config"
CRON_TOKEN = "ghp_R3p0rtT0k3nR3p0rtT0k3nR3p0rtT0k3nabc"


@pytest.fixture
def scheduled(workspace: Workspace, tmp_path: Path) -> Workspace:
    folder = tmp_path / "schedules"
    shutil.copytree(DEMO / "systemd", folder / "systemd")
    shutil.copy(DEMO / "crontab", folder / "crontab")
    jobs = JobMap(crontab=folder / "crontab", systemd=folder / "systemd", table="scheduled_jobs")
    return dataclasses.replace(workspace, jobs=jobs)


def test_every_source_in_one_answer(scheduled: Workspace) -> None:
    result = invoke(scheduled, "list_scheduled_jobs")
    lines = result.content.split("\n")
    assert lines[:8] == [
        "Scheduled jobs in files (6):",
        "Crontab environment: MAILTO=***@***, SHOP_TOKEN=***",
        "- crontab:6: Nightly sales report; schedule 0 2 * * *; runs cd /srv/shop && python -m"
        " shop.report --token ***",  # a flag named for a credential: its value is masked
        "- crontab:8: Expire abandoned carts; schedule */30 * * * *; runs python -m shop.carts"
        " --expire 2h",
        "- crontab:9: (unnamed); schedule @reboot; runs python -m shop.warmup",
        "- crontab:11: Hourly stock check (the minute is out of range: cron never runs it);"
        " schedule 61 * * * *; runs python -m shop.stock check; invalid schedule",
        "- systemd:backup.timer: backup; schedule OnCalendar=*-*-* 03:30:00; runs"
        " /usr/bin/pg_dump --file=/var/backups/shop.sql postgresql://backup:***@db.internal:5432/shop",
        "- systemd:reindex.timer: reindex; schedule OnBootSec=15min; OnUnitActiveSec=1d; runs"
        " (nothing); no service unit search-reindex.service beside it",
    ]
    assert lines[8] == "Jobs in the table scheduled_jobs (3):"
    assert "  command: python -m shop.report --token ***" in lines
    files, table = result.artifacts
    assert files.data["columns"] == ["source", "name", "schedule", "command", "problem"]
    assert len(files.data["rows"]) == 6
    assert table.label == "scheduled_jobs jobs" and len(table.data["rows"]) == 3
    for secret in (CRON_TOKEN, JOB_TOKEN, "B4ckupS3cret", "ops@shop.example"):
        assert secret not in result.content
    assert_artifacts_within_text(result)


def test_one_source_alone(scheduled: Workspace) -> None:
    assert scheduled.jobs is not None
    timers = dataclasses.replace(scheduled, jobs=JobMap(systemd=scheduled.jobs.systemd))
    result = invoke(timers, "list_scheduled_jobs")
    assert result.content.startswith("Scheduled jobs in files (2):\n- systemd:backup.timer")
    assert len(result.artifacts) == 1
    table = dataclasses.replace(scheduled, jobs=JobMap(table="scheduled_jobs"))
    only = invoke(table, "list_scheduled_jobs")
    assert only.content.startswith("Scheduled jobs in files (0):\nJobs in the table")
    assert [a.label for a in only.artifacts] == ["scheduled_jobs jobs"]


@pytest.mark.parametrize(
    ("text", "row"),
    [
        ("@daily  backup.sh", ["crontab:1", "", "@daily", "backup.sh", ""]),
        ("@sometimes x", ["crontab:1", "", "@sometimes", "x", "invalid schedule"]),
        ("* * * *", ["crontab:1", "", "* * * *", "", "invalid schedule"]),
        ("0 0 * * *", ["crontab:1", "", "0 0 * * *", "", "no command"]),
        ("0 0 31 2 7 x", ["crontab:1", "", "0 0 31 2 7", "x", ""]),
        ("curl -H 'Authorization: Bearer abcdefghijk123'", None),
        ("0 * * * * curl -H 'Authorization: Bearer abcdefghijk123'",
         ["crontab:1", "", "0 * * * *", "curl -H 'Authorization: Bearer ***'", ""]),
    ],
)  # fmt: skip
def test_crontab_lines(tmp_path: Path, text: str, row: list[str] | None) -> None:
    (tmp_path / "crontab").write_text(text + "\n")
    result = invoke(Workspace(jobs=JobMap(crontab=tmp_path / "crontab")), "list_scheduled_jobs")
    rows = result.artifacts[0].data["rows"] if result.artifacts else []
    if row is None:
        assert rows[0][4] == "invalid schedule" and "abcdefghijk123" not in result.content
    else:
        assert rows == [row]


def test_a_secret_crontab_is_never_read(tmp_path: Path, workspace: Workspace) -> None:
    refused = "Error: the workspace's crontab cannot be read."
    named = tmp_path / ".env"
    named.write_text("0 * * * * x\n")
    assert invoke(Workspace(jobs=JobMap(crontab=named)), "list_scheduled_jobs").content == refused
    keyed = tmp_path / "crontab"
    keyed.write_text("0 * * * * x\n-----BEGIN PRIVATE KEY-----\nabc\n")
    assert invoke(Workspace(jobs=JobMap(crontab=keyed)), "list_scheduled_jobs").content == refused
    assert workspace.files_root is not None
    linked = tmp_path / "cron.txt"
    os.link(workspace.files_root / ".env", linked)
    ws = dataclasses.replace(workspace, jobs=JobMap(crontab=linked))
    assert invoke(ws, "list_scheduled_jobs").content == refused
    missing = Workspace(jobs=JobMap(crontab=tmp_path / "nope"))
    assert invoke(missing, "list_scheduled_jobs").content == refused


def test_refusals(workspace: Workspace) -> None:
    assert invoke(workspace, "list_scheduled_jobs").content == (
        "Error: the workspace names no scheduled jobs (a crontab, timers or a table)."
    )
    gone = dataclasses.replace(workspace, jobs=JobMap(table="nowhere"))
    assert invoke(gone, "list_scheduled_jobs").content == (
        "Error: the workspace's table 'nowhere' is not found or not permitted."
    )
    hidden = dataclasses.replace(workspace, jobs=JobMap(table="sessions"))
    result = invoke(hidden, "list_scheduled_jobs")
    assert "sess_9f8e7d6c" not in result.content and "session_token" not in result.content
    extra = invoke(workspace, "list_scheduled_jobs", {"all": True})
    assert extra.content == (
        'Error: invalid arguments for tool "list_scheduled_jobs": all: Extra inputs are not'
        " permitted"
    )


def test_the_jobs_section_loads_from_toml(tmp_path: Path) -> None:
    (tmp_path / "units").mkdir()
    (tmp_path / "workspace.toml").write_text(
        '[jobs]\ncrontab = "cron/tab"\nsystemd = "units"\ntable = "jobs"\n'
    )
    assert load_workspace(tmp_path / "workspace.toml").jobs == JobMap(
        crontab=tmp_path / "cron" / "tab", systemd=tmp_path / "units", table="jobs"
    )


LINES = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_characters="\n\r\x00"), max_size=60),
    st.sampled_from(["# a name", "A=b", "SECRET=x", "@hourly x", "*/5 * * * * a@b.example"]),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(LINES, max_size=20))
def test_every_artifact_row_is_a_line_of_the_text(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str]
) -> None:
    path = tmp_path_factory.mktemp("cron") / "crontab"
    path.write_text("\n".join(lines) + "\n")
    result = invoke(Workspace(jobs=JobMap(crontab=path)), "list_scheduled_jobs")
    assert_artifacts_within_text(result)
    text = result.content.split("\n")
    for source, name, schedule, command, problem in (
        result.artifacts[0].data["rows"] if result.artifacts else []
    ):
        line = (
            f"- {source}: {name or '(unnamed)'}; schedule {schedule}; runs {command or '(nothing)'}"
        )
        assert (line + (f"; {problem}" if problem else "")) in text
    assert "a@b.example" not in result.content
