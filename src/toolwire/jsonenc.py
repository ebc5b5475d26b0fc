"""The one canonical JSON encoder every sink uses: the live stream, the API and the store.

Rules, the same everywhere so that whatever the bounder accepted cannot fail later:
- no NaN or infinity (``allow_nan=False``);
- compact separators, non-ASCII kept as UTF-8;
- output is always valid UTF-8: lone surrogates become U+FFFD.

Artifact byte budgets are measured in this encoding.
"""

from __future__ import annotations

import json
from typing import Any

from toolwire.text import coerce_utf8

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
