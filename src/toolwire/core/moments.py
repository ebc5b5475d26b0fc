"""Durations and moments as people write them: the one parser every ``--since``,
``--until`` and ``--older-than`` (and the inspector's audit filter) reads.

A duration is a whole number and a unit, counted back from now: ``90s``, ``30m``, ``12h``,
``7d``, ``2w``. A moment is a duration or an ISO 8601 date or time (``2024-05-01``,
``2024-05-01T12:00:00+02:00``), UTC when it names no offset. A bare number has no unit, so it
is refused with the spelling that would work, never guessed at.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_MAX_DIGITS = 6  # of a duration: a million weeks reaches past any date
_DURATION = re.compile(rf"(\d{{1,{_MAX_DIGITS}}})([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_SHOWN_CHARS = 40  # of a value quoted back in an error

DURATIONS = "30m, 12h, 7d, 2w"
WHEN = (
    f"a duration ({DURATIONS}) or an ISO 8601 date or time (2024-05-01, 2024-05-01T12:00:00+02:00)"
)


def parse_moment(text: str, now: datetime | None = None) -> datetime:
    """The moment ``text`` names: a duration back from ``now``, or an ISO 8601 date or time.
    ``ValueError`` with a message to show for anything else."""
    text = text.strip()
    ago = _DURATION.fullmatch(text)
    if ago is not None:
        try:
            return (now or datetime.now(UTC)) - timedelta(**{_UNITS[ago[2]]: int(ago[1])})
        except OverflowError:
            raise ValueError(f"{text!r} reaches back before the year 1") from None
    if text.isdigit() and len(text) <= _MAX_DIGITS:
        raise ValueError(f"{_shown(text)} has no unit: write {int(text)}d for days ({DURATIONS})")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{_shown(text)} is neither a duration ({DURATIONS}) nor an ISO 8601 date or time"
        ) from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…")
