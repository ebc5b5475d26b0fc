"""System tools: environment, status, packages, logs and the last exception.

Everything here is diagnostics and admin-only. ``get_env`` and the log tools redact by name
(the same sensitive-name rule as the database tools) and by value shape (``toolwire.core.redact``);
``get_env_raw`` is the one unredacted view, secret-adjacent and disabled by default. Log files are
read from their tail only (``LOG_TAIL_BYTES``), so a huge log costs one bounded read. A
configured log that is a secrets file (by name, or a hard link to one in the files folder; see
``_secrets``) is never read.
"""

from __future__ import annotations

import os
import platform
import shutil
from importlib.metadata import distributions
from pathlib import Path
from typing import Annotated

from pydantic import Field

from toolwire.core.errors import ToolRefusal
from toolwire.core.redact import mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, format_cell, secret_identities, workspace_of
from toolwire.tools.builtin._secrets import is_secret_named_file
from toolwire.tools.builtin._sensitive import is_sensitive
from toolwire.tools.disclosure import visible

REDACTED = "[redacted]"
MAX_ENV_VARS = 300  # an environment larger than this is listed in part
MAX_PACKAGES = 500  # installed distributions listed
MAX_LOG_LINES = 200  # lines a model can read in one turn
LOG_TAIL_BYTES = 256_000  # read from the end of each log: bounded even for huge logs
MAX_SEARCH_CHARS = 200  # a phrase to look for, not a document
TRACEBACK_START = "Traceback (most recent call last):"
MAX_TRACEBACK_LINES = 80  # a deep stack, without a recursion error's thousand frames

LogLines = Annotated[int, Field(ge=1, le=MAX_LOG_LINES)]


@builtin(group="system", data_class="system_diagnostics", integrity="trusted", requires_admin=True)
def get_env(context: ToolContext) -> ToolResult:
    """The process environment; secret values are redacted by variable name and value shape.

    Artifact: ``key_value`` ``{items: [[name, value], ...]}``, the same values as the text.
    """
    env = workspace_of(context).env()
    items = [(k, _safe_env_value(k, env[k])) for k in sorted(env)[:MAX_ENV_VARS]]
    text = "Environment (secrets redacted):\n" + "\n".join(f"{k}={v}" for k, v in items)
    return ToolResult.text(text, Artifact.key_value("environment", items))


@builtin(
    integrity="trusted",
    group="system",
    data_class="secret_adjacent",
    requires_admin=True,
    enabled_by_default=False,
)
def get_env_raw(context: ToolContext) -> ToolResult:
    """The full process environment, unredacted. Disabled unless an operator enables it."""
    env = workspace_of(context).env()
    names = sorted(env)[:MAX_ENV_VARS]
    return ToolResult.text("\n".join(f"{k}={env[k]}" for k in names))


@builtin(group="system", data_class="system_diagnostics", integrity="trusted", requires_admin=True)
def get_system_status(context: ToolContext) -> ToolResult:
    """Python, platform, CPU count, load, memory and disk space of the files folder.

    Artifact: ``key_value`` ``{items: [[name, value], ...]}``.
    """
    items: list[tuple[str, str]] = [
        ("python", platform.python_version()),
        ("implementation", platform.python_implementation()),
        ("platform", platform.platform()),
        ("cpu_count", str(os.cpu_count() or "unknown")),
        ("load_average", _load()),
        ("memory", _memory()),
    ]
    root = workspace_of(context).files_root
    if root is not None:
        usage = shutil.disk_usage(root)
        items.append(("disk_free", f"{usage.free // 2**20} MiB of {usage.total // 2**20} MiB"))
    text = "\n".join(f"{k}: {v}" for k, v in items)
    return ToolResult.text(text, Artifact.key_value("system status", items))


@builtin(
    integrity="trusted",
    group="system",
    data_class="system_diagnostics",
    requires_admin=True,
    needs_workspace=False,
)
def list_packages(context: ToolContext) -> ToolResult:
    """Installed Python distributions and their versions.

    Artifact: ``table`` ``{columns: ["package", "version"], rows}``.
    """
    found = {format_cell(d.metadata["Name"]): format_cell(d.version) for d in distributions()}
    rows = sorted(found.items(), key=lambda kv: kv[0].lower())[:MAX_PACKAGES]
    text = f"Installed packages ({len(rows)}):\n" + "\n".join(f"- {n} {v}" for n, v in rows)
    return ToolResult.text(text, Artifact.table("packages", ["package", "version"], rows))


