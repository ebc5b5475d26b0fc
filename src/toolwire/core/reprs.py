"""Reprs that name and measure, never show: the pieces every such repr is built from.

Invariant: a value that holds tool content, arguments, artifacts, messages or a person's input
reprs as its kind, names, ids, enums, counts and sizes only. A repr goes where the run's data
must not: logs, tracebacks, debuggers. It is also paid for on the hot path: ``asyncio.run``
formats the repr of its task, result included, on the way out, so a repr printing a 200 KB tool
output would cost every run far more than the run itself.

Sizes are UTF-8 bytes, the unit of the content cap; ASCII text (the common case) is measured
in constant time. Names and ids come from models and tools too, so they are clipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized

# Enough to tell two names, ids or short error texts apart; a longer one is cut, since a model
# or tool chose it and it could be anything.
NAME_CHARS = 80


def utf8_size(text: str) -> int:
    """The UTF-8 size of ``text`` in bytes (a lone surrogate counts as the 3 it becomes)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def size(text: object) -> int | None:
    """``utf8_size``, or None for no text (so the field is left out of the repr)."""
    return utf8_size(text) if isinstance(text, str) else None


def count(items: Sized | None) -> int | None:
    """How many items, or None when there is no collection at all (not an empty one)."""
    return None if items is None else len(items)


def ident(value: object) -> str | None:
    """A name or id, quoted and clipped; None stays None."""
    if value is None:
        return None
    text = str(value)
    if len(text) > NAME_CHARS:
        text = text[:NAME_CHARS] + "…"
    return repr(text)


def shape(value: object) -> str:
    """The kind and size of a JSON-shaped value, never the value: ``dict(2 keys)``."""
    if value is None:
        return "None"
    if isinstance(value, str):
        return f"str({utf8_size(value)} bytes)"
    if isinstance(value, Mapping):
        return f"dict({len(value)} keys)"
    if isinstance(value, list | tuple):
        return f"list({len(value)} items)"
    return type(value).__name__  # a number can be an argument value too: its type only


def measured(key: str, value: object) -> tuple[str, object]:
    """A field as a repr part: text as ``key_bytes=N``, a list as ``key=N``, else its shape."""
    if isinstance(value, str):
        return f"{key}_bytes", utf8_size(value)
    if isinstance(value, list | tuple):
        return key, len(value)
    return key, shape(value)


def tagged(kind: str, /, **parts: object) -> str:
    """``<kind a=1 b=2>`` from already-safe parts; a part that is None is left out."""
    shown = " ".join(f"{key}={value}" for key, value in parts.items() if value is not None)
    return f"<{kind} {shown}>" if shown else f"<{kind}>"
