"""File writing: ``write_file``, which waits for an operator on every call.

The path is confined exactly as the read tools confine theirs (``_paths``): relative, no NUL,
no ``..``, no symlink out of the files root, never a secrets file. The text is capped at
``MAX_WRITE_BYTES``. A write replaces the file atomically (a temporary file beside it, then a
rename), so a reader never sees half a file; missing parent folders are created inside the root.

The approver's preview is a unified diff of the file as it is against the new text, or, for a
new file, its size and first lines. It is built from the same checks, so a path the tool would
refuse is never read for a preview either. Lines are split at newlines only: a carriage return
stays on its line, so a change of line endings is a change the approver sees.

The preview's basis (what it is computed on, re-checked before an approved write runs) is the
resolved path, whether a file is there, its device and inode and its content's SHA-256: a file
changed, replaced or created by another writer in between is never overwritten unseen.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import tempfile
from pathlib import Path, PurePosixPath

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import ToolResult
from toolwire.tools.api import Effect, ToolContext
from toolwire.tools.builtin._common import (
    Root,
    builtin,
    echo,
    files_root,
    refusal_shown,
    secret_identities,
    workspace_of,
)
from toolwire.tools.builtin._paths import writable_file
from toolwire.tools.builtin._secrets import SecretIdentities
from toolwire.workspace.maps import DEFAULT_ROOT

MAX_WRITE_BYTES = 200_000  # a source file or a document; anything larger is data, not an edit
MAX_DIFF_BYTES = 1_000_000  # an existing file larger than this is not diffed line by line
NEW_FILE_LINES = 19  # with the heading, one screenful of the approver's preview
NEW_FILE_MODE = 0o644  # what a text file in a project usually is; an existing file keeps its own
# Above this, a file's basis is its size and modification time, not a hash of its content:
# hashing it would make every preview of the call slow.
MAX_HASHED_BYTES = 64 * 1024 * 1024


def _known(context: ToolContext) -> SecretIdentities:
    return secret_identities(workspace_of(context))


def _encoded(text: str) -> bytes:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON can carry one, UTF-8 cannot
        raise ToolRefusal("text is not valid Unicode; nothing was written.") from None
    if len(data) > MAX_WRITE_BYTES:
        raise ToolRefusal(f"text is {len(data)} bytes; write_file takes at most {MAX_WRITE_BYTES}.")
    return data


def _shown(path: str) -> str:
    return PurePosixPath(path.strip()).as_posix()


# Data class "content": the provider only ever reads back a byte and line count of text the
# model wrote itself; the file as it was reaches the approver's preview alone, never a model.
@builtin(
    integrity="trusted",
    group="editing",
    data_class="content",
    enabled_by_default=True,
    requires_approval=True,
    effect=Effect.IDEMPOTENT_WRITE,
)
def write_file(path: str, text: str, context: ToolContext, root: Root = DEFAULT_ROOT) -> ToolResult:
    """Write text to a file in the workspace's files folder, replacing it. Needs approval."""
    target = writable_file(files_root(context, root), path, _known(context))
    data = _encoded(text)
    try:
        _replace(target, data)
    except OSError:
        raise ToolRefusal(f"path {echo(path)} could not be written.") from None
    lines = len(text.splitlines())
    return ToolResult.text(f"wrote {_shown(path)}: {len(data)} bytes, {lines} lines.")


def _replace(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else NEW_FILE_MODE
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=".toolwire-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@write_file.previewer
@refusal_shown
def _preview_write(
    path: str, text: str, context: ToolContext, root: Root = DEFAULT_ROOT
) -> list[str]:
    target = writable_file(files_root(context, root), path, _known(context))
    _encoded(text)
    shown = _shown(path)
    new = _lines(text)
    if not target.exists():
        return [f"new file {shown}, {len(new)} lines", *new[:NEW_FILE_LINES]]
    size = target.stat().st_size
    if size > MAX_DIFF_BYTES:
        return [f"replace {shown} ({size} bytes, too large to compare) with {len(new)} lines"]
    old = _lines(target.read_bytes().decode("utf-8", "replace"))
    diff = difflib.unified_diff(old, new, f"a/{shown}", f"b/{shown}", lineterm="")
    return list(diff) or [f"{shown} already holds this text; nothing would change."]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


@write_file.basis
def _basis_write(path: str, text: str, context: ToolContext, root: Root = DEFAULT_ROOT) -> str:
    target = writable_file(files_root(context, root), path, _known(context))
    try:
        found = target.stat()
    except FileNotFoundError:
        return f"{target}\nabsent"
    identity = f"{target}\n{found.st_dev}:{found.st_ino}\n{found.st_size}"
    if found.st_size > MAX_HASHED_BYTES:
        return f"{identity}\nmodified {found.st_mtime_ns}"
    with target.open("rb") as file:
        return f"{identity}\nsha256 {hashlib.file_digest(file, 'sha256').hexdigest()}"
