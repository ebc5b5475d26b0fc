"""The cancel watcher: no query while nothing is watched, flags seen within a poll, and a
failing read does not stop it."""

from __future__ import annotations

import threading
import time
from collections.abc import Collection

from toolwire.store.cancels import CancelWatch


class Flags:
    def __init__(self) -> None:
        self.cancelled: set[str] = set()
        self.reads: list[list[str]] = []
        self.fail = False
        self.lock = threading.Lock()

    def __call__(self, run_ids: Collection[str]) -> Collection[str]:
        with self.lock:
            self.reads.append(sorted(run_ids))
            if self.fail:
                raise OSError("database gone")
            return self.cancelled & set(run_ids)


def eventually(check: object, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(0.005)
    return False


def test_nothing_is_read_while_no_run_is_watched() -> None:
    flags = Flags()
    watch = CancelWatch(flags, interval=0.001)
    time.sleep(0.05)
    watch.close()
    assert flags.reads == []


def test_a_cancel_of_a_watched_run_is_seen_and_others_are_not_read() -> None:
    flags = Flags()
    watch = CancelWatch(flags, interval=0.001)
    try:
        watch.watch("a")
        assert not watch.cancelled("a")
        flags.cancelled = {"a", "b"}
        assert eventually(lambda: watch.cancelled("a"))
        assert not watch.cancelled("b")
        assert all(ids == ["a"] for ids in flags.reads)
    finally:
        watch.close()


def test_a_cancel_made_here_is_seen_at_once_and_forgotten_with_the_run() -> None:
    watch = CancelWatch(Flags(), interval=10)
    try:
        watch.watch("a")
        watch.mark("a")
        assert watch.cancelled("a")
        watch.forget("a")
        assert not watch.cancelled("a")
    finally:
        watch.close()


def test_a_failing_read_is_retried() -> None:
    flags = Flags()
    flags.fail = True
    watch = CancelWatch(flags, interval=0.001)
    try:
        watch.watch("a")
        assert eventually(lambda: len(flags.reads) >= 2)
        flags.cancelled, flags.fail = {"a"}, False
        assert eventually(lambda: watch.cancelled("a"))
    finally:
        watch.close()


def test_a_listener_hears_of_a_polled_cancel_once_on_the_watch_thread() -> None:
    flags = Flags()
    watch = CancelWatch(flags, interval=0.001)
    heard: list[str] = []
    try:
        watch.watch("a")
        watch.watch("b")
        watch.on_cancel("a", lambda: heard.append(threading.current_thread().name))
        watch.on_cancel("b", lambda: heard.append("b"))
        flags.cancelled = {"a"}
        assert eventually(lambda: watch.cancelled("a") and heard)
        time.sleep(0.02)  # more polls: still heard once, and b not at all
        assert heard == ["toolwire-cancels"]
    finally:
        watch.close()


def test_a_listener_hears_at_once_of_a_cancel_made_here_or_already_seen() -> None:
    watch = CancelWatch(Flags(), interval=10)
    heard: list[str] = []
    try:
        watch.watch("a")
        watch.on_cancel("a", lambda: heard.append("marked"))
        watch.mark("a")
        assert heard == ["marked"]
        watch.on_cancel("a", lambda: heard.append("late"))
        assert heard == ["marked", "late"]
    finally:
        watch.close()


def test_a_listener_that_stopped_or_whose_run_was_forgotten_hears_nothing() -> None:
    watch = CancelWatch(Flags(), interval=10)
    heard: list[str] = []
    try:
        watch.watch("a")
        stop = watch.on_cancel("a", lambda: heard.append("a"))
        stop()
        stop()  # twice is harmless
        watch.mark("a")
        watch.forget("a")
        watch.watch("b")
        watch.on_cancel("b", lambda: heard.append("b"))
        watch.forget("b")
        watch.mark("b")
        assert heard == []
    finally:
        watch.close()


def test_a_listener_that_raises_stops_neither_the_others_nor_the_watch() -> None:
    flags = Flags()
    watch = CancelWatch(flags, interval=0.001)
    heard: list[str] = []

    def fail() -> None:
        raise RuntimeError("listener broke")

    try:
        for run_id in ("a", "b"):
            watch.watch(run_id)
        watch.on_cancel("a", fail)
        watch.on_cancel("a", lambda: heard.append("a"))
        flags.cancelled = {"a"}
        assert eventually(lambda: heard == ["a"])
        watch.on_cancel("b", lambda: heard.append("b"))
        flags.cancelled = {"a", "b"}
        assert eventually(lambda: heard == ["a", "b"])
    finally:
        watch.close()
