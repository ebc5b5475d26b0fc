"""What every built-in tool shares: the decorator, workspace access, cell formatting.

A built-in refuses by raising :class:`toolwire.core.errors.ToolRefusal`; the seam hands its text to
the model as ``Error: <text>``. Refusal texts are fixed phrases plus the model's own (clipped)
input, never data the model was not allowed to see, and never an exception message.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import Field

from toolwire.core.errors import ToolRefusal
from toolwire.core.personal import clipped
from toolwire.core.result import ToolResult
from toolwire.tools.api import Effect, FunctionTool, ToolContext
from toolwire.tools.builtin._secrets import SecretIdentities
from toolwire.workspace.config import Workspace
from toolwire.workspace.maps import DEFAULT_ROOT

# Below the seam's 50,000-byte cap, so the seam never cuts text an artifact would still show:
# a tool stops adding entries (to text and artifact alike) before its text outgrows this.
TEXT_BUDGET_BYTES = 45_000
CELL_CHARS = 300  # one value in a listing; longer values are cut and marked with "…"
ECHO_CHARS = 80  # model input quoted back in a refusal: enough to recognise, too short to abuse
_WHITESPACE = re.compile(r"\s+")
Row = TypeVar("Row")

Root = Annotated[
    str, Field(description=f"which file root of the workspace (default {DEFAULT_ROOT!r})")
]


def builtin(
    *,
    group: str,
    data_class: str,
    integrity: str,
    requires_admin: bool = False,
    enabled_by_default: bool = True,
    requires_approval: bool = False,
    effect: Effect = Effect.READ_ONLY,
    open_world: bool = False,
    needs_workspace: bool = True,
) -> Callable[[Callable[..., ToolResult]], FunctionTool]:
    """Make a built-in tool: every trait named explicitly, none left to a default. Built-ins
    work on the run's workspace unless one says it needs none. ``integrity``: whether its
    results carry words someone else chose (see :mod:`toolwire.tools.labels`)."""

    def wrap(function: Callable[..., ToolResult]) -> FunctionTool:
        return FunctionTool(
            function,
            group=group,
            data_class=data_class,
            requires_admin=requires_admin,
            enabled_by_default=enabled_by_default,
            requires_approval=requires_approval,
            effect=effect,
            open_world=open_world,
            needs_workspace=needs_workspace,
            integrity=integrity,
        )

    return wrap


def refusal_shown(previewer: Callable[..., list[str]]) -> Callable[..., list[str]]:
    """A previewer whose refusal becomes its one line: the approver reads why the call will fail.

    The refusal text is the one the model would read, so it shows nothing the tool would not.
    """

    @functools.wraps(previewer)
    def previewing(*args: Any, **kwargs: Any) -> list[str]:
        try:
            return previewer(*args, **kwargs)
        except ToolRefusal as refusal:
            return [f"The call will be refused: {refusal}"]

    return previewing


def workspace_of(context: ToolContext) -> Workspace:
    workspace = context.workspace
    if not isinstance(workspace, Workspace):
        raise ToolRefusal("no workspace is configured for this run.")
    return workspace


def secret_identities(workspace: Workspace) -> SecretIdentities:
    """The secrets files of every folder ``workspace`` names, by identity, for one call: a
    hard link to one of them is refused under any name, in any root."""
    return SecretIdentities(workspace.folders())


def files_root(context: ToolContext, root: str = DEFAULT_ROOT) -> Path:
    """The folder of the file root called ``root``; refused when there is none by that name."""
    roots = workspace_of(context).roots()
    if not roots:
        raise ToolRefusal("the workspace has no files folder.")
    if root not in roots:
        names = ", ".join(roots)
        raise ToolRefusal(f"root {echo(root)} is not a file root of the workspace: {names}.")
    return roots[root]


def fits(lines: Sequence[str], used: int, budget: int = TEXT_BUDGET_BYTES) -> bool:
    """Whether ``lines`` still fit in ``budget`` bytes of text after ``used`` bytes."""
    return used + text_bytes(lines) <= budget


def text_bytes(lines: Sequence[str]) -> int:
    """The bytes ``lines`` take once joined with newlines (one per line, counted generously)."""
    return sum(len(line.encode()) + 1 for line in lines)


def fitted(
    entries: Iterable[tuple[Sequence[str], Row]], used: int, *, total: int = 0, more: str = ""
) -> tuple[list[str], list[Row]]:
    """The text lines and artifact rows of ``entries`` (each a block of lines and its row),
    both ending where the text, ``used`` bytes so far, would outgrow the budget. Where they
    end, ``more`` is the last line, its ``{}`` the number of the ``total`` entries left out."""
    lines: list[str] = []
    rows: list[Row] = []
    for block, row in entries:
        if not fits(block, used):
            if more:
                lines.append(more.format(total - len(rows)))
            break
        used += text_bytes(block)
        lines.extend(block)
        rows.append(row)
    return lines, rows


def echo(value: object) -> str:
    """Model input quoted back, clipped and on one line."""
    text = _WHITESPACE.sub(" ", str(value))
    return repr(clipped(text, ECHO_CHARS))


def format_cell(value: object) -> str:
    """One value as listed in both text and artifacts: the same string in both, always. A long
    one is cut, never through personal data (the seam masks it after, by the run's zone)."""
    text = cell_text(value)
    return clipped(text, CELL_CHARS)


def cell_text(value: object) -> str:
    """One value's text as :func:`format_cell` shows it, whitespace runs as one space, uncut."""
    if value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, bytes | bytearray | memoryview):
        text = f"<binary, {len(bytes(value))} bytes>"
    else:
        text = str(value)
    return _WHITESPACE.sub(" ", text).strip()
