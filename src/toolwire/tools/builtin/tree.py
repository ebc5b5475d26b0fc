"""``record_tree``: the rows of one table as a tree over a parent-id column.

The table, its parent column and its label column follow ``read_records``' rules (readable
tables and columns only, identifiers compared with the reflected schema, labels through
``safe_cell``). The tree is capped three ways: ``MAX_TREE_DEPTH`` levels, ``MAX_NODES`` nodes and
the text budget; the outline in the text and the ``tree`` artifact are built in one pass from
the same labels, so the artifact never shows a node the text does not. A row reached twice (a
cycle in the data) is shown once more, marked, without its children. A cycle that no root
reaches (every row of it has a parent, and none leads to a root) is not left out: from all
roots, each such cycle is shown after the roots, from its first row, marked ``NO_ROOT``, and a
note counts them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import Column, String, Table, Text, select

from toolwire.core.errors import ToolRefusal
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, echo, fits, format_cell, text_bytes
from toolwire.tools.builtin._sensitive import safe_cell
from toolwire.tools.builtin._sql import (
    engine_of,
    fetch_rows,
    readable_column,
    readable_columns,
    readable_table,
    single_key,
)

MAX_TREE_DEPTH = 6  # an outline, not the whole hierarchy
MAX_NODES = 300  # nodes per tree: enough to orient, bounded for the wire
MAX_TREE_ROWS = 10_000  # rows read to build a tree; a larger table is read in part
LABEL_NAMES = ("name", "title", "label", "slug")  # a label column's usual names, in preference
CYCLE = " (cycle)"  # a row shown again, where it closes a cycle
NO_ROOT = " (cycle, no root)"  # the first row of a cycle that no root reaches

Depth = Annotated[int, Field(ge=1, le=MAX_TREE_DEPTH)]
RootId = Annotated[int | str | None, Field(description="start from this row (default: all roots)")]


@dataclass
class _Outline:
    """The tree being written: its text lines and the budget left."""

    lines: list[str] = field(default_factory=list)
    nodes: int = 0
    used: int = 300  # the header, written last
    full: bool = False
    unrooted: frozenset[Hashable] = frozenset()  # the first rows of cycles no root reaches


@builtin(group="records", data_class="content", integrity="untrusted")
def record_tree(
    table: str,
    context: ToolContext,
    *,
    parent_column: str = "parent_id",
    label_column: str | None = None,
    root_id: RootId = None,
    depth: Depth = 3,
) -> ToolResult:
    """Rows of a table as a tree over its parent-id column, from its roots or one row, to
    ``depth`` levels.

    Artifact: ``tree`` ``{nodes: [{label: "id: label", children: [...]}]}``, the outline's nodes.
    """
    engine = engine_of(context)
    sql_table = readable_table(engine, table.strip())
    key = single_key(sql_table)
    parent = readable_column(sql_table, parent_column, "parent_column")
    label = _label(sql_table, label_column, {key.name, parent.name})
    statement = select(key, parent, label).order_by(key).limit(MAX_TREE_ROWS + 1)
    rows = fetch_rows(engine, statement)
    notes = (
        [f"(only the first {MAX_TREE_ROWS} rows were read)"] if len(rows) > MAX_TREE_ROWS else []
    )
    tree = _Tree.of(rows[:MAX_TREE_ROWS])
    roots = tree.roots() if root_id is None else [tree.find(root_id, sql_table.name)]
    unrooted = tree.unrooted_cycles(roots) if root_id is None else []
    outline = _Outline(unrooted=frozenset(unrooted))
    nodes = tree.outline([*roots, *unrooted], depth, outline)
    if unrooted:
        notes.append(_unrooted_note(len(unrooted), shown=max(0, len(nodes) - len(roots))))
    if outline.full:
        notes.append(f"(tree stopped at {outline.nodes} nodes: give root_id or a smaller depth)")
    header = f"Tree of {sql_table.name} by {parent.name} ({outline.nodes} rows, depth {depth}):"
    text = "\n".join([header, *outline.lines, *notes])
    return ToolResult.text(text, Artifact.tree(f"{sql_table.name} tree", nodes))


def _unrooted_note(count: int, *, shown: int) -> str:
    cycles = "1 cycle" if count == 1 else f"{count} cycles"
    where = (
        f"shown after the roots, marked{NO_ROOT}"
        if shown == count
        else f"{shown} of them shown: give root_id to start from one"
    )
    return f"({cycles} that no root reaches: {where})"


def _label(table: Table, name: str | None, taken: set[str]) -> Column[Any]:
    if name is not None:
        return readable_column(table, name, "label_column")
    texts = [
        c
        for c in readable_columns(table)
        if c.name not in taken and isinstance(c.type, String | Text)
    ]
    found = label_of(texts)
    if found is None:
        raise ToolRefusal(f"table {echo(table.name)} has no readable text column for labels.")
    return found


def label_of(columns: Sequence[Column[Any]]) -> Column[Any] | None:
    """The column that labels a row: the first by ``LABEL_NAMES``, else the first of all."""
    preferred = (c for n in LABEL_NAMES for c in columns if c.name.lower() == n)
    return next(preferred, columns[0] if columns else None)


@dataclass(frozen=True, slots=True)
class _Tree:
    """Rows by id and children by parent id, as read."""

    labels: dict[Hashable, str]
    children: dict[Hashable, list[Hashable]]
    parents: dict[Hashable, Hashable]

    @classmethod
    def of(cls, rows: Sequence[Sequence[Any]]) -> _Tree:
        labels: dict[Hashable, str] = {}
        children: dict[Hashable, list[Hashable]] = defaultdict(list)
        parents: dict[Hashable, Hashable] = {}
        for key, parent, label in rows:
            labels[key] = f"{format_cell(key)}: {format_cell(safe_cell(label))}"
            parents[key] = parent
            if parent is not None and parent != key:
                children[parent].append(key)
        return cls(labels, dict(children), parents)

    def roots(self) -> list[Hashable]:
        """Rows without a parent, or whose parent is not a row of the table."""
        return [k for k, p in self.parents.items() if p is None or p == k or p not in self.labels]

    def unrooted_cycles(self, roots: Sequence[Hashable]) -> list[Hashable]:
        """The first row (in the table's order) of each cycle no row of ``roots`` reaches.

        A row no root reaches has a parent that no root reaches either, so following parents
        from it ends in a cycle of such rows; each is found once, and its rows and every row
        hanging from it are shown from that first row."""
        seen = set(self._reached(roots))
        order = {key: n for n, key in enumerate(self.labels)}
        firsts: list[Hashable] = []
        for start in self.labels:
            walk: dict[Hashable, None] = {}
            key = start
            while key not in seen:
                walk[key] = None
                seen.add(key)
                key = self.parents[key]
            if key in walk:  # this walk closed a cycle: from ``key`` on, the walk is the cycle
                cycle = list(walk)[list(walk).index(key) :]
                firsts.append(min(cycle, key=order.__getitem__))
        return sorted(firsts, key=order.__getitem__)

    def _reached(self, roots: Sequence[Hashable]) -> list[Hashable]:
        reached, stack = [], list(roots)
        seen = set(roots)
        while stack:
            key = stack.pop()
            reached.append(key)
            for child in self.children.get(key, []):
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
        return reached

    def find(self, wanted: int | str, table: str) -> Hashable:
        for key in self.labels:
            if key == wanted or str(key) == str(wanted):
                return key
        raise ToolRefusal(f"no row of {table} has id {echo(wanted)}.")

    def outline(
        self,
        keys: list[Hashable],
        depth: int,
        outline: _Outline,
        above: frozenset[Hashable] = frozenset(),
    ) -> list[dict[str, Any]]:
        """Nodes for ``keys`` and their children to ``depth`` levels; each written to the
        outline as it is added, and none once the outline is full. ``above`` holds the
        ancestors: a row among them closes a cycle and is shown without children."""
        nodes: list[dict[str, Any]] = []
        level = len(above) + 1
        for key in keys:
            cycle = key in above
            mark = CYCLE if cycle else NO_ROOT if not above and key in outline.unrooted else ""
            label = self.labels[key] + mark
            line = f"{'  ' * level}- {label}"
            if outline.nodes >= MAX_NODES or not fits([line], outline.used):
                outline.full = True
                break
            outline.lines.append(line)
            outline.nodes += 1
            outline.used += text_bytes([line])
            below = self.children.get(key, []) if depth > 1 and not cycle else []
            children = self.outline(below, depth - 1, outline, above | {key})
            nodes.append({"label": label, "children": children})
        return nodes
