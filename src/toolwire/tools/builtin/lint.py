"""``lint_schema``: problems in the workspace database's schema, from names and types alone.

It reports tables without a primary key, foreign keys no index starts with (every join and
every delete of the parent scans the child), foreign keys that may be null, and columns named
like secrets with nothing in their name saying the value is hashed or encrypted (a foreign key
column holds a reference, not a secret, and is not one of them). It reads the
reflected schema only, never a value: whether such a column really holds clear text is for a
person to check. Sensitive tables, and foreign keys through them, are left out as every
structure tool leaves them out.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Inspector, inspect

from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, fitted
from toolwire.tools.builtin._sensitive import is_sensitive, name_parts
from toolwire.tools.builtin._sql import engine_of, guard, is_sensitive_table, table_names

# What in a column name says its value is not kept in clear: a whole part (``token_enc``)...
PROTECTED_PARTS = frozenset(
    {"hash", "hashed", "digest", "enc", "encrypted", "cipher", "crypt", "hmac", "sealed", "wrapped"}
)
# ...or a word anywhere in the squashed name (``api_key_sha256``, ``pwbcrypt``).
PROTECTED_WORDS = (
    "sha1", "sha256", "sha384", "sha512", "bcrypt", "argon2", "scrypt", "pbkdf2", "encrypted",
    "hashed", "digest", "cipher",
)  # fmt: skip
NO_KEY = "no primary key"
CLEAR = "named like a secret; nothing in its name says it is hashed or encrypted"

Finding = tuple[str, str, str]  # table, column ("" for the table), problem


@builtin(group="structure", data_class="configuration", integrity="trusted")
def lint_schema(context: ToolContext) -> ToolResult:
    """Check the database schema: tables without a primary key, foreign keys without an index,
    nullable foreign keys, and columns named like secrets that may be stored in clear.

    Reads names and types only, never a value. Artifact: ``table`` ``{columns: ["table",
    "column", "problem"], rows}``, the findings the text lists.
    """
    engine = engine_of(context)
    tables = table_names(engine)
    findings = guard(lambda: _findings(inspect(engine), tables))
    if not findings:
        return ToolResult.text(f"No schema problems found in {len(tables)} tables.")
    entries = (([f"- {t}{'.' + c if c else ''}: {p}"], [t, c, p]) for t, c, p in findings)
    lines, rows = fitted(entries, 200, total=len(findings), more="({} more findings not shown)")
    header = f"Schema problems in {len(tables)} tables ({len(rows)} shown):"
    artifact = Artifact.table("schema problems", ["table", "column", "problem"], rows)
    return ToolResult.text("\n".join([header, *lines]), artifact)


def _findings(schema: Inspector, tables: list[str]) -> list[Finding]:
    """Every table's findings, through one inspector: it caches what it reflects."""
    return [finding for name in tables for finding in _lint(schema, name)]


def _lint(schema: Inspector, table: str) -> Iterator[Finding]:
    keyed = schema.get_pk_constraint(table).get("constrained_columns") or []
    if not keyed:
        yield table, "", NO_KEY
    nullable = {c["name"]: bool(c.get("nullable")) for c in schema.get_columns(table)}
    covered = _index_heads(schema, table, keyed)
    keys = schema.get_foreign_keys(table)
    for key in keys:
        local, target = list(key["constrained_columns"]), key["referred_table"]
        remote = list(key["referred_columns"])
        if is_sensitive_table(target) or any(is_sensitive(c) for c in [*local, *remote]):
            continue
        named = ", ".join(local)
        if not any(head[: len(local)] == local for head in covered):
            yield table, named, f"foreign key to {target}.{', '.join(remote)} has no index"
        if any(nullable.get(c) for c in local):
            yield table, named, f"foreign key to {target} may be null"
    references = {c for key in keys for c in key["constrained_columns"]}
    for name in nullable:
        if is_sensitive(name) and name not in references and not _protected(name):
            yield table, name, CLEAR


def _protected(name: str) -> bool:
    parts = name_parts(name)
    squashed = "".join(parts)
    return bool(PROTECTED_PARTS & set(parts)) or any(w in squashed for w in PROTECTED_WORDS)


def _index_heads(schema: Any, table: str, keyed: list[str]) -> list[list[str]]:
    """The column lists an index, the primary key or a unique constraint starts with."""
    heads = [keyed] if keyed else []
    heads += [list(i["column_names"]) for i in schema.get_indexes(table)]
    heads += [list(u["column_names"]) for u in schema.get_unique_constraints(table)]
    return heads
