"""Which process owns a running run, and whether that process is still alive.

A run left ``running`` by a process that was killed can never settle itself, so the next open
of the store marks it ``interrupted``. Several live processes may share one database (the
inspector and a command-line run, say), so a run is only marked when its owner is provably
dead: it was started on this host (the same host name and PID namespace) and its process id
no longer exists, is a zombie, or now belongs to a process started at another time (PID
reuse, detected from the start time in ``/proc/PID/stat`` where there is one).

Runs owned by another host are left alone: judging them would need a heartbeat that a
process renews even while it waits minutes on a provider, plus a timeout that tolerates
clock skew between hosts. Those runs can still be cancelled or purged.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

_PROC = Path("/proc")
# Fields of /proc/PID/stat after the parenthesised command: state is the first (field 3), the
# start time in clock ticks since boot the 20th (field 22).
_STATE_FIELD = 0
_START_FIELD = 19


@dataclass(frozen=True, slots=True, kw_only=True)
class Owner:
    """The process running a run: its host identity, process id and start time."""

    host: str
    pid: int
    started: str | None


def this_process() -> Owner:
    pid = os.getpid()
    return Owner(host=host_identity(), pid=pid, started=_stat(pid)[1])


def host_identity() -> str:
    """The host name, with the PID namespace when known (containers share host names)."""
    name = socket.gethostname()
    try:
        namespace = os.stat(_PROC / "self" / "ns" / "pid").st_ino
    except OSError:
        return name
    return f"{name}/pidns:{namespace}"


def is_dead(owner: Owner) -> bool:
    """True only when ``owner`` ran on this host and its process is certainly gone."""
    if owner.host != host_identity() or owner.pid <= 0:
        return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists, under another user
    state, started = _stat(owner.pid)
    if state == "Z":
        return True
    return owner.started is not None and started is not None and started != owner.started


def _stat(pid: int) -> tuple[str | None, str | None]:
    """State and start time of ``pid`` from /proc, or Nones where /proc is not available."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None, None
    fields = text.rpartition(")")[2].split()
    if len(fields) <= _START_FIELD:
        return None, None
    return fields[_STATE_FIELD], fields[_START_FIELD]
