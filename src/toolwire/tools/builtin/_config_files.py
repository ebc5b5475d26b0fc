"""Configuration files: parsing TOML, YAML, JSON and INI, with problems that carry line numbers
and never a value.

A problem text is built here from the parser's position and a fixed phrase; none quotes the
file's content (configparser and PyYAML put the offending line in their messages, so those are
rebuilt, not passed on). YAML aliases are expanded lazily by every reader of the parsed data,
so a document whose aliases would expand past ``MAX_VALUES`` values (a "billion laughs") is a
problem, not a hang.
"""

from __future__ import annotations

import configparser
import json
import re
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

FORMATS = {
    ".toml": "TOML", ".yaml": "YAML", ".yml": "YAML", ".json": "JSON", ".ini": "INI",
    ".cfg": "INI", ".conf": "INI",
}  # fmt: skip
MAX_CONFIG_BYTES = 1_000_000  # a hand-written settings file; larger is data
MAX_VALUES = 100_000  # values one file may expand to (YAML aliases multiply them)
MAX_DEPTH = 32  # levels of nesting shown; real settings are rarely deeper than five
_TOML_AT = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_TOML_END = re.compile(r"\s*\(at end of document\)$")


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem in one file: where (line and column when known) and what."""

    line: int | None
    column: int | None
    kind: str  # "syntax" or "schema"
    text: str


class ConfigSyntaxError(Exception):
    """A file that does not parse; ``problem`` says where and why, without its content."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.text)
        self.problem = problem


def format_of(path: PurePosixPath | str) -> str | None:
    return FORMATS.get(PurePosixPath(str(path)).suffix.lower())


def parse(text: str, kind: str) -> Any:
    """The parsed document; ``ConfigSyntaxError`` when it does not parse."""
    readers = {"TOML": _toml, "YAML": _yaml, "JSON": _json}
    try:
        return readers.get(kind, _ini)(text)
    except RecursionError:  # every parser here recurses on nesting
        raise ConfigSyntaxError(Problem(None, None, "syntax", "nested too deeply")) from None


