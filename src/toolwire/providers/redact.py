"""Body excerpts for provider errors: short, one line, with every secret masked.

Invariant: an excerpt never holds the configured key, nor anything the redactor's catalogue
(:mod:`toolwire.core.redact`, the one list of secret shapes) recognises, nor personal data
(:mod:`toolwire.core.personal`: an operator's log is no place for it), nor a long opaque run of
key alphabet, and is at most ``EXCERPT_CHARS`` characters. Masking runs over the whole text
*before* it is clipped, so a key cannot survive as a fragment at the cut. An endpoint's URL
(``url_excerpt``) is masked segment by segment: its path is ours, built of short words.
"""

from __future__ import annotations

import re

from toolwire.core.personal import mask_personal
from toolwire.core.redact import mask_opaque_runs, mask_secrets

EXCERPT_CHARS = 200  # enough to read an API's error message; short enough for one log line
MASK = "[redacted]"  # what the configured key becomes; catalogued shapes keep their prefix
_WHITESPACE = re.compile(r"\s+")


def redact(text: str, secret: str | None = None) -> str:
    """``text`` with ``secret``, every catalogued secret shape and every opaque run masked."""
    if secret:
        text = text.replace(secret, MASK)
    return mask_opaque_runs(mask_personal(mask_secrets(text)), MASK)


def excerpt(text: str, secret: str | None = None) -> str:
    """A redacted, single-line excerpt of ``text``, at most ``EXCERPT_CHARS`` characters."""
    flat = _WHITESPACE.sub(" ", redact(text, secret)).strip()
    if len(flat) <= EXCERPT_CHARS:
        return flat
    return flat[: EXCERPT_CHARS - 1] + "…"


def url_excerpt(url: str, secret: str | None = None) -> str:
    """An endpoint as an error shows it: each path segment redacted on its own (a key in a
    segment is still masked, but a long path of short words, Azure's and Vertex's, stays
    readable), then clipped like any excerpt."""
    if secret:
        url = url.replace(secret, MASK)  # whole first: a key may hold a slash
    flat = _WHITESPACE.sub(" ", "/".join(redact(part) for part in url.split("/")))
    if len(flat) <= EXCERPT_CHARS:
        return flat.strip()
    return flat[: EXCERPT_CHARS - 1].strip() + "…"
