"""A search hit's snippet, made whole around personal data.

SQLite FTS5 cuts a snippet at word boundaries and marks the matched words, and to it an e-mail
address is three words (``ann``, ``example``, ``com``): a window may start or end inside one
(``…example.com``, ``Write to ann…``), and a mark may split one (``**ann**@example.com``).
Either leaves a piece of personal data that no mask recognises any more, neither the seam's for
a zone that reads it masked nor the redactor's in a copy stored at ``redacted``.

So the index marks with control characters (``OPEN``, ``CLOSE``, ``CUT``), and :func:`whole`
finds the snippet's text in its document (every place it stands, as FTS5 does not say which it
took), moves a window end that falls inside a personal-data shape
(:func:`toolwire.core.personal.spans`) at any of them out of it, drops the marks on a shape, and
only then writes the marks as the model reads them (``**`` and ``…``). A snippet whose text is
not found in its document (FTS5's own always is) keeps its words but loses its marks.
"""

from __future__ import annotations

from toolwire.core.personal import SHAPE_REACH, before_shapes, spans

OPEN, CLOSE, CUT = "\x01", "\x02", "\x03"  # never in indexed text: the index removes them
MARKS = str.maketrans("", "", OPEN + CLOSE + CUT)
HIGHLIGHT = "**"  # around matched words: Markdown bold
ELLIPSIS = "…"
MAX_PLACES = 20  # the same twenty words more often than this: a template, shaped alike each time


def whole(snippet: str, body: str) -> str:
    """``snippet`` (FTS5's, marked with ``OPEN``, ``CLOSE`` and ``CUT``) with no personal-data
    shape cut at either end or split by a mark, its marks written as ``**`` and ``…``."""
    cut_before, cut_after = snippet.startswith(CUT), snippet.endswith(CUT)
    plain, marked = _unmarked(snippet.strip(CUT))
    # Every place the text stands in its document (FTS5 does not say which one it took), each
    # with the shapes around it, in the text's own offsets.
    around = [_shapes_at(body, place, len(plain)) for place in _places(body, plain)]
    if not around:
        return _written(cut_before, plain, [], cut_after)
    start = max(_after_shapes(found, 0) for found in around)
    end = max(start, min(before_shapes(found, len(plain)) for found in around))
    kept = [
        (a - start, b - start)
        for a, b in marked
        if a >= start and b <= end and not any(_overlaps(found, a, b) for found in around)
    ]
    return _written(cut_before or start > 0, plain[start:end], kept, cut_after or end < len(plain))


def _places(body: str, plain: str) -> list[int]:
    """Where ``plain`` stands in ``body``: at most ``MAX_PLACES`` places."""
    places: list[int] = []
    place = body.find(plain) if plain else -1
    while place >= 0 and len(places) < MAX_PLACES:
        places.append(place)
        place = body.find(plain, place + 1)
    return places


def _shapes_at(body: str, place: int, length: int) -> list[tuple[int, int]]:
    """The shapes in and around ``body[place : place + length]``, offset to ``place``."""
    low = max(0, place - SHAPE_REACH)
    window = body[low : place + length + SHAPE_REACH]
    return [(a + low - place, b + low - place) for a, b in spans(window)]


def _unmarked(snippet: str) -> tuple[str, list[tuple[int, int]]]:
    """The snippet's text without marks, and each marked stretch as (start, end) in it."""
    text: list[str] = []
    marked: list[tuple[int, int]] = []
    opened = 0
    length = 0
    for char in snippet:
        if char == OPEN:
            opened = length
        elif char == CLOSE:
            marked.append((opened, length))
        elif char != CUT:
            text.append(char)
            length += 1
    return "".join(text), marked


def _after_shapes(found: list[tuple[int, int]], place: int) -> int:
    for start, end in found:
        if start < place < end:
            place = end
    return place


def _overlaps(found: list[tuple[int, int]], start: int, end: int) -> bool:
    return any(a < end and start < b for a, b in found)


def _written(before: bool, text: str, marked: list[tuple[int, int]], after: bool) -> str:
    parts = [ELLIPSIS] if before else []
    done = 0
    for start, end in marked:
        parts += [text[done:start], HIGHLIGHT, text[start:end], HIGHLIGHT]
        done = end
    parts.append(text[done:])
    if after:
        parts.append(ELLIPSIS)
    return "".join(parts)