def _toml(text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _TOML_AT.search(message)
        line, column = (int(at.group(1)), int(at.group(2))) if at else (None, None)
        phrase = _TOML_END.sub("", _TOML_AT.sub("", message))
        raise ConfigSyntaxError(Problem(line, column, "syntax", phrase)) from None


def _yaml(text: str) -> Any:
    try:
        return _yaml_document(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise ConfigSyntaxError(Problem(line, column, "syntax", _yaml_phrase(exc))) from None
    except yaml.YAMLError:
        raise ConfigSyntaxError(Problem(None, None, "syntax", "not valid YAML")) from None


def _yaml_document(text: str) -> Any:
    """The document, composed once: its expanded size measured, then built from those nodes."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node) > MAX_VALUES:
            raise ConfigSyntaxError(
                Problem(None, None, "syntax", f"aliases expand to more than {MAX_VALUES} values")
            )
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def _yaml_phrase(exc: yaml.MarkedYAMLError) -> str:
    # PyYAML's problems are fixed phrases, a few with one quoted token ("found character
    # '\t' that cannot start any token"); the quoted snippet of the line is left out.
    phrase = " ".join(str(exc.problem or "not valid YAML").split())
    return f"{exc.context}: {phrase}" if exc.context else phrase


def _expanded_size(node: yaml.Node, budget: int = MAX_VALUES + 1) -> int:
    """How many nodes ``node`` expands to, counting shared (aliased) nodes each time they are
    reached; stops counting past ``budget``."""
    count, stack = 0, [node]
    while stack and count <= budget:
        current = stack.pop()
        count += 1
        if isinstance(current, yaml.MappingNode):
            stack += [part for pair in current.value for part in pair]
        elif isinstance(current, yaml.SequenceNode):
            stack += current.value
    return count


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigSyntaxError(Problem(exc.lineno, exc.colno, "syntax", exc.msg)) from None


def _ini(text: str) -> dict[str, dict[str, str]]:
    parser = configparser.ConfigParser(interpolation=None, default_section="\x00")
    try:
        parser.read_string(text)
    except configparser.MissingSectionHeaderError as exc:
        raise ConfigSyntaxError(
            Problem(exc.lineno, None, "syntax", "a key before any [section] header")
        ) from None
    except configparser.DuplicateSectionError as exc:
        raise ConfigSyntaxError(
            Problem(exc.lineno, None, "syntax", f"section [{_name(exc.section)}] appears twice")
        ) from None
    except configparser.DuplicateOptionError as exc:
        where = f"in section [{_name(exc.section)}]"
        raise ConfigSyntaxError(
            Problem(exc.lineno, None, "syntax", f"key {_name(exc.option)} appears twice {where}")
        ) from None
    except configparser.ParsingError as exc:
        line = exc.errors[0][0] if exc.errors else None
        raise ConfigSyntaxError(Problem(line, None, "syntax", "not a key = value line")) from None
    except configparser.Error:
        raise ConfigSyntaxError(Problem(None, None, "syntax", "not a valid INI file")) from None
    return {section: dict(parser.items(section, raw=True)) for section in parser.sections()}


def _name(value: object) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 60 else text[:60] + "…"


def flatten(document: Any, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, Any]]:
    """``(dotted.key, scalar)`` for every leaf: mapping keys joined with ``.``, list items as
    ``[n]``. An empty mapping or list is a leaf of its own; past ``MAX_DEPTH`` levels the rest
    of a branch is one leaf, ``"(nested too deeply)"``."""
    if depth > MAX_DEPTH:
        yield prefix, "(nested too deeply)"
    elif isinstance(document, dict) and document:
        for key, value in document.items():
            yield from flatten(value, f"{prefix}.{key}" if prefix else str(key), depth + 1)
    elif isinstance(document, list) and document:
        for index, value in enumerate(document):
            yield from flatten(value, f"{prefix}[{index}]", depth + 1)
    else:
        yield prefix or "(document)", document


KeyLine = Callable[[list[str | int]], int | None]


def key_lines(text: str, kind: str) -> KeyLine:
    """Where a value is written: the line (1-based) of the value at a path, when it can be
    found. The text is read here, once, however many paths are then looked up."""
    if kind in ("YAML", "JSON"):
        root = _composed(text)
        return lambda path: _node_line(root, path)
    lines = text.splitlines()
    return lambda path: _assignment_line(lines, kind, path)


def _composed(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None  # JSON that YAML does not read (a tab, say): no line, still the problem


def _node_line(node: yaml.Node | None, path: list[str | int]) -> int | None:
    for part in path:
        node = _child(node, part)
        if node is None:
            return None
    return None if node is None else int(node.start_mark.line) + 1


def _child(node: yaml.Node | None, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        return next((value for key, value in node.value if key.value == str(part)), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        child: yaml.Node = node.value[part]
        return child
    return None


def _assignment_line(lines: list[str], kind: str, path: list[str | int]) -> int | None:
    """TOML and INI: the ``key =`` line of the last named key, after its table's header; or
    the header of the table the path names."""
    names = [str(p) for p in path if isinstance(p, str)]
    if not names:
        return None
    start = 0
    for depth in range(len(names) - 1, 0, -1):  # the longest header that names the key's table
        header = _header(lines, kind, names[:depth])
        if header is not None:
            start = header
            break
    key = re.compile(rf"^\s*[\"']?{re.escape(names[-1])}[\"']?\s*[=:]")
    found = next((n for n in range(start, len(lines)) if key.match(lines[n])), None)
    if found is None:
        found = _header(lines, kind, names)
    return None if found is None else found + 1


def _header(lines: list[str], kind: str, names: list[str]) -> int | None:
    wanted = ".".join(names) if kind == "TOML" else names[0]
    pattern = re.compile(rf"^\s*\[\[?\s*{re.escape(wanted)}\s*\]\]?\s*(#.*)?$")
    return next((n for n, line in enumerate(lines) if pattern.match(line)), None)
