"""The one canonical JSON encoder every sink uses: the live stream, the API and the store.

Rules, the same everywhere so that whatever the bounder accepted cannot fail later:
- no NaN or infinity (``allow_nan=False``);
- compact separators, non-ASCII kept as UTF-8;
- output is always valid UTF-8: lone surrogates become U+FFFD.

Artifact byte budgets are measured in this encoding. Sinks that must never fail (the live
stream, the API, the store) use ``sink_dumps``: what the strict rules refuse (a NaN in a model's
raw body, an odd type) is written as a string instead of losing the whole record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from toolwire.core.text import coerce_utf8

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> str:
    """Encode ``value`` as canonical JSON text. Raises ``ValueError``/``TypeError`` if it can't."""
    return coerce_utf8(_ENCODER.encode(value))


def dumps_bytes(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON, UTF-8 bytes."""
    return dumps(value).encode("utf-8")


def loads(text: str | bytes) -> Any:
    """Decode JSON text; the inverse of :func:`dumps`."""
    return json.loads(text)


def sink_dumps(value: Any) -> str:
    """Canonical JSON of ``value``, or of ``printable(value)`` when the strict rules refuse it."""
    try:
        return dumps(value)
    except (TypeError, ValueError, RecursionError):
        return dumps(printable(value))


def sink_dumps_bytes(value: Any) -> bytes:
    return sink_dumps(value).encode("utf-8")


def printable(value: Any, depth: int = 0) -> Any:
    """``value`` with non-finite numbers, odd types and keys, and deep nesting made strings."""
    if depth > _PRINTABLE_DEPTH:
        return "…"
    if isinstance(value, Mapping):
        return {str(k): printable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [printable(v, depth + 1) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)


_PRINTABLE_DEPTH = 100  # below the interpreter's recursion limit, far above any real record
