"""``list_deprecations``: the deprecation warnings in the configured logs, grouped by message.

Lines are read from each log's tail (``system.tail_lines``) and masked (``toolwire.core.redact``)
before anything else looks at them, so a grouped message never holds a secret a log line held.
A line counts when it names a ``...DeprecationWarning`` (Python's warnings, as logged) or says
"deprecated". Messages are grouped once memory addresses are blanked; each group keeps how
often it was seen, where it was first reported from, and the first and last time stamps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from toolwire.core.redact import mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, fitted, format_cell
from toolwire.tools.builtin.system import readable_logs, tail_lines

MAX_GROUPS = 100  # distinct messages listed
_WARNING = re.compile(r"(?:(?P<where>[^\s:]+\.py:\d+):\s*)?(?P<kind>\w*DeprecationWarning):\s*")
_DEPRECATED = re.compile(r"\bdeprecat(?:ed|ion)\b", re.IGNORECASE)
_STAMP = re.compile(
    r"^\s*\[?(?P<stamp>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}"
    r"(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\]?"
)
_LEVEL = re.compile(r"^\s*(?:DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL)\b[:\s]*")
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]+\b")
COLUMNS = ["count", "kind", "message", "first_seen", "last_seen", "where"]


@dataclass
class _Group:
    kind: str
    message: str
    where: str
    first: str
    last: str
    count: int = 0


@builtin(
    group="system", data_class="system_diagnostics", integrity="untrusted", requires_admin=True
)
def list_deprecations(context: ToolContext) -> ToolResult:
    """Deprecation warnings in the configured log files, grouped by message: how often, where
    from, and when first and last seen.

    Artifact: ``table`` ``{columns: ["count", "kind", "message", "first_seen", "last_seen",
    "where"], rows}``, the groups the text lists.
    """
    groups: dict[tuple[str, str], _Group] = {}
    for path in readable_logs(context):
        for number, line in enumerate(tail_lines(path), start=1):
            _collect(groups, mask_secrets(line), f"{path.name}:{number}")
    if not groups:
        return ToolResult.text("No deprecation warnings in the configured logs.")
    ordered = sorted(groups.values(), key=lambda g: (-g.count, g.first))[:MAX_GROUPS]
    return _render(ordered, len(groups))


def _collect(groups: dict[tuple[str, str], _Group], line: str, place: str) -> None:
    warning = _WARNING.search(line)
    if warning is None and not _DEPRECATED.search(line):
        return
    stamp = _STAMP.match(line)
    when = stamp.group("stamp") if stamp else place
    rest = line[stamp.end() :] if stamp else line
    if warning is not None:
        kind, message = warning.group("kind"), line[warning.end() :]
        where = warning.group("where") or place
    else:
        kind, message, where = "deprecation", _LEVEL.sub("", rest), place
    message = " ".join(_ADDRESS.sub("0x…", message).split())
    group = groups.setdefault((kind, message), _Group(kind, message, where, when, when))
    group.count += 1
    group.last = when


def _render(ordered: list[_Group], total: int) -> ToolResult:
    entries = (_entry([str(g.count), *(format_cell(v) for v in _values(g))]) for g in ordered)
    lines, rows = fitted(entries, 200, total=len(ordered), more="({} more messages not shown)")
    header = f"Deprecation warnings: {total} distinct messages, most frequent first:"
    return ToolResult.text(
        "\n".join([header, *lines]), Artifact.table("deprecations", COLUMNS, rows)
    )


def _entry(cells: list[str]) -> tuple[list[str], list[str]]:
    count, kind, message, first, last, where = cells
    return [f"- {count} times {kind}: {message} (first {first}, last {last}, {where})"], cells


def _values(group: _Group) -> list[str]:
    return [group.kind, group.message, group.first, group.last, group.where]
