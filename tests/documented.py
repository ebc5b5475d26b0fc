"""The pages a reader reads (the README and every page under ``docs/``) and their code blocks.

One reader of the pages for every test that runs what they say: the ``sh`` commands
(``test_readme_commands``), the Python, TOML, YAML, JSON and INI blocks (``test_readme``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced code block: its page, its language and its text."""

    page: Path
    language: str
    code: str

    def __str__(self) -> str:  # the test's id: where the block is, and how it starts
        first = self.code.strip().splitlines()[0] if self.code.strip() else ""
        return f"{self.page.relative_to(ROOT)}:{first[:60]}"


def pages() -> list[Path]:
    """The README, then the docs' pages in name order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def blocks(language: str | None = None) -> list[Block]:
    """Every fenced block of every page (of ``language`` only, when given), in page order."""
    found = [
        Block(page, match.group(1), match.group(2))
        for page in pages()
        for match in _FENCE.finditer(page.read_text())
    ]
    return [b for b in found if language is None or b.language == language]


def page(name: str) -> Path:
    """A docs page by its file name (``running.md``)."""
    path = DOCS / name
    assert path.is_file(), path
    return path


def section(path: Path, title: str) -> str:
    """The ``## title`` section of a page, up to the next ``##`` heading."""
    text = path.read_text()
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]
