from __future__ import annotations

import pytest

from toolwire import ArtifactType
from toolwire.workspace.config import Workspace

from .conftest import invoke


def test_list_tables_hides_sensitive_and_internal_tables(workspace: Workspace) -> None:
    result = invoke(workspace, "list_tables")
    names = [row[0] for row in result.artifacts[0].data["rows"]]
    assert names == [
        "categories", "customers", "notes", "order_lines", "orders", "product_categories",
        "product_images", "products", "record_history", "roles", "scheduled_jobs", "staff", "wide",
    ]  # fmt: skip
    assert "sessions" not in result.content
    assert result.content.startswith("Tables:\n- categories (3 columns)\n- customers (7 columns)\n")


def test_schema_lists_sensitive_columns_as_withheld(workspace: Workspace) -> None:
    result = invoke(workspace, "get_table_schema", {"table": "customers"})
    rows = result.artifacts[0].data["rows"]
    assert rows[0] == ["id", "INTEGER", "yes", "yes"]
    assert rows[4] == ["password_hash", "withheld", "", ""]
    assert rows[5] == ["api_token", "withheld", "", ""]
    assert "- password_hash: withheld (sensitive)\n" in result.content
    assert "- name: TEXT, nullable no, primary key no\n" in result.content


@pytest.mark.parametrize("table", ["sessions", "sqlite_master", "customers'--", "Customers"])
def test_schema_of_sensitive_or_unknown_tables_is_refused(workspace: Workspace, table: str) -> None:
    result = invoke(workspace, "get_table_schema", {"table": table})
    assert result.content == f"Error: table {table!r} not found or not permitted."


def test_relations_are_a_tree_without_sensitive_tables(workspace: Workspace) -> None:
    result = invoke(workspace, "get_relations")
    (tree,) = result.artifacts
    assert tree.type is ArtifactType.TREE
    assert tree.data["nodes"][1:3] == [
        {
            "label": "order_lines",
            "children": [
                {"label": "product_id -> products.id", "children": []},
                {"label": "order_id -> orders.id", "children": []},
            ],
        },
        {"label": "orders", "children": [{"label": "customer_id -> customers.id", "children": []}]},
    ]
    assert result.content == (
        "Foreign keys:\n- categories.parent_id -> categories.id\n"
        "- order_lines.product_id -> products.id\n"
        "- order_lines.order_id -> orders.id\n- orders.customer_id -> customers.id\n"
        "- product_categories.category_id -> categories.id\n"
        "- product_categories.product_id -> products.id\n"
        "- product_images.product_id -> products.id\n- staff.role_id -> roles.id"
    )
