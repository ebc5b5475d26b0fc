"""Child processes toolwire starts: what they may see of its environment, how much of their
output is read.

Invariants:
- A child's environment is built here, from an allow-list (``CHILD_ENV_NAMES``, the
  ``LC_*`` locale variables) of what a program needs to run: where programs are, the home and
  temporary folders, the locale and time zone, and on Windows the system's own folders. Nothing
  else of toolwire's environment passes: no provider key (``*_API_KEY``), no
  ``TOOLWIRE_STATE_KEY``, no ``TOOLWIRE_MCP_TOKEN``, no other token, whatever its name. A
  caller adds what the user configured for that child explicitly (an MCP server's ``env`` and
  ``pass_env``), and only that.
- A child's output is read within bounds: :func:`bounded_lines` holds at most one chunk and
  one line (cut at the caller's line cap, the rest of an overlong line read and dropped),
  however long a line the child writes without a newline; :func:`run_child` keeps at most
  ``max_output`` bytes of stdout and stops the child when it writes more.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

CHILD_ENV_NAMES = frozenset(
    {"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LANGUAGE", "TZ", "TMPDIR",
     "TEMP", "TMP"}
)  # fmt: skip
# Without these a Windows program cannot find its own system (SYSTEMROOT: sockets, crypto).
WINDOWS_ENV_NAMES = frozenset(
    {"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "USERPROFILE", "APPDATA",
     "LOCALAPPDATA", "PROGRAMDATA", "PROGRAMFILES", "HOMEDRIVE", "HOMEPATH"}
)  # fmt: skip
LOCALE_PREFIX = "LC_"
READ_CHUNK_BYTES = 65_536  # one read of a pipe: what is held besides the current line
STOP_SECONDS = 5.0  # a child stopped for writing too much gets this long to go


def child_environment(
    extra: Iterable[tuple[str, str]] = (), environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a child: the allow-listed part of ``environ`` (the process's), then
    ``extra``, what the user configured for this child explicitly."""
    source = os.environ if environ is None else environ
    allowed = CHILD_ENV_NAMES | (WINDOWS_ENV_NAMES if sys.platform == "win32" else frozenset())
    found = {
        name: value
        for name, value in source.items()
        if name.upper() in allowed or name.upper().startswith(LOCALE_PREFIX)
    }
    return found | dict(extra)


def bounded_lines(read: Callable[[int], bytes], max_line_bytes: int) -> Iterator[bytes]:
    """The lines ``read`` gives until it gives nothing (end of stream), without their newline,
    each cut at ``max_line_bytes``: the rest of an overlong line is read and dropped."""
    line = bytearray()
    while chunk := read(READ_CHUNK_BYTES):
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            room = max_line_bytes - len(line)
            if room > 0:
                line += chunk[start : min(stop, start + room)]
            if end < 0:
                break
            yield bytes(line)
            line.clear()
            start = end + 1
    if line:
        yield bytes(line)


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """How a child ended: its exit status and the stdout kept (``overflowed``: it wrote more
    than the cap and was stopped, so ``stdout`` is cut)."""

    returncode: int
    stdout: str
    overflowed: bool


def run_child(
    argv: Sequence[str],
    *,
    stdin: str,
    timeout: float,
    max_output: int,
    cwd: Path | None = None,
) -> Finished:
    """Run ``argv`` with the child environment, ``stdin`` as its input, stderr dropped, at
    most ``max_output`` bytes of stdout kept; ``subprocess.TimeoutExpired`` after
    ``timeout`` seconds (the child is killed first)."""
    with subprocess.Popen(  # noqa: S603 - the callers' own interpreter and script, no shell
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_environment(),
        cwd=cwd,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        kept = bytearray()
        over = threading.Event()
        reader = threading.Thread(target=_keep, args=(child, kept, max_output, over), daemon=True)
        reader.start()
        _feed(child.stdin, stdin.encode())
        try:
            returncode = child.wait(timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(STOP_SECONDS)
            raise
        finally:
            reader.join(STOP_SECONDS)
    return Finished(
        returncode=returncode,
        stdout=bytes(kept).decode("utf-8", "replace"),
        overflowed=over.is_set(),
    )


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write the child's input and close it; a child that exits without reading is not an
    error here (its exit status says what happened)."""
    try:
        pipe.write(data)
        pipe.close()
    except OSError:
        pass


def _keep(child: subprocess.Popen[bytes], kept: bytearray, cap: int, over: threading.Event) -> None:
    assert child.stdout is not None
    fd = child.stdout.fileno()
    while chunk := os.read(fd, READ_CHUNK_BYTES):
        if len(kept) + len(chunk) > cap:
            kept += chunk[: cap - len(kept)]
            over.set()
            child.kill()  # more than any answer it could give: it is stopped, not read on
            return
        kept += chunk
