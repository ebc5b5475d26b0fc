"""Structure tools: ``list_tables``, ``get_table_schema``, ``get_relations``.

Only readable tables are listed. In a schema, a sensitive column is listed by name as
``withheld`` with no type, so a model learns it exists and that asking for it is pointless;
foreign keys through sensitive tables or columns are left out of the relations entirely.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, inspect

from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin
from toolwire.tools.builtin._sensitive import is_sensitive
from toolwire.tools.builtin._sql import (
    engine_of,
    guard,
    is_sensitive_table,
    readable_table,
    table_names,
)

WITHHELD = "withheld"  # the type shown for a sensitive column


@builtin(group="structure", data_class="configuration", integrity="trusted")
def list_tables(context: ToolContext) -> ToolResult:
    """List the readable tables of the workspace database and their column counts.

    Artifact: ``table`` ``{columns: ["table", "columns"], rows}``.
    """
    engine = engine_of(context)
    names = table_names(engine)
    if not names:
        return ToolResult.text("The database has no readable tables.")
    rows = [[name, str(_column_count(engine, name))] for name in names]
    text = "Tables:\n" + "\n".join(f"- {name} ({count} columns)" for name, count in rows)
    return ToolResult.text(text, Artifact.table("tables", ["table", "columns"], rows))


@builtin(group="structure", data_class="configuration", integrity="trusted")
def get_table_schema(table: str, context: ToolContext) -> ToolResult:
    """Columns of one table: name, type, nullable, primary key. Sensitive columns are withheld.

    Artifact: ``table`` ``{columns: ["column", "type", "nullable", "primary_key"], rows}``.
    """
    sql_table = readable_table(engine_of(context), table.strip())
    rows = []
    for column in sql_table.columns:
        if is_sensitive(column.name):
            rows.append([column.name, WITHHELD, "", ""])
        else:
            kind = str(column.type)
            rows.append([column.name, kind, _yes(column.nullable), _yes(column.primary_key)])
    lines = [f"Table {sql_table.name}:"]
    lines += [
        f"- {name}: withheld (sensitive)"
        if kind == WITHHELD
        else f"- {name}: {kind}, nullable {nullable}, primary key {pk}"
        for name, kind, nullable, pk in rows
    ]
    columns = ["column", "type", "nullable", "primary_key"]
    artifact = Artifact.table(f"{sql_table.name} schema", columns, rows)
    return ToolResult.text("\n".join(lines), artifact)


@builtin(group="structure", data_class="configuration", integrity="trusted")
def get_relations(context: ToolContext) -> ToolResult:
    """Foreign keys between readable tables.

    Artifact: ``tree`` ``{nodes: [{label: table, children: [{label: "col -> other.col"}]}]}``.
    """
    engine = engine_of(context)
    nodes: list[dict[str, Any]] = [
        {"label": name, "children": [{"label": edge} for edge in _edges(engine, name)]}
        for name in table_names(engine)
    ]
    nodes = [n for n in nodes if n["children"]]
    if not nodes:
        return ToolResult.text("No foreign keys between readable tables.")
    lines = ["Foreign keys:"]
    for node in nodes:
        lines += [f"- {node['label']}.{child['label']}" for child in node["children"]]
    return ToolResult.text("\n".join(lines), Artifact.tree("relations", nodes))


def _column_count(engine: Engine, table: str) -> int:
    return len(guard(lambda: inspect(engine).get_columns(table)))


def _edges(engine: Engine, table: str) -> list[str]:
    keys: list[Any] = guard(lambda: inspect(engine).get_foreign_keys(table))
    edges = []
    for key in keys:
        target, local = key["referred_table"], key["constrained_columns"]
        remote = key["referred_columns"]
        if is_sensitive_table(target) or any(is_sensitive(c) for c in [*local, *remote]):
            continue
        edges.append(f"{', '.join(local)} -> {target}.{', '.join(list(remote))}")
    return edges


def _yes(flag: object) -> str:
    return "yes" if flag else "no"
