"""Configuration tools: ``get_config`` and ``check_config`` over the workspace's configuration
folder (``[config] folder`` in the workspace TOML; ``schemas`` maps file globs to JSON schemas).

``get_config`` shows a file's values with secrets masked by the one catalogue: a value under a
sensitive key name (``password``, ``api_key``, ``dsn``, ...; see ``_sensitive``) is ``***``
whatever it holds, every other string passes through ``toolwire.core.redact``. ``check_config``
reports syntax errors and, where a schema is mapped, schema errors, each with its line, built
from fixed phrases that never quote a value (``_config_files``). Paths are confined to the
folder as every file tool confines them, and secrets files are never read.

Each file is checked on its own, within its limits (size, nesting, time: ``_per_file``): one
that cannot be checked, or breaks its reader, is listed as ``not checked: <reason>`` and the
others still answer.
"""

from __future__ import annotations

import fnmatch
import json
import logging
from pathlib import Path, PurePosixPath
from typing import Any

from toolwire.core.errors import ToolRefusal
from toolwire.core.personal import clipped
from toolwire.core.redact import MASK, mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import (
    builtin,
    echo,
    fits,
    fitted,
    format_cell,
    secret_identities,
    text_bytes,
    workspace_of,
)
from toolwire.tools.builtin._config_files import (
    MAX_CONFIG_BYTES,
    ConfigSyntaxError,
    KeyLine,
    Parsed,
    Problem,
    flatten,
    format_of,
    key_lines,
    parse,
)
from toolwire.tools.builtin._paths import check_relative, display, regular_file, walk_files
from toolwire.tools.builtin._per_file import (
    BROKE_READER,
    CALL_SECONDS,
    CALL_SPENT,
    FILE_SECONDS,
    SCHEMA_TOO_DEEP,
    UNREADABLE,
    Budget,
    NotChecked,
    larger_than,
    not_checked,
    not_read,
)
from toolwire.tools.builtin._secrets import SecretIdentities, is_secret_file, is_secret_path
from toolwire.tools.builtin._sensitive import is_sensitive
from toolwire.workspace.maps import ConfigMap

MAX_CONFIG_FILES = 200  # files listed or checked per call
MAX_VALUES_SHOWN = 500  # values of one file; the text budget may end the list sooner
MAX_PROBLEMS = 20  # per file: the first ones say what is wrong
# Schema errors collected per file, in the validator's order, of which the first MAX_PROBLEMS
# by line are shown: a file of data can break one rule once per value, and each error costs a
# line lookup.
MAX_SCHEMA_ERRORS = 200
WITHHELD = "secrets file, not read"
NOT_CHECKED = "not checked"  # a row's kind when its file was not checked; the reason follows
log = logging.getLogger("toolwire.tools.builtin")


def _config(context: ToolContext) -> tuple[ConfigMap, SecretIdentities]:
    """The configuration folder, and the workspace's secrets files by identity."""
    workspace = workspace_of(context)
    if workspace.config is None:
        raise ToolRefusal("the workspace has no configuration folder.")
    return workspace.config, secret_identities(workspace)


def _files(config: ConfigMap, known: SecretIdentities) -> list[tuple[str, Path, bool]]:
    """Every configuration file in the folder: (shown path, path, is a secrets file)."""
    base = config.folder.resolve()
    found = []
    for entry in walk_files(base, base):
        if format_of(entry.name) is None:
            continue
        secret = is_secret_file(base, entry, known=known)
        found.append((display(config.folder, entry), entry, secret))
        if len(found) >= MAX_CONFIG_FILES:
            break
    return found


def _target(config: ConfigMap, known: SecretIdentities, path: str) -> tuple[str, Path]:
    """(shown path, path) of one configuration file that may be read, or a refusal."""
    target = regular_file(config.folder, path)
    if format_of(target.name) is None:
        raise ToolRefusal(f"{echo(path)} is not a TOML, YAML, JSON or INI file.")
    if is_secret_path(check_relative(path)) or is_secret_file(
        config.folder.resolve(), target, known=known
    ):
        raise ToolRefusal(f"{echo(path)} looks like a secrets file and is never read.")
    return display(config.folder, target), target


