"""Confinement of model-supplied paths to the workspace's files root.

A path is accepted only if it is relative, holds no NUL byte, no ``..`` part and no
percent-encoding that would decode to one of those, and, once every symlink is resolved, still
lies inside the resolved root. Walks never follow symlinked folders, and each entry they report
is checked the same way. Special files (FIFOs, devices, sockets) are never opened: reading a
FIFO would block the run. Secrets files (see ``_secrets``) are never written.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from toolwire.core.errors import ToolRefusal
from toolwire.tools.builtin._common import echo
from toolwire.tools.builtin._secrets import SecretIdentities, is_secret_file, is_secret_path

MAX_PATH_CHARS = 1024  # longer than any real relative path in a project


def check_relative(raw: str) -> PurePosixPath:
    """The model's path as a clean relative path, or a refusal saying what was wrong."""
    if len(raw) > MAX_PATH_CHARS:
        raise ToolRefusal(f"path is longer than {MAX_PATH_CHARS} characters.")
    decoded = unquote(raw)
    for candidate in (raw, decoded):
        if "\x00" in candidate:
            raise ToolRefusal("path contains a NUL byte.")
        normal = candidate.replace("\\", "/")
        if normal.startswith("/") or (len(normal) > 1 and normal[1] == ":"):
            raise ToolRefusal(f"path {echo(raw)} is absolute; give a path inside the files folder.")
        if ".." in normal.split("/"):
            raise ToolRefusal(f"path {echo(raw)} leaves the files folder.")
    if decoded != raw:
        raise ToolRefusal(f"path {echo(raw)} is percent-encoded; give the plain path.")
    return PurePosixPath(raw.strip() or ".")


def inside(root: Path, raw: str) -> Path:
    """The resolved path for ``raw``; refused if it does not exist or escapes ``root``."""
    relative = check_relative(raw)
    base = root.resolve()
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise ToolRefusal(f"path {echo(raw)} leaves the files folder.")
    if not target.exists():
        raise ToolRefusal(f"path {echo(raw)} does not exist.")
    return target


def regular_file(root: Path, raw: str) -> Path:
    target = inside(root, raw)
    if not stat.S_ISREG(target.stat().st_mode):
        raise ToolRefusal(f"path {echo(raw)} is not a regular file.")
    return target


def display(root: Path, path: Path) -> str:
    """A path as shown to the model: relative to the root, with forward slashes."""
    relative = path.relative_to(root.resolve()).as_posix()
    return relative or "."


def contained(base: Path, entry: Path) -> bool:
    """True when ``entry``, symlinks resolved, is inside ``base`` (already resolved)."""
    try:
        return entry.resolve().is_relative_to(base)
    except OSError:
        return False


def walk_files(base: Path, folder: Path) -> Iterator[Path]:
    """Regular files under ``folder``, sorted, never following symlinked folders out or in."""
    for current, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        here = Path(current)
        for name in sorted(files):
            entry = here / name
            if contained(base, entry) and entry.is_file():
                yield entry


def writable_file(root: Path, raw: str, known: SecretIdentities) -> Path:
    """Where a write of ``raw`` lands, symlinks resolved: inside ``root``, not a secret file
    (nor another name of one of ``known``), and a regular file if it exists already. It need
    not exist, nor its folders."""
    relative = check_relative(raw)
    base = root.resolve()
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise ToolRefusal(f"path {echo(raw)} leaves the files folder.")
    if target == base or target.is_dir():
        raise ToolRefusal(f"path {echo(raw)} is a folder; give a file's path.")
    if is_secret_path(relative) or is_secret_file(base, target, known=known):
        raise ToolRefusal(f"{echo(raw)} looks like a secrets file and is never written.")
    if target.exists() and not stat.S_ISREG(target.stat().st_mode):
        raise ToolRefusal(f"path {echo(raw)} is not a regular file.")
    return target