@builtin(
    group="system", data_class="system_diagnostics", integrity="untrusted", requires_admin=True
)
def fetch_logs(context: ToolContext, lines: LogLines = 50) -> ToolResult:
    """The last ``lines`` lines of each configured log file; e-mails, tokens, keys redacted."""
    blocks = []
    for path in readable_logs(context):
        tail = tail_lines(path)[-lines:]
        blocks.append(f"== {path.name} (last {len(tail)} lines)\n" + mask_secrets("\n".join(tail)))
    return ToolResult.text("\n\n".join(blocks))


@builtin(
    group="system", data_class="system_diagnostics", integrity="untrusted", requires_admin=True
)
def search_logs(context: ToolContext, text: str, lines: LogLines = 50) -> ToolResult:
    """Log lines containing ``text`` (case-insensitive), newest last, redacted.

    The search runs over the lines as shown (secrets masked, personal data by the run's zone),
    so it cannot be used to confirm what they mask.
    """
    needle = text.strip().lower()
    if not needle or len(needle) > MAX_SEARCH_CHARS:
        raise ToolRefusal(f"text must be 1 to {MAX_SEARCH_CHARS} characters.")
    hits = []
    for path in readable_logs(context):
        shown = (visible(line, context) for line in tail_lines(path))
        hits += [f"{path.name}: {line}" for line in shown if needle in line.lower()]
    if not hits:
        return ToolResult.text(f"No log lines contain {text.strip()[:MAX_SEARCH_CHARS]!r}.")
    return ToolResult.text("\n".join(hits[-lines:]))


@builtin(group="system", data_class="secret_adjacent", integrity="untrusted", requires_admin=True)
def get_last_exception(context: ToolContext) -> ToolResult:
    """The most recent Python traceback in the configured log files, redacted.

    Artifact: ``code`` ``{code, language: "pytb", first_line}``.
    """
    for path in reversed(readable_logs(context)):
        lines = tail_lines(path)
        starts = [n for n, line in enumerate(lines) if TRACEBACK_START in line]
        if starts:
            block = mask_secrets("\n".join(_traceback(lines, starts[-1])))
            artifact = Artifact.code(f"last exception in {path.name}", block, language="pytb")
            return ToolResult.text(f"Last exception in {path.name}:\n{block}", artifact)
    return ToolResult.text("No Python traceback in the configured logs.")


def _safe_env_value(name: str, value: str) -> str:
    if is_sensitive(name):
        return REDACTED
    cleaned = mask_secrets(value)
    return cleaned if cleaned == value else REDACTED


def readable_logs(context: ToolContext) -> list[Path]:
    workspace = workspace_of(context)
    known = secret_identities(workspace)
    files = [p for p in workspace.log_files if p.is_file() and not is_secret_named_file(p, known)]
    if not files:
        raise ToolRefusal("the workspace has no readable log files.")
    return files


def tail_lines(path: Path) -> list[str]:
    with path.open("rb") as handle:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - LOG_TAIL_BYTES))
        data = handle.read(LOG_TAIL_BYTES)
    lines = data.decode("utf-8", "replace").splitlines()
    return lines[1:] if size > LOG_TAIL_BYTES else lines  # the first line may be cut


def _traceback(lines: list[str], start: int) -> list[str]:
    block = [lines[start]]
    for line in lines[start + 1 : start + MAX_TRACEBACK_LINES]:
        block.append(line)
        if line and not line.startswith((" ", "\t", "Traceback")):
            break  # the exception line closes the traceback
    return block


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except (AttributeError, OSError):
        return "unknown"


def _memory() -> str:
    try:
        info = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return "unknown"
    fields = dict(line.split(":", 1) for line in info if ":" in line)
    total, available = fields.get("MemTotal", "?").strip(), fields.get("MemAvailable", "?").strip()
    return f"{available} available of {total}"
