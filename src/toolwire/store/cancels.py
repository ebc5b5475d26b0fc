"""Cancel flags of this process's running runs, read from the database off the event loop.

A run checks for a cancel at every step boundary, on whatever thread runs it: often the event
loop of a server, which must never wait on the database. So the check only reads a set, and a
watcher thread polls the flags of the runs it watches every ``POLL_SECONDS`` (one query for
all of them, and none while no run is watched). A cancel made through this process's store is
in the set at once; one made by another process is seen within a poll.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection

log = logging.getLogger("toolwire.store")

# How stale another process's cancel may be when a run looks at it. A round that matters (a
# provider call) takes far longer; a shorter poll would only load the database.
POLL_SECONDS = 0.02

ReadFlags = Callable[[Collection[str]], Collection[str]]


class CancelWatch:
    """Which watched runs were cancelled; ``read_flags`` returns the cancelled ids it is given."""

    def __init__(self, read_flags: ReadFlags, *, interval: float = POLL_SECONDS) -> None:
        self._read_flags = read_flags
        self._interval = interval
        self._watched: set[str] = set()
        self._cancelled: set[str] = set()
        self._closed = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="toolwire-cancels", daemon=True)
        self._thread.start()

    def watch(self, run_id: str) -> None:
        with self._cond:
            self._watched.add(run_id)
            self._cond.notify_all()

    def forget(self, run_id: str) -> None:
        with self._cond:
            self._watched.discard(run_id)
            self._cancelled.discard(run_id)

    def mark(self, run_id: str) -> None:
        """A cancel this process made: seen at once."""
        with self._cond:
            self._cancelled.add(run_id)

    def cancelled(self, run_id: str) -> bool:
        with self._cond:
            return run_id in self._cancelled

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or bool(self._watched - self._cancelled))
                if self._closed:
                    return
                pending = list(self._watched - self._cancelled)
            self._poll(pending)
            with self._cond:
                self._cond.wait_for(lambda: self._closed, timeout=self._interval)

    def _poll(self, run_ids: list[str]) -> None:
        try:
            flagged = set(self._read_flags(run_ids))
        except Exception:
            log.warning("the cancel flags could not be read; trying again", exc_info=True)
            return
        with self._cond:
            self._cancelled |= flagged & self._watched
