"""Cancel flags of this process's running runs, read from the database off the event loop.

A run checks for a cancel at every step boundary, on whatever thread runs it: often the event
loop of a server, which must never wait on the database. So the check only reads a set, and a
watcher thread polls the flags of the runs it watches every ``POLL_SECONDS`` (one query for
all of them, and none while no run is watched). A cancel made through this process's store is
in the set at once; one made by another process is seen within a poll.

A running segment need not wait for its next step boundary: ``on_cancel`` tells it the moment
the flag is seen (at once for a run already cancelled), so it can abort an in-flight call.
Each listener is called at most once, on the thread that saw the flag, and never while the
watch's lock is held; a listener that raises is logged and does not stop the watch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable

log = logging.getLogger("toolwire.store")

# How stale another process's cancel may be when a run looks at it. A round that matters (a
# provider call) takes far longer; a shorter poll would only load the database.
POLL_SECONDS = 0.02

ReadFlags = Callable[[Collection[str]], Collection[str]]
Notify = Callable[[], object]  # what it returns is not looked at


class CancelWatch:
    """Which watched runs were cancelled; ``read_flags`` returns the cancelled ids it is given."""

    def __init__(self, read_flags: ReadFlags, *, interval: float = POLL_SECONDS) -> None:
        self._read_flags = read_flags
        self._interval = interval
        self._watched: set[str] = set()
        self._cancelled: set[str] = set()
        self._listeners: dict[str, list[Notify]] = {}
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
            self._listeners.pop(run_id, None)

    def mark(self, run_id: str) -> None:
        """A cancel this process made: seen at once."""
        with self._cond:
            self._cancelled.add(run_id)
            listeners = self._listeners.pop(run_id, [])
        _call(listeners)

    def cancelled(self, run_id: str) -> bool:
        with self._cond:
            return run_id in self._cancelled

    def on_cancel(self, run_id: str, notify: Notify) -> Callable[[], None]:
        """Call ``notify`` once the watched run ``run_id`` is seen cancelled (now, if it is);
        returns what stops listening."""
        with self._cond:
            already = run_id in self._cancelled
            if not already:
                self._listeners.setdefault(run_id, []).append(notify)
        if already:
            _call([notify])
        return lambda: self._stop_listening(run_id, notify)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    def _stop_listening(self, run_id: str, notify: Notify) -> None:
        with self._cond:
            listeners = self._listeners.get(run_id, [])
            if notify in listeners:
                listeners.remove(notify)
            if not listeners:
                self._listeners.pop(run_id, None)

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
            seen = flagged & self._watched
            self._cancelled |= seen
            listeners = [n for run_id in seen for n in self._listeners.pop(run_id, [])]
        _call(listeners)


def _call(listeners: Iterable[Notify]) -> None:
    for notify in listeners:
        try:
            notify()
        except Exception:
            log.exception("a cancel listener failed")
