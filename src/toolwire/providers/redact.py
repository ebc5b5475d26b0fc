"""Body excerpts for provider errors: short, one line, with every secret masked.

Invariant: an excerpt never holds the configured key, nor anything shaped like a key or token,
and is at most ``EXCERPT_CHARS`` characters. Masking runs over the whole text *before* it is
clipped, so a key cannot survive as a fragment at the cut.
"""

from __future__ import annotations

import re

EXCERPT_CHARS = 200  # enough to read an API's error message; short enough for one log line
MASK = "[redacted]"

# Key and token shapes: provider keys (sk-..., AIza...), bearer credentials, JWTs, URL
# credentials, and any long unbroken run of key alphabet (hex or base64 secrets).
_SECRET_SHAPES = re.compile(
    r"(?i:bearer)\s+\S+"
    r"|eyJ[\w-]+\.[\w-]+\.[\w-]*"
    r"|\b(?:sk|pk|rk)-[\w-]{6,}"
    r"|\bAIza[\w-]{10,}"
    r"|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"
    r"|[A-Za-z0-9_\-+/=]{32,}"
)
_WHITESPACE = re.compile(r"\s+")


def redact(text: str, secret: str | None = None) -> str:
    """``text`` with ``secret`` and every key-shaped run replaced by ``MASK``."""
    if secret:
        text = text.replace(secret, MASK)
    return _SECRET_SHAPES.sub(MASK, text)


def excerpt(text: str, secret: str | None = None) -> str:
    """A redacted, single-line excerpt of ``text``, at most ``EXCERPT_CHARS`` characters."""
    flat = _WHITESPACE.sub(" ", redact(text, secret)).strip()
    if len(flat) <= EXCERPT_CHARS:
        return flat
    return flat[: EXCERPT_CHARS - 1] + "…"
