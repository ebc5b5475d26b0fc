"""Private places on disk: folders 0700 and files 0600, for run audits, keys and the demo.

Runs hold prompts, tool output and model answers; the state key unseals waiting runs. Nothing
toolwire creates for them may be readable by other users of the machine, whatever the umask.

Only what toolwire creates is given these modes: a folder or file the user named that already
exists keeps its own (the user chose it), except toolwire's own data folder, which is tightened
because earlier versions created it world-readable.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700  # owner only: the folder lists run databases and the state key
PRIVATE_FILE_MODE = 0o600  # owner only: SQLite copies it onto its -wal and -shm files


def private_dir(folder: Path, *, tighten: bool = False) -> None:
    """Create ``folder`` and any missing parents, each 0700; ``tighten`` also chmods it if found.

    Raises ``OSError`` as ``mkdir`` does (a file in the way, no permission).
    """
    missing: list[Path] = []
    current = folder
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for created in reversed(missing):
        try:
            created.mkdir(mode=PRIVATE_DIR_MODE)
        except FileExistsError:
            continue  # another process made it first; it is theirs to have set
        os.chmod(created, PRIVATE_DIR_MODE)  # mkdir's mode passes through the umask
    if not folder.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(folder))
    if tighten and not missing:
        os.chmod(folder, PRIVATE_DIR_MODE)


def private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 unless it exists; an existing file keeps its mode."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, PRIVATE_FILE_MODE)  # the umask may have taken bits away
    finally:
        os.close(descriptor)
