"""``record_tree``: a table as a tree over its parent-id column, depth- and size-capped."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import ArtifactType
from toolwire.workspace.config import Workspace

from .conftest import assert_artifacts_within_text, invoke


def test_the_catalogue_as_a_tree(workspace: Workspace) -> None:
    result = invoke(workspace, "record_tree", {"table": "categories"})
    assert result.content == (
        "Tree of categories by parent_id (8 rows, depth 3):\n"
        "  - 1: All products\n"
        "    - 2: Kitchen\n      - 3: Mugs\n"
        "    - 4: Clothing\n      - 5: T-shirts\n"
        "    - 6: Stationery\n      - 7: Pens\n"
        "    - 8: Bags"
    )
    (tree,) = result.artifacts
    assert tree.type is ArtifactType.TREE and tree.label == "categories tree"
    assert tree.data["nodes"][0]["label"] == "1: All products"
    assert tree.data["nodes"][0]["children"][0] == {
        "label": "2: Kitchen",
        "children": [{"label": "3: Mugs", "children": []}],
    }
    assert_artifacts_within_text(result)


def test_from_one_row_and_to_one_level(workspace: Workspace) -> None:
    result = invoke(workspace, "record_tree", {"table": "categories", "root_id": 1, "depth": 1})
    assert (
        result.content == "Tree of categories by parent_id (1 rows, depth 1):\n  - 1: All products"
    )
    assert result.artifacts[0].data["nodes"] == [{"label": "1: All products", "children": []}]
    sub = invoke(workspace, "record_tree", {"table": "categories", "root_id": "4"})
    assert sub.content.endswith("  - 4: Clothing\n    - 5: T-shirts")


def test_a_chosen_label_column(workspace: Workspace) -> None:
    result = invoke(
        workspace, "record_tree", {"table": "categories", "label_column": "parent_id", "depth": 2}
    )
    assert result.content.splitlines()[1:3] == ["  - 1: null", "    - 2: 1"]


@pytest.fixture
def cyclic(tmp_path: Path) -> Workspace:
    database = tmp_path / "tree.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, parent INT, title TEXT, secret TEXT)")
        rows = [(1, None, "root"), (2, 1, "a"), (3, 2, "b"), (4, 3, "c"), (5, 4, "d"),
                (6, 5, "e"), (7, 6, "f"), (8, 7, "g"), (10, 11, "x"), (11, 10, "y"),
                (12, 12, "self"), (13, 99, "orphan")]  # fmt: skip
        db.executemany("INSERT INTO t (id, parent, title, secret) VALUES (?, ?, ?, 's3cret')", rows)
    db.close()
    return Workspace(database_url=f"sqlite:///{database}")


def test_depth_is_capped(cyclic: Workspace) -> None:
    deep = invoke(cyclic, "record_tree", {"table": "t", "parent_column": "parent", "depth": 6})
    assert deep.content.splitlines()[1:8] == [
        "  - 1: root", "    - 2: a", "      - 3: b", "        - 4: c", "          - 5: d",
        "            - 6: e", "  - 12: self",
    ]  # fmt: skip
    too_deep = invoke(cyclic, "record_tree", {"table": "t", "parent_column": "parent", "depth": 7})
    assert too_deep.content.startswith('Error: invalid arguments for tool "record_tree": depth:')


def test_cycles_end_and_orphans_are_roots(cyclic: Workspace) -> None:
    roots = invoke(cyclic, "record_tree", {"table": "t", "parent_column": "parent", "depth": 1})
    assert roots.content.splitlines()[1:] == [
        "  - 1: root", "  - 12: self", "  - 13: orphan", "  - 10: x (cycle, no root)",
        "(1 cycle that no root reaches: shown after the roots, marked (cycle, no root))",
    ]  # fmt: skip
    loop = invoke(cyclic, "record_tree", {"table": "t", "parent_column": "parent", "root_id": 10})
    assert loop.content.splitlines()[1:] == ["  - 10: x", "    - 11: y", "      - 10: x (cycle)"]
    assert "s3cret" not in loop.content


def test_a_cycle_no_root_reaches_is_reported_in_the_text_and_the_artifact(tmp_path: Path) -> None:
    database = tmp_path / "loops.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, parent_id INT, name TEXT)")
        rows = [(1, None, "root"), (2, 1, "kid"), (3, 5, "a"), (4, 3, "b"), (5, 4, "c"),
                (6, 4, "hangs off b"), (7, 8, "p"), (8, 7, "q")]  # fmt: skip
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}")
    result = invoke(ws, "record_tree", {"table": "t", "depth": 6})
    one = invoke(ws, "record_tree", {"table": "t", "depth": 6, "root_id": 1})
    ws.dispose()
    assert result.content == (
        "Tree of t by parent_id (10 rows, depth 6):\n"
        "  - 1: root\n    - 2: kid\n"
        "  - 3: a (cycle, no root)\n    - 4: b\n      - 5: c\n        - 3: a (cycle)\n"
        "      - 6: hangs off b\n"
        "  - 7: p (cycle, no root)\n    - 8: q\n      - 7: p (cycle)\n"
        "(2 cycles that no root reaches: shown after the roots, marked (cycle, no root))"
    )
    nodes = result.artifacts[0].data["nodes"]
    assert [n["label"] for n in nodes] == ["1: root", "3: a (cycle, no root)",
                                           "7: p (cycle, no root)"]  # fmt: skip
    assert nodes[2]["children"] == [
        {"label": "8: q", "children": [{"label": "7: p (cycle)", "children": []}]}
    ]
    assert_artifacts_within_text(result)
    assert one.content == "Tree of t by parent_id (2 rows, depth 6):\n  - 1: root\n    - 2: kid"


def test_a_cycle_no_root_reaches_is_counted_when_the_tree_stops_first(tmp_path: Path) -> None:
    database = tmp_path / "full.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, parent_id INT, name TEXT)")
        db.executemany("INSERT INTO t VALUES (?, NULL, ?)", [(n, f"n{n}") for n in range(1, 301)])
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", [(301, 302, "x"), (302, 301, "y")])
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}")
    result = invoke(ws, "record_tree", {"table": "t", "depth": 1})
    ws.dispose()
    assert result.content.splitlines()[-2:] == [
        "(1 cycle that no root reaches: 0 of them shown: give root_id to start from one)",
        "(tree stopped at 300 nodes: give root_id or a smaller depth)",
    ]


def test_the_node_count_is_capped(tmp_path: Path) -> None:
    database = tmp_path / "wide.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, parent_id INT, name TEXT)")
        db.executemany("INSERT INTO t VALUES (?, NULL, ?)", [(n, f"n{n}") for n in range(1, 501)])
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}")
    result = invoke(ws, "record_tree", {"table": "t"})
    ws.dispose()
    assert len(result.artifacts[0].data["nodes"]) == 300
    assert result.content.endswith("(tree stopped at 300 nodes: give root_id or a smaller depth)")


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"table": "sessions"}, "Error: table 'sessions' not found or not permitted."),
        ({"table": "nowhere"}, "Error: table 'nowhere' not found or not permitted."),
        ({"table": "categories", "parent_column": "nope"},
         "Error: parent_column 'nope' is not a readable column of table 'categories'."),
        ({"table": "customers", "parent_column": "password_hash"},
         "Error: parent_column 'password_hash' is not a readable column of table 'customers'."),
        ({"table": "customers", "parent_column": "id", "label_column": "api_token"},
         "Error: label_column 'api_token' is not a readable column of table 'customers'."),
        ({"table": "product_categories"},
         "Error: table 'product_categories' has no single-column primary key."),
        ({"table": "categories", "root_id": 99}, "Error: no row of categories has id '99'."),
        ({"table": "categories", "root_id": [1]},
         'Error: invalid arguments for tool "record_tree": root_id.int: Input should be a valid'
         " integer; root_id.str: Input should be a valid string"),
    ],
)  # fmt: skip
def test_refusals(workspace: Workspace, arguments: dict[str, Any], error: str) -> None:
    assert invoke(workspace, "record_tree", arguments).content == error


def test_labels_are_masked_like_every_cell(tmp_path: Path) -> None:
    database = tmp_path / "m.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, parent_id INT, name TEXT)")
        db.execute(
            "INSERT INTO t VALUES (1, NULL, 'mail ada@example.com key sk-abcdefghijklmnopqrst')"
        )
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}")
    result = invoke(ws, "record_tree", {"table": "t"})
    ws.dispose()
    assert result.content.endswith("  - 1: mail ***@*** key sk-***")


LABELS = st.one_of(st.text(max_size=40), st.sampled_from(["", "\n", "a" * 400, "null"]), st.none())


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(st.tuples(st.integers(0, 12), LABELS), min_size=1, max_size=12),
    depth=st.integers(1, 6),
)
def test_every_node_of_the_artifact_is_a_line_of_the_text(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[int, Any]], depth: int
) -> None:
    database = tmp_path_factory.mktemp("tree") / "t.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, parent_id INT, name TEXT)")
        db.executemany("INSERT INTO t (parent_id, name) VALUES (?, ?)", rows)
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}")
    result = invoke(ws, "record_tree", {"table": "t", "depth": depth})
    ws.dispose()
    assert_artifacts_within_text(result)
    lines = result.content.split("\n")

    def check(nodes: list[dict[str, Any]], level: int) -> int:
        count = 0
        for node in nodes:
            assert f"{'  ' * level}- {node['label']}" in lines
            count += 1 + check(node["children"], level + 1)
        return count

    shown = check(result.artifacts[0].data["nodes"], 1)
    assert f"({shown} rows, depth {depth})" in lines[0]
