"""A document's title and plain text, from Markdown, plain text or HTML bytes.

HTML is reduced to its text with the standard library's ``html.parser``: markup, comments and
the contents of ``script``, ``style``, ``template``, ``noscript``, ``svg`` and ``head`` (bar
its ``title``) are dropped, character references decoded, and block elements end a line. No
markup survives, so nothing in a snippet can be read as HTML by whoever shows it. The text is
not yet masked: the index masks it (``toolwire.core.redact``) before storing it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import PurePosixPath

from toolwire.core.personal import clipped

MARKDOWN = frozenset({".md", ".markdown"})
PLAIN = frozenset({".txt", ".text"})
HTML = frozenset({".html", ".htm"})
SUFFIXES = MARKDOWN | PLAIN | HTML
TITLE_CHARS = 200  # a heading, not a paragraph
_HIDDEN = frozenset({"script", "style", "template", "noscript", "svg", "head"})
_BLOCKS = frozenset(
    {
        "p", "div", "br", "li", "ul", "ol", "tr", "td", "th", "table", "section", "article",
        "header", "footer", "nav", "main", "aside", "pre", "blockquote", "hr", "dt", "dd",
        "h1", "h2", "h3", "h4", "h5", "h6", "title", "figcaption", "summary", "details",
    }
)  # fmt: skip
_ATX = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_SPACES = re.compile(r"[ \t\f\v\r]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")


@dataclass(frozen=True, slots=True)
class Extracted:
    """What the index stores of one document: a title and its plain text."""

    title: str
    text: str


def extract(path: PurePosixPath, data: bytes) -> Extracted:
    """The title and text of a document whose suffix is one of ``SUFFIXES``."""
    text = data.decode("utf-8", "replace").replace("\x00", "")
    suffix = path.suffix.lower()
    if suffix in HTML:
        return _html(text, path)
    if suffix in MARKDOWN:
        return Extracted(_markdown_title(text) or path.stem, text)
    return Extracted(_first_line(text) or path.stem, text)


def _clip(title: str) -> str:
    title = " ".join(title.split())
    return clipped(title, TITLE_CHARS)


def _markdown_title(text: str) -> str:
    lines = text.splitlines()
    for number, line in enumerate(lines):
        heading = _ATX.match(line)
        if heading:
            return _clip(heading.group(1))
        following = lines[number + 1] if number + 1 < len(lines) else ""
        if line.strip() and re.fullmatch(r"\s{0,3}(=+|-+)\s*", following):
            return _clip(line)  # a setext heading: the line above === or ---
    return ""


def _first_line(text: str) -> str:
    return next((_clip(line) for line in text.splitlines() if line.strip()), "")


def _html(text: str, path: PurePosixPath) -> Extracted:
    parser = _TextParser()
    parser.feed(text)
    parser.close()
    body = _BLANK_LINES.sub("\n\n", _SPACES.sub(" ", "".join(parser.parts))).strip()
    title = _clip(parser.title or parser.heading) or path.stem
    return Extracted(title, body)


class _TextParser(HTMLParser):
    """Collects the visible text of a page, its ``title`` and its first ``h1``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self.heading = ""
        self._hidden: list[str] = []  # open hidden elements, innermost last
        self._in: str | None = None  # "title" or "h1" while collecting it

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden.append(tag)
        if tag == "title" or (tag == "h1" and not self.heading):
            self._in = tag
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._hidden:
            while self._hidden and self._hidden.pop() != tag:
                pass
        if tag == self._in:
            self._in = None
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in == "title":
            self.title += data
        elif self._in == "h1":
            self.heading += data
        if not self._hidden:
            self.parts.append(data)
