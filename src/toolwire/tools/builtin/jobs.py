"""``list_scheduled_jobs``: what runs on a schedule, from the sources the workspace names
(``[jobs] crontab = "...", systemd = "...", table = "..."``).

Commands and environment values are masked as logs are: an environment variable with a
sensitive name is withheld whole, everything else passes through ``toolwire.core.redact``. A crontab
that is a secrets file (by name, by the name it links to, as a hard link to one in the files
root, or by a private key inside) is never read. A job table's rows follow the database tools'
rules: credential columns never read, every cell through ``safe_cell``. Text and the two
``table`` artifacts (files, then the table) are written in one pass within the text budget.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from toolwire.core.errors import ToolRefusal
from toolwire.core.redact import MASK, mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    builtin,
    fitted,
    format_cell,
    secret_identities,
    text_bytes,
    workspace_of,
)
from toolwire.tools.builtin._schedules import Job, Variable, crontab, systemd_timers
from toolwire.tools.builtin._secrets import read_named_file
from toolwire.tools.builtin._sensitive import is_sensitive
from toolwire.tools.builtin._sql import (
    engine_of,
    fetch_rows,
    mapped_table,
    order_columns,
    readable_columns,
)
from toolwire.tools.builtin.records import MAX_LIMIT, row_blocks
from toolwire.workspace.config import Workspace

MAX_CRONTAB_BYTES = 256_000  # a crontab is a screenful; a larger file is not one
COLUMNS = ["source", "name", "schedule", "command", "problem"]


@builtin(
    group="system", data_class="system_diagnostics", integrity="untrusted", requires_admin=True
)
def list_scheduled_jobs(context: ToolContext) -> ToolResult:
    """What runs on a schedule: the jobs of the application's crontab, systemd timers and job
    table, commands masked.

    Artifacts: ``table`` ``{columns: ["source", "name", "schedule", "command", "problem"],
    rows}`` for the files, and the job table's rows; the same cells as the text.
    """
    workspace = workspace_of(context)
    mapping = workspace.jobs
    if mapping is None:
        raise ToolRefusal("the workspace names no scheduled jobs (a crontab, timers or a table).")
    jobs: list[Job] = []
    variables: list[Variable] = []
    if mapping.crontab is not None:
        found, variables = crontab(_crontab_text(workspace, mapping.crontab), "crontab")
        jobs += found
    if mapping.systemd is not None:
        jobs += systemd_timers(mapping.systemd)
    lines, rows = _job_lines(jobs, variables)
    artifacts = [Artifact.table("scheduled jobs", COLUMNS, rows)] if rows else []
    if mapping.table is not None:
        more, artifact = _table_jobs(context, mapping.table, text_bytes(lines))
        lines += more
        artifacts.append(artifact)
    return ToolResult.text("\n".join(lines), *artifacts)


def _crontab_text(workspace: Workspace, path: Path) -> str:
    text = read_named_file(path, MAX_CRONTAB_BYTES, secret_identities(workspace))
    if text is None:
        raise ToolRefusal("the workspace's crontab cannot be read.")
    return text


def _job_lines(jobs: list[Job], variables: list[Variable]) -> tuple[list[str], list[list[str]]]:
    lines = [f"Scheduled jobs in files ({len(jobs)}):"]
    if variables:
        shown = ", ".join(f"{v.name}={_variable(v)}" for v in variables)
        lines.append(format_cell(f"Crontab environment: {shown}"))
    entries = (_entry([format_cell(mask_secrets(value)) for value in _values(job)]) for job in jobs)
    listed, rows = fitted(
        entries, text_bytes(lines) + 400, total=len(jobs), more="({} more jobs not shown)"
    )
    return lines + listed, rows


def _entry(cells: list[str]) -> tuple[list[str], list[str]]:
    source, name, schedule, command, problem = cells
    line = f"- {source}: {name or '(unnamed)'}; schedule {schedule}; runs {command or '(nothing)'}"
    return [line + (f"; {problem}" if problem else "")], cells


def _values(job: Job) -> list[str]:
    return [job.source, job.name, job.schedule, job.command, job.problem]


def _variable(variable: Variable) -> str:
    return MASK if is_sensitive(variable.name) else mask_secrets(variable.value)


def _table_jobs(context: ToolContext, name: str, used: int) -> tuple[list[str], Artifact]:
    engine = engine_of(context)
    table = mapped_table(engine, name)
    columns = readable_columns(table)
    if not columns:
        raise ToolRefusal(f"no readable columns in the job table {name!r}.")
    query = select(*columns).order_by(*order_columns(table)).limit(MAX_LIMIT)
    rows = fetch_rows(engine, query)
    fields = [c.name for c in columns]
    blocks, shown = row_blocks(table.name, fields, rows, 0, used + 200)
    lines = [f"Jobs in the table {table.name} ({len(shown)}):", *blocks]
    return lines, Artifact.table(f"{table.name} jobs", fields, shown)
