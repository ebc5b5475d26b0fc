"""A file a built-in could not check or index, and why: the per-file time budget and the texts
a model reads about such a file.

A tool that works over many files (``check_config`` over a folder, the documents index over
its documents) takes each file on its own: a file that is too large, nested too deeply, too slow
to read or that breaks its reader is reported as ``not checked: <reason>`` (``not indexed`` for
the documents index) and the other files still answer. The reasons are fixed phrases with a
limit in them, never the file's content nor an exception's message (those go to the operator's
log).

A budget is checked between the stages of reading a file and inside the loops this package
writes (composing YAML, building values, looking up lines); a stage that cannot be interrupted
(a C parser, a regular expression over a whole text) is bounded by the size cap that is checked
before it starts, so one file costs at most its budget plus one such stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# One file's share of a call: a hand-written settings file or a manual is read in milliseconds;
# seconds mean it is data, and a model's turn should not wait on it.
FILE_SECONDS = 3.0
# One call over a folder: past this the files left are reported, not read. A model's turn
# answers within it even when every file of the folder takes its whole share.
CALL_SECONDS = 20.0
# Levels of nesting read in a structured file: validators and line finders walk a document
# level by level (parsers recurse on it), and real settings are rarely deeper than five.
MAX_NESTING = 64
UNREADABLE = "cannot be read"
BROKE_READER = "its reader failed on it"  # an unexpected error, in the operator's log
SCHEMA_TOO_DEEP = "nested too deeply for its schema to be checked"  # a schema that refers to itself
CALL_SPENT = "the call's time was spent on the files before it"


class NotChecked(Exception):
    """Raised while reading one file that cannot be checked; ``reason`` is a fixed phrase."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Budget:
    """A time budget from now on; ``check`` raises :class:`NotChecked` once it is spent."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._ends = clock() + seconds

    @property
    def spent(self) -> bool:
        return self._clock() >= self._ends

    def check(self) -> None:
        if self.spent:
            raise NotChecked(slower_than(self.seconds))


def larger_than(cap: int) -> str:
    return f"larger than {cap} bytes"


def nested_deeper_than(levels: int) -> str:
    return f"nested more than {levels} levels deep"


def more_values_than(values: int) -> str:
    return f"holds more than {values} values"


def slower_than(seconds: float) -> str:
    return f"took longer than {seconds:g} seconds to read"


def not_checked(reason: str) -> str:
    """What a model reads about a file a checking tool left out."""
    return f"not checked: {reason}"


def not_read(what: str, reason: str) -> str:
    """What a model reads about the one file it asked for, when it cannot be read."""
    return f"{what} was not read: {reason}."


def not_indexed(reason: str) -> str:
    """What a model reads about a document the index left out."""
    return f"not indexed: {reason}"