def _text(target: Path) -> str:
    """A file's text, read no further than ``MAX_CONFIG_BYTES``: ``NotChecked`` past it."""
    try:
        with target.open("rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError:
        raise NotChecked(UNREADABLE) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise NotChecked(larger_than(MAX_CONFIG_BYTES))
    return data.decode("utf-8", "replace")


@builtin(
    group="configuration", data_class="secret_adjacent", integrity="untrusted", requires_admin=True
)
def get_config(context: ToolContext, path: str | None = None) -> ToolResult:
    """The application's configuration: the list of its files, or one file's values, parsed,
    with secrets masked.

    Artifact: ``table`` ``{columns: ["path", "format"], rows}`` for the list, ``key_value``
    ``{items: [[key, value], ...]}`` for a file; the same entries as the text.
    """
    config, known = _config(context)
    if path is None:
        return _listing(config, known)
    shown, target = _target(config, known, path)
    kind = format_of(target.name) or ""
    try:
        document = parse(_text(target), kind, Budget(FILE_SECONDS)).document
    except NotChecked as exc:
        raise ToolRefusal(not_read(shown, exc.reason)) from None
    except ConfigSyntaxError as exc:
        where = f"line {exc.problem.line}: " if exc.problem.line else ""
        raise ToolRefusal(
            f"{shown} is not valid {kind} ({where}{mask_secrets(exc.problem.text)}); "
            "check_config lists every problem."
        ) from None
    items: list[tuple[str, str]] = []
    lines: list[str] = []
    used = 300  # the header, written last
    for key, value in flatten(document):
        shown_key, shown_value = format_cell(mask_secrets(key)), _shown_value(key, value)
        line = f"{shown_key} = {shown_value}"
        if len(items) >= MAX_VALUES_SHOWN or not fits([line], used):
            lines.append("(more values not shown)")
            break
        used += text_bytes([line])
        lines.append(line)
        items.append((shown_key, shown_value))
    header = f"{shown} ({kind}, {len(items)} values, secrets masked):"
    return ToolResult.text("\n".join([header, *lines]), Artifact.key_value(shown, items))


def _listing(config: ConfigMap, known: SecretIdentities) -> ToolResult:
    rows = [
        [shown, WITHHELD if secret else format_of(shown) or ""]
        for shown, _, secret in _files(config, known)
    ]
    if not rows:
        return ToolResult.text("The configuration folder holds no TOML, YAML, JSON or INI file.")
    lines = [f"- {shown} ({kind})" for shown, kind in rows]
    text = "\n".join([f"Configuration files ({len(rows)}):", *lines])
    return ToolResult.text(text, Artifact.table("configuration files", ["path", "format"], rows))


def _shown_value(key: str, value: Any) -> str:
    """A value as shown: masked whole under a sensitive key, else through the redactor."""
    if any(is_sensitive(part) for part in key.replace("[", ".").split(".")):
        return MASK
    if isinstance(value, str):
        return format_cell(mask_secrets(value))
    if isinstance(value, dict | list):  # an empty one: a leaf of its own
        return "{}" if isinstance(value, dict) else "[]"
    return format_cell(mask_secrets(json.dumps(value, default=str)))


@builtin(
    group="configuration", data_class="configuration", integrity="untrusted", requires_admin=True
)
def check_config(context: ToolContext, path: str | None = None) -> ToolResult:
    """Check the application's configuration files (or one) for syntax errors and, where the
    workspace maps a schema, schema errors; each problem with its line.

    Values are never quoted; a file that cannot be checked (too large, nested too deeply, too
    slow to read) is listed as ``not checked`` with the reason. Artifact: ``table`` ``{columns:
    ["file", "line", "kind", "problem"], rows}``, the problems the text lists (kind ``not
    checked`` for such a file, the reason as its problem).
    """
    config, known = _config(context)
    if path is None:
        files = [(shown, target) for shown, target, secret in _files(config, known) if not secret]
    else:
        files = [_target(config, known, path)]
    call = Budget(CALL_SECONDS)
    rows: list[list[str]] = []
    for shown, target in files:
        problems = _file_problems(config, shown, target) if not call.spent else [_left(CALL_SPENT)]
        for problem in problems[:MAX_PROBLEMS]:
            line = "" if problem.line is None else str(problem.line)
            rows.append([shown, line, problem.kind, format_cell(problem.text)])
    return _report(len(files), rows)


def _left(reason: str) -> Problem:
    return Problem(None, None, NOT_CHECKED, reason)


def _file_problems(config: ConfigMap, shown: str, target: Path) -> list[Problem]:
    """The problems of one file, within its budget; a file that cannot be checked is one
    ``not checked`` problem, whatever its reader raised."""
    try:
        return _problems(config, shown, _text(target), Budget(FILE_SECONDS))
    except NotChecked as exc:
        return [_left(exc.reason)]
    except Exception:  # one file's reader failing must not take the other files down
        log.exception("checking a configuration file failed")
        return [_left(BROKE_READER)]


def _report(files: int, rows: list[list[str]]) -> ToolResult:
    left = sum(1 for row in rows if row[2] == NOT_CHECKED)
    problems = len(rows) - left
    counted = f"{files - left} configuration files checked" + (
        f", {left} not checked" if left else ""
    )
    if not rows:
        return ToolResult.text(f"{counted}: no problems.")
    entries = (([f"- {_entry(row)}"], row) for row in rows)
    lines, shown = fitted(entries, 200, total=len(rows), more="({} more problems not shown)")
    header = f"{counted}: {problems or 'no'} problems."
    artifact = Artifact.table("configuration problems", ["file", "line", "kind", "problem"], shown)
    return ToolResult.text("\n".join([header, *lines]), artifact)


def _entry(row: list[str]) -> str:
    if row[2] == NOT_CHECKED:
        return f"{row[0]}: {not_checked(row[3])}"
    return f"{row[0]}:{row[1]}: {row[2]}: {row[3]}" if row[1] else f"{row[0]}: {row[2]}: {row[3]}"


def _problems(config: ConfigMap, shown: str, text: str, budget: Budget) -> list[Problem]:
    kind = format_of(shown) or ""
    try:
        parsed = parse(text, kind, budget)
    except ConfigSyntaxError as exc:
        problem = exc.problem  # fixed phrases; a quoted token of the file is masked all the same
        return [Problem(problem.line, problem.column, problem.kind, mask_secrets(problem.text))]
    schema_path = _schema_for(config, shown)
    if schema_path is None:
        return []
    validator = _validator(schema_path)
    if validator is None:
        return [Problem(None, None, "schema", "its schema file cannot be read or is not valid")]
    errors = _schema_errors(validator, parsed, budget)
    if not errors:
        return []
    key_line = key_lines(text, parsed, kind, budget)  # read for lines once, not once per error
    problems = []
    for error in errors:
        problems.append(_schema_problem(key_line, error))
        budget.check()
    return sorted(problems, key=lambda p: (p.line is None, p.line or 0, p.text))


def _schema_errors(validator: Any, parsed: Parsed, budget: Budget) -> list[Any]:
    """The first ``MAX_SCHEMA_ERRORS`` errors of the document against its schema."""
    errors = []
    try:
        for error in validator.iter_errors(parsed.document):
            errors.append(error)
            if len(errors) >= MAX_SCHEMA_ERRORS:
                break
            budget.check()
    except RecursionError:  # a schema that refers to itself recurses more than once per level
        raise NotChecked(SCHEMA_TOO_DEEP) from None
    return errors


def _validator(schema_path: Path) -> Any | None:
    """A validator for the JSON schema at ``schema_path``; None when it is unreadable or not
    a valid schema."""
    # Imported here: jsonschema is a tenth of the built-ins' import time, and only a file with
    # a mapped schema needs it.
    from jsonschema import exceptions, validators

    try:
        schema = json.loads(schema_path.read_text())
        validator = validators.validator_for(schema)(schema)
        validator.check_schema(schema)
    except (OSError, ValueError, exceptions.SchemaError):
        return None
    return validator


def _schema_for(config: ConfigMap, shown: str) -> Path | None:
    name = PurePosixPath(shown).name
    for glob, schema in config.schemas:
        if fnmatch.fnmatchcase(shown, glob) or fnmatch.fnmatchcase(name, glob):
            return schema
    return None


def _schema_problem(key_line: KeyLine, error: Any) -> Problem:
    path = list(error.absolute_path)
    extra = _unexpected(error)
    line = key_line([*path, extra[0]] if extra else path)
    where = mask_secrets(_dotted(path)) if path else "the document"
    return Problem(line, None, "schema", f"{where}: {_rule(error, extra)}")


def _dotted(path: list[str | int]) -> str:
    """A value's path as ``get_config`` writes it: ``servers[0].port``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text


def _unexpected(error: Any) -> list[str]:
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return []
    allowed = set(error.schema.get("properties", {}))
    return [str(k) for k in error.instance if k not in allowed]


def _rule(error: Any, extra: list[str]) -> str:
    """What a schema rule asks, from the schema alone: never the value that broke it."""
    rule, wanted = error.validator, error.validator_value
    if rule == "required":
        # one error per missing key; its message starts with that key, as the schema names it
        missing = [k for k in wanted if str(error.message).startswith(repr(k))][:1]
        return "missing required key " + ", ".join(repr(k) for k in missing or wanted)
    if extra:
        return "unexpected key " + ", ".join(repr(mask_secrets(k)) for k in extra[:10])
    if rule == "type":
        return f"must be of type {' or '.join(wanted) if isinstance(wanted, list) else wanted}"
    if rule in ("enum", "const"):
        return f"must be {'one of ' if rule == 'enum' else ''}{_clip(json.dumps(wanted))}"
    limits = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}
    if rule in limits:
        return f"must be {limits[rule]} {wanted}"
    return f"fails the schema's {rule!r} rule ({_clip(json.dumps(wanted, default=str))})"


def _clip(text: str) -> str:
    return clipped(text, 120)
