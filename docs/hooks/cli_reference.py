"""The command-line reference, generated from the Typer application as the docs build.

``cli.md`` holds the marker ``<!-- cli-reference -->``; this mkdocs hook replaces it with one
section per command, walked from the same Click command tree ``toolwire`` runs
(``toolwire.cli.app.command()``): its usage, its help and a table of its arguments and options,
each with the text and default ``--help`` shows. A command added to the CLI is documented the
moment it is registered; a hidden command or option is left out, as ``--help`` leaves it out.
"""

from __future__ import annotations

import html
import re
from typing import Any

MARKER = "<!-- cli-reference -->"
_RST_CODE = re.compile(r"``([^`]+)``")


def on_page_markdown(markdown: str, **_: Any) -> str:
    """The mkdocs hook: fill the marker, wherever it stands."""
    return markdown.replace(MARKER, reference()) if MARKER in markdown else markdown


def reference() -> str:
    """The whole command line as Markdown, one section per command, in ``--help``'s order."""
    import typer

    from toolwire.cli.app import command

    root = command()
    context = typer.Context(root, info_name="toolwire")
    return "\n".join(_sections(root, context, level=2))


def _sections(command: Any, context: Any, level: int) -> list[str]:
    out = [_section(command, context, level)]
    for name, child in getattr(command, "commands", {}).items():
        if not child.hidden:
            sub = type(context)(child, info_name=name, parent=context)
            out += _sections(child, sub, level + 1)
    return out


def _section(command: Any, context: Any, level: int) -> str:
    path = context.command_path
    usage = " ".join([path, *command.collect_usage_pieces(context)])
    lines = [f"{'#' * min(level, 6)} `{path}`", "", "```text", usage, "```", ""]
    lines += [_markdown(command.help or ""), ""]
    rows = [row for row in (_row(p, context) for p in command.get_params(context)) if row]
    if rows:
        lines += ["| argument or option | what it does |", "| --- | --- |", *rows, ""]
    return "\n".join(lines)


def _row(param: Any, context: Any) -> str | None:
    record = param.get_help_record(context)
    if record is None or getattr(param, "hidden", False):
        return None
    names, text = record
    return f"| `{names}` | {_cell(text)} |"


def _markdown(text: str) -> str:
    """Help text as Markdown: reST's ``code`` becomes `code`, the rest is escaped as text."""
    parts = _RST_CODE.split(html.escape(text, quote=False))
    return "".join(f"`{html.unescape(p)}`" if i % 2 else p for i, p in enumerate(parts))


def _cell(text: str) -> str:
    return _markdown(" ".join(text.split())).replace("|", "\\|")
