"""Steps written behind the run: a queue and one writer thread per store (group commit).

Recording a step costs the run a filter, an encode and one committed INSERT; a tool round
records three. Committing each alone would cost the run more than the round itself on SQLite.
Instead ``record_step`` hands the immutable step to a queue and returns; a writer thread
filters, encodes and inserts everything queued so far in one transaction. While the run is
quick the writer batches more; while it is slow each step is written as soon as it arrives.

Invariants:
- Steps are written in the order they were queued, so each run's sequence stays increasing.
- ``flush()`` returns once everything queued before it is committed (or failed): the store
  flushes before every read and before settling, so a process always reads its own writes.
- A step that cannot be written is reported, as a ``StoreError``, to that run's next call
  (``record_step`` or ``settle``), never to another run.
- ``close()`` flushes and stops the thread. A process killed outright loses at most the steps
  of the batch being written; everything committed before stays intact.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from toolwire.core.errors import StoreError
from toolwire.store.engine import reason

log = logging.getLogger("toolwire.store")

# How many queued steps one transaction takes at most: bounds a batch's memory and how long
# a reader waits behind it.
MAX_BATCH = 500
# How long the writer lets a batch gather after the first step arrives. A tool round records
# three steps within microseconds; writing them in one transaction instead of three saves two
# commits and the thread switches around them. A process killed outright can lose this much.
LINGER_SECONDS = 0.002

Encode = Callable[[str, int, Any], Mapping[str, Any]]
WriteBatch = Callable[[list[Mapping[str, Any]]], None]
_Item = tuple[str, int, Any]  # run id, sequence, step


class StepWriter:
    """Queues steps; a thread encodes and writes them in batches, in order."""

    def __init__(self, encode: Encode, write: WriteBatch, *, name: str = "toolwire-store") -> None:
        self._encode = encode
        self._write = write
        self._queue: list[_Item] = []
        self._queued = 0  # items ever queued
        self._done = 0  # items ever written or failed
        self._failures: dict[str, str] = {}
        self._closed = False
        self._cond = threading.Condition()
        self._hurry = threading.Event()  # set by flush and close: write now, do not linger
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, run_id: str, sequence: int, step: Any) -> None:
        """Queue one step of ``run_id``; raise first if an earlier one of it failed."""
        self.raise_failure(run_id)
        with self._cond:
            if self._closed:
                raise StoreError("the run store is closed")
            self._queue.append((run_id, sequence, step))
            self._queued += 1
            self._cond.notify_all()

    def flush(self) -> None:
        """Wait until everything queued so far is written (or has failed)."""
        self._hurry.set()
        with self._cond:
            target = self._queued
            self._cond.wait_for(lambda: self._done >= target or not self._thread.is_alive())

    def raise_failure(self, run_id: str) -> None:
        """Raise (once) the failure of a step of ``run_id``, if one happened."""
        with self._cond:
            failure = self._failures.pop(run_id, None)
        if failure is not None:
            raise StoreError(failure)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._hurry.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._closed)
                if not self._queue:
                    return  # closed and drained
            self._hurry.wait(LINGER_SECONDS)  # let a batch gather, unless someone waits for it
            with self._cond:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                if not self._queue:
                    self._hurry.clear()
            self._write_batch(batch)
            with self._cond:
                self._done += len(batch)
                self._cond.notify_all()

    def _write_batch(self, batch: list[_Item]) -> None:
        rows: list[tuple[_Item, Mapping[str, Any]]] = []
        for item in batch:
            try:
                rows.append((item, self._encode(*item)))
            except Exception as exc:
                self._fail(item, exc)
        try:
            if rows:
                self._write([row for _, row in rows])
        except Exception:
            # One bad row rolls the whole batch back: write them one by one to find it, so
            # that other runs' steps are not lost with it.
            for item, row in rows:
                self._write_one(item, row)

    def _write_one(self, item: _Item, row: Mapping[str, Any]) -> None:
        try:
            self._write([row])
        except Exception as exc:
            self._fail(item, exc)

    def _fail(self, item: _Item, exc: Exception) -> None:
        run_id, sequence, _ = item
        log.error("run %s: step %s could not be stored", run_id, sequence, exc_info=exc)
        message = f"the run store could not record step {sequence} of run {run_id}: {reason(exc)}"
        with self._cond:
            self._failures.setdefault(run_id, message)
