"""UTF-8 coercion: every string that leaves a seam is valid UTF-8.

Python strings can hold lone surrogates (from ``surrogateescape`` decoding, ``json.loads`` of
``"\\ud800"``, or a tool that builds them), and bytes can hold any sequence. Both are replaced
with U+FFFD, the Unicode replacement character, never dropped silently.
"""

from __future__ import annotations

import re
from pathlib import Path

from toolwire.core.errors import ConfigError

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def coerce_utf8(value: str | bytes) -> str:
    """Return ``value`` as a string that encodes to valid UTF-8.

    Bytes are decoded with invalid sequences replaced; lone surrogates in a string are replaced.
    A valid string is returned as the same object (the common case costs one scan).
    """
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(REPLACEMENT, value)
    return value


def storable(value: str) -> str:
    """``value`` fit for a database text column: valid UTF-8 and no NUL (PostgreSQL refuses it)."""
    return coerce_utf8(value).replace("\x00", REPLACEMENT)


def read_capped(path: Path, cap: int, what: str) -> bytes:
    """A small file's bytes; ``ConfigError`` names ``what`` and the file if it is unreadable
    or larger than ``cap`` bytes (hand-written files are small; a big one is a mistake)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(raw) > cap:
        raise ConfigError(f"{what} {path} is larger than {cap} bytes")
    return raw


MAX_NAME_CHARS = 128  # a run's or a workspace's name: a few words, on one line


def check_name(name: object, what: str) -> str:
    """``name`` when it is a name (1 to ``MAX_NAME_CHARS`` printable characters, not only
    spaces); ``ValueError`` naming ``what`` otherwise."""
    if (
        not isinstance(name, str)
        or not name.strip()
        or len(name) > MAX_NAME_CHARS
        or not name.isprintable()
    ):
        raise ValueError(f"{what} must be 1 to {MAX_NAME_CHARS} printable characters on one line")
    return name
