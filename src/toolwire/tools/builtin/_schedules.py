"""Reading schedules: crontab lines and systemd timer units, as plain data, unmasked.

A crontab is read as ``crontab -l`` prints a user's table: environment lines (``NAME=value``),
comments, and jobs of five time fields (or an ``@daily``-style nickname) and a command. The
comment right above a job names it. Schedules are checked with ``croniter``. A timer unit's
schedule is its ``[Timer]`` settings (``OnCalendar=``, ``OnBootSec=``, ...); its command is the
``ExecStart=`` of the service it starts (``Unit=``, by default the timer's own name), when that
unit is in the same folder. The caller masks what it shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

NICKNAMES = frozenset(
    {"@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)
TIMER_SETTINGS = (
    "OnCalendar", "OnActiveSec", "OnBootSec", "OnStartupSec", "OnUnitActiveSec",
    "OnUnitInactiveSec",
)  # fmt: skip
MAX_UNIT_BYTES = 64_000  # a unit file is a few lines
MAX_TIMERS = 200  # timer units read from one folder
_ENVIRONMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Job:
    """One scheduled job: where it is declared, its name, schedule and command."""

    source: str  # "crontab:12", "systemd:backup.timer"
    name: str
    schedule: str
    command: str
    problem: str = ""  # "invalid schedule", "no service unit"


@dataclass(frozen=True, slots=True)
class Variable:
    """An environment line of a crontab."""

    line: int
    name: str
    value: str


def crontab(text: str, label: str) -> tuple[list[Job], list[Variable]]:
    """The jobs and environment lines of a crontab called ``label``."""
    jobs: list[Job] = []
    variables: list[Variable] = []
    comment = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            comment = line.lstrip("#").strip() if line else ""
            continue
        assignment = _ENVIRONMENT.match(line)
        if assignment and not line.startswith("@"):
            variables.append(Variable(number, assignment.group(1), assignment.group(2)))
        else:
            jobs.append(_cron_job(line, f"{label}:{number}", comment))
        comment = ""
    return jobs, variables


def _cron_job(line: str, source: str, name: str) -> Job:
    # Imported here: only a crontab needs croniter, and it would slow every run's start.
    from croniter import croniter

    count = 1 if line.startswith("@") else 5  # a nickname, or five time fields
    fields = line.split(None, count)
    schedule, command = " ".join(fields[:count]), fields[count] if len(fields) > count else ""
    valid = schedule in NICKNAMES or (
        len(fields) >= count and not schedule.startswith("@") and croniter.is_valid(schedule)
    )
    problem = "" if valid and command else ("no command" if valid else "invalid schedule")
    return Job(source, name, schedule, command, problem)


def systemd_timers(folder: Path) -> list[Job]:
    """The timer units in ``folder`` (not below it), in name order, with their services."""
    jobs = []
    for timer in sorted(folder.glob("*.timer"))[:MAX_TIMERS]:
        settings = unit_settings(timer)
        if settings is None:
            continue
        schedule = "; ".join(
            f"{key}={value}" for key in TIMER_SETTINGS for value in settings.get(("Timer", key), [])
        )
        unit = (settings.get(("Timer", "Unit")) or [timer.with_suffix(".service").name])[-1]
        service = unit_settings(folder / unit) if "/" not in unit else None
        starts = (service or {}).get(("Service", "ExecStart"), [])
        command = " && ".join(s for s in starts if s)
        problem = "" if service is not None else f"no service unit {unit} beside it"
        problem = problem or ("" if schedule else "no schedule")
        jobs.append(Job(f"systemd:{timer.name}", timer.stem, schedule, command, problem))
    return jobs


def unit_settings(path: Path) -> dict[tuple[str, str], list[str]] | None:
    """``(section, key) -> values`` of a unit file (a key may repeat); None when it cannot be
    read as one (missing, not a regular file, too large)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_UNIT_BYTES:
            return None
        text = path.read_text(errors="replace")
    except OSError:
        return None
    settings: dict[tuple[str, str], list[str]] = {}
    section = ""
    for line in _joined(text.splitlines()):
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif "=" in line and not line.startswith(("#", ";")):
            key, value = (part.strip() for part in line.split("=", 1))
            values = settings.setdefault((section, key), [])
            if value:
                values.append(value)
            else:
                values.clear()  # an empty assignment resets a list setting
    return settings


def _joined(lines: list[str]) -> list[str]:
    """Lines with backslash continuations joined and surrounding blanks removed."""
    joined: list[str] = []
    pending = ""
    for raw in lines:
        line = raw.strip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        joined.append((pending + line).strip())
        pending = ""
    if pending:
        joined.append(pending.strip())
    return joined
