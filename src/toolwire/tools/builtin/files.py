"""File tools over the workspace's files root: ``browse_folder``, ``find_files``, ``file_info``.

Every path goes through ``_paths``: relative only, no ``..``, no encoded tricks, symlinks resolved
and checked against the root. Listings never show what lies behind a symlink that leaves the
root; such an entry is shown as ``name -> (outside)`` without its target. A secrets file (by
name, content head or hard link; see ``_secrets``) is listed by name with its details withheld.
"""

from __future__ import annotations

import fnmatch
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    Root,
    builtin,
    echo,
    files_root,
    secret_identities,
    workspace_of,
)
from toolwire.tools.builtin._paths import check_relative, contained, display, inside, walk_files
from toolwire.tools.builtin._secrets import LISTING_SNIFF_BYTES, SecretIdentities, is_secret_file
from toolwire.workspace.maps import DEFAULT_ROOT

MAX_DEPTH = 3  # a folder outline, not a dump of the tree
MAX_ENTRIES = 300  # entries per listing: enough to orient, bounded for the wire
MAX_MATCHES = 200  # find_files results
MAX_PATTERN_CHARS = 200
WITHHELD = "withheld"  # a secrets file's size and times in a listing

Depth = Annotated[int, Field(ge=1, le=MAX_DEPTH)]


@builtin(group="files", data_class="content", integrity="trusted")
def browse_folder(
    context: ToolContext, path: str = ".", depth: Depth = 1, root: Root = DEFAULT_ROOT
) -> ToolResult:
    """List a folder inside the workspace files, with sizes, to ``depth`` levels.

    Artifact: ``tree`` ``{nodes: [{label: "name/" or "name (N bytes)", children: [...]}]}``.
    """
    top = files_root(context, root)
    folder = inside(top, path)
    if not folder.is_dir():
        raise ToolRefusal(f"path {echo(path)} is not a folder.")
    budget = [MAX_ENTRIES]
    base = top.resolve()
    nodes = _children(_Listing(base, _known(context)), folder, depth, budget)
    lines = [f"Folder {display(top, folder)}:"]
    _outline(nodes, lines, 1)
    if budget[0] <= 0:
        lines.append(f"(listing stopped at {MAX_ENTRIES} entries)")
    return ToolResult.text("\n".join(lines), Artifact.tree(display(top, folder), nodes))


@builtin(group="files", data_class="content", integrity="trusted")
def find_files(
    context: ToolContext, pattern: str, limit: int = 50, root: Root = DEFAULT_ROOT
) -> ToolResult:
    """Find files whose path (relative to the files folder) matches a glob such as ``*.py``.

    Artifact: ``table`` ``{columns: ["path", "bytes"], rows}``.
    """
    if not pattern.strip() or len(pattern) > MAX_PATTERN_CHARS:
        raise ToolRefusal(f"pattern must be 1 to {MAX_PATTERN_CHARS} characters.")
    check_relative(pattern)
    top = files_root(context, root)
    base = top.resolve()
    cap = max(1, min(limit, MAX_MATCHES))
    listing = _Listing(base, _known(context))
    rows: list[list[str]] = []
    for entry in walk_files(base, base):
        relative = display(top, entry)
        if fnmatch.fnmatchcase(relative, pattern) or fnmatch.fnmatchcase(entry.name, pattern):
            rows.append([relative, listing.size(entry)])
            if len(rows) >= cap:
                break
    if not rows:
        return ToolResult.text(f"No files match {echo(pattern)}.")
    text = f"Files matching {echo(pattern)} ({len(rows)}):\n"
    text += "\n".join(f"- {p} ({_bytes(size)})" for p, size in rows)
    return ToolResult.text(text, Artifact.table("files", ["path", "bytes"], rows))


@builtin(group="files", data_class="content", integrity="trusted")
def file_info(context: ToolContext, path: str, root: Root = DEFAULT_ROOT) -> ToolResult:
    """Size, kind, modification time and permissions of one file or folder.

    Artifact: ``key_value`` ``{items: [["path", ...], ["kind", ...], ...]}``.
    """
    top = files_root(context, root)
    target = inside(top, path)
    info = target.stat()
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise ToolRefusal(f"path {echo(path)} is a special file.")
    modified = datetime.fromtimestamp(info.st_mtime, UTC).isoformat(timespec="seconds")
    regular = stat.S_ISREG(info.st_mode)
    secret = regular and is_secret_file(top.resolve(), target, known=_known(context))
    items = [
        ("path", display(top, target)),
        ("kind", "folder" if stat.S_ISDIR(info.st_mode) else "file"),
        ("bytes", WITHHELD if secret else str(info.st_size)),
        ("modified", WITHHELD if secret else modified),
        ("mode", stat.filemode(info.st_mode)),
        ("secret_like_name", "yes" if secret else "no"),
    ]
    text = "\n".join(f"{key}: {value}" for key, value in items)
    return ToolResult.text(text, Artifact.key_value(display(top, target), items))


def _known(context: ToolContext) -> SecretIdentities:
    return secret_identities(workspace_of(context))


@dataclass(frozen=True, slots=True)
class _Listing:
    """One listing's view of the root: its resolved path and the workspace's secrets files."""

    base: Path
    known: SecretIdentities

    def size(self, entry: Path) -> str:
        if is_secret_file(self.base, entry, LISTING_SNIFF_BYTES, known=self.known):
            return WITHHELD
        return str(entry.stat().st_size)


def _bytes(size: str) -> str:
    return "secrets file, details withheld" if size == WITHHELD else f"{size} bytes"


def _children(
    listing: _Listing, folder: Path, depth: int, budget: list[int]
) -> list[dict[str, Any]]:
    nodes: list[dict[str, Any]] = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if budget[0] <= 0:
            break
        budget[0] -= 1
        nodes.append(_node(listing, entry, depth, budget))
    return nodes


def _node(listing: _Listing, entry: Path, depth: int, budget: list[int]) -> dict[str, Any]:
    if not contained(listing.base, entry):
        return {"label": f"{entry.name} -> (outside)", "children": []}
    if entry.is_symlink():
        return {"label": f"{entry.name} -> (link)", "children": []}
    if entry.is_dir():
        children = _children(listing, entry, depth - 1, budget) if depth > 1 else []
        return {"label": f"{entry.name}/", "children": children}
    if not stat.S_ISREG(entry.stat().st_mode):
        return {"label": f"{entry.name} (special)", "children": []}
    return {"label": f"{entry.name} ({_bytes(listing.size(entry))})", "children": []}


def _outline(nodes: list[dict[str, Any]], lines: list[str], level: int) -> None:
    for node in nodes:
        lines.append(f"{'  ' * level}- {node['label']}")
        _outline(node["children"], lines, level + 1)
