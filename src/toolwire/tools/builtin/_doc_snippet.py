"""A search hit's snippet, made whole around personal data.

SQLite FTS5 cuts a snippet at word boundaries and marks the matched words, and to it an e-mail
address is three words (``ann``, ``example``, ``com``): a window may start or end inside one
(``…example.com``, ``Write to ann…``), and a mark may split one (``**ann**@example.com``).
Either leaves a piece of personal data that no mask recognises any more, neither the seam's for
a zone that reads it masked nor the redactor's in a copy stored at ``redacted``.

So the index marks with control characters (``OPEN``, ``CLOSE``, ``CUT``), and :func:`whole`
finds the snippet's text in its document, moves a window end that falls inside a personal-data
shape (:func:`toolwire.core.personal.spans`) out of it, drops the marks on a shape, and only then
writes the marks as the model reads them (``**`` and ``…``). A snippet whose text is not found in
its document (it cannot happen with FTS5's own snippets) keeps its words but loses its marks.
"""

from __future__ import annotations

from toolwire.core.personal import SHAPE_REACH, before_shapes, spans

OPEN, CLOSE, CUT = "\x01", "\x02", "\x03"  # never in indexed text: the index removes them
MARKS = str.maketrans("", "", OPEN + CLOSE + CUT)
HIGHLIGHT = "**"  # around matched words: Markdown bold
ELLIPSIS = "…"


def whole(snippet: str, body: str) -> str:
    """``snippet`` (FTS5's, marked with ``OPEN``, ``CLOSE`` and ``CUT``) with no personal-data
    shape cut at either end or split by a mark, its marks written as ``**`` and ``…``."""
    cut_before, cut_after = snippet.startswith(CUT), snippet.endswith(CUT)
    plain, marked = _unmarked(snippet.strip(CUT))
    place = body.find(plain) if plain else -1
    if place < 0:
        return _written(cut_before, plain, [], cut_after)
    low = max(0, place - SHAPE_REACH)
    found = [(a + low, b + low) for a, b in spans(body[low : place + len(plain) + SHAPE_REACH])]
    start = _after_shapes(found, place)
    end = max(start, before_shapes(found, place + len(plain)))
    kept = [
        (a + place - start, b + place - start)
        for a, b in marked
        if place + a >= start and place + b <= end and not _overlaps(found, place + a, place + b)
    ]
    moved_start, moved_end = start > place, end < place + len(plain)
    return _written(cut_before or moved_start, body[start:end], kept, cut_after or moved_end)


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
