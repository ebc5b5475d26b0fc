"""Configuration files: parsing TOML, YAML, JSON and INI, with problems that carry line numbers
and never a value.

A problem text is built here from the parser's position and a fixed phrase; none quotes the
file's content (configparser and PyYAML put the offending line in their messages, so those are
rebuilt, not passed on). Every file is read within the per-file limits (``_per_file``): a
document nested more than ``MAX_NESTING`` levels deep, or one slower to read than its budget,
raises ``NotChecked``, never a recursion error (YAML: ``_config_yaml``).
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

from toolwire.core.personal import clipped
from toolwire.tools.builtin import _config_yaml
from toolwire.tools.builtin._per_file import MAX_NESTING, Budget, NotChecked, nested_deeper_than

FORMATS = {
    ".toml": "TOML", ".yaml": "YAML", ".yml": "YAML", ".json": "JSON", ".ini": "INI",
    ".cfg": "INI", ".conf": "INI",
}  # fmt: skip
# Read before parsing, never past: a hand-written settings file; larger is data. It also bounds
# what a parser that cannot be interrupted (json, tomllib, libyaml) spends on one file.
MAX_CONFIG_BYTES = 1_000_000
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


@dataclass(frozen=True, slots=True)
class Parsed:
    """A parsed file: its document and, for YAML, the nodes it was built from (their lines)."""

    document: Any
    root: yaml.Node | None = None


class ConfigSyntaxError(Exception):
    """A file that does not parse; ``problem`` says where and why, without its content."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.text)
        self.problem = problem


def format_of(path: PurePosixPath | str) -> str | None:
    return FORMATS.get(PurePosixPath(str(path)).suffix.lower())


def parse(text: str, kind: str, budget: Budget) -> Parsed:
    """The parsed file: ``ConfigSyntaxError`` when it does not parse, ``NotChecked`` when it
    is nested more than ``MAX_NESTING`` levels deep or its ``budget`` ran out."""
    if kind == "YAML":
        return _yaml(text, budget)
    readers = {"TOML": _toml, "JSON": _json}
    try:
        document = readers.get(kind, _ini)(text)
    except RecursionError:  # tomllib recurses on nesting, json too (in C, counted the same)
        raise NotChecked(nested_deeper_than(MAX_NESTING)) from None
    # The depth is looked at before the clock: a file too deep says so on any machine.
    if _deeper_than(document, MAX_NESTING):
        raise NotChecked(nested_deeper_than(MAX_NESTING))
    budget.check()
    return Parsed(document)


def _deeper_than(document: Any, levels: int) -> bool:
    """Whether lists and mappings nest more than ``levels`` deep in ``document``."""
    stack = [(document, 1)] if isinstance(document, dict | list) else []
    while stack:
        current, depth = stack.pop()
        if depth > levels:
            return True
        children = current.values() if isinstance(current, dict) else current
        stack += [(child, depth + 1) for child in children if isinstance(child, dict | list)]
    return False


def _toml(text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _TOML_AT.search(message)
        line, column = (int(at.group(1)), int(at.group(2))) if at else (None, None)
        phrase = _TOML_END.sub("", _TOML_AT.sub("", message))
        raise ConfigSyntaxError(Problem(line, column, "syntax", phrase)) from None


def _yaml(text: str, budget: Budget) -> Parsed:
    try:
        document, root = _config_yaml.load(text, budget)
    except _config_yaml.TooManyValues:
        phrase = f"aliases expand to more than {_config_yaml.MAX_ALIAS_VALUES} values"
        raise ConfigSyntaxError(Problem(None, None, "syntax", phrase)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        raise ConfigSyntaxError(Problem(line, column, "syntax", _yaml_phrase(exc))) from None
    except yaml.YAMLError:
        raise ConfigSyntaxError(Problem(None, None, "syntax", "not valid YAML")) from None
    except (ValueError, TypeError, OverflowError):  # a value its tag cannot build: 2024-13-45
        raise ConfigSyntaxError(
            Problem(None, None, "syntax", "a value its type cannot hold")
        ) from None
    return Parsed(document, root)


def _yaml_phrase(exc: yaml.MarkedYAMLError) -> str:
    # PyYAML's problems are fixed phrases, a few with one quoted token ("found character
    # '\t' that cannot start any token"); the quoted snippet of the line is left out.
    phrase = " ".join(str(exc.problem or "not valid YAML").split())
    return f"{exc.context}: {phrase}" if exc.context else phrase


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
    return clipped(text, 60)


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


def key_lines(text: str, parsed: Parsed, kind: str, budget: Budget) -> KeyLine:
    """Where a value is written: the line (1-based) of the value at a path, when it can be
    found. The text is read here, once, however many paths are then looked up."""
    if kind in ("YAML", "JSON"):
        root = parsed.root if kind == "YAML" else _composed(text, budget)
        return _NodeLines(root)
    lines = text.splitlines()
    return lambda path: _assignment_line(lines, kind, path)


def _composed(text: str, budget: Budget) -> yaml.Node | None:
    try:
        return _config_yaml.compose(text, budget)
    except yaml.YAMLError:
        return None  # JSON that YAML does not read (a tab, say): no line, still the problem


class _NodeLines:
    """The lines of values in composed nodes; a mapping's keys are looked up once, by name."""

    def __init__(self, root: yaml.Node | None) -> None:
        self.root = root
        self.keys: dict[int, dict[str, yaml.Node]] = {}  # by id of the mapping node

    def __call__(self, path: list[str | int]) -> int | None:
        node = self.root
        for part in path:
            node = self._child(node, part)
            if node is None:
                return None
        return None if node is None else int(node.start_mark.line) + 1

    def _child(self, node: yaml.Node | None, part: str | int) -> yaml.Node | None:
        if isinstance(node, yaml.MappingNode):
            keys = self.keys.get(id(node))
            if keys is None:  # the first key of a name wins, as in the line it was read from
                keys = {}
                for key, value in node.value:
                    keys.setdefault(str(key.value), value)
                self.keys[id(node)] = keys
            return keys.get(str(part))
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
