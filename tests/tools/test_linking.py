"""``link_records`` and ``set_field``: approval-gated writes with a preview."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.core.lifecycle import RunStatus
from toolwire.demo._content import CUSTOMERS
from toolwire.tools.api import Effect, needs_approval
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace

from .conftest import database_of, gated_run, invoke, preview, query

ADA_HASH = CUSTOMERS[0][3]
LINK = {"table": "product_categories", "values": {"product_id": 2, "category_id": 3}}


@pytest.mark.parametrize(
    ("name", "effect"),
    [("link_records", Effect.NON_IDEMPOTENT_WRITE), ("set_field", Effect.IDEMPOTENT_WRITE)],
)
def test_the_writers_ship_disabled_and_need_approval(name: str, effect: Effect) -> None:
    registry = ToolRegistry(builtin_tools())
    tool = registry.get(name)
    assert tool is not None
    traits = (tool.requires_approval, tool.enabled_by_default, tool.group, tool.data_class)
    assert traits == (True, False, "editing", "content")
    assert getattr(tool, "effect", None) is effect and needs_approval(tool)
    assert name not in registry.enabled_names()


# -- link_records ----------------------------------------------------------------------------


def test_the_link_preview_names_the_linked_rows(workspace: Workspace) -> None:
    assert preview(workspace, "link_records", LINK) == [
        "link in product_categories:",
        "product_id: 2 (products: Organic T-shirt)",
        "category_id: 3 (categories: Mugs)",
    ]


def test_an_approved_link_is_written_once(workspace: Workspace) -> None:
    gated = gated_run(workspace, "link_records", LINK)
    assert gated.outcome.status is RunStatus.AWAITING_APPROVAL
    assert query(workspace, "SELECT count(*) FROM product_categories WHERE product_id = 2") == [
        (1,)
    ]
    done = gated.decide("approve")
    assert done.status is RunStatus.COMPLETED
    assert (
        gated.tool_message().content == "product_categories: linked product_id=2 and category_id=3."
    )
    rows = query(workspace, "SELECT * FROM product_categories WHERE product_id = 2 ORDER BY 2")
    assert rows == [(2, 3), (2, 5)]
    again = invoke(workspace, "link_records", LINK)
    assert again.content == "Error: this link exists already in product_categories."


def test_a_denied_link_writes_nothing(workspace: Workspace) -> None:
    gated = gated_run(workspace, "link_records", LINK)
    gated.decide("deny")
    assert query(workspace, "SELECT count(*) FROM product_categories") == [(4,)]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"table": "orders", "values": {"customer_id": 1, "status": "x"}},
         "table 'orders' is not a join table (two or more foreign keys to readable tables)."),
        ({"table": "sessions", "values": {"customer_id": 1, "id": 2}},
         "table 'sessions' not found or not permitted."),
        ({"table": "nowhere", "values": {"a": 1, "b": 2}},
         "table 'nowhere' not found or not permitted."),
        ({"table": "product_categories", "values": {"product_id": 2, "category_id": 99}},
         "no row of categories has id 99."),
        ({"table": "product_categories", "values": {"product_id": 99, "category_id": 1}},
         "no row of products has id 99."),
        ({"table": "product_categories", "values": {"product_id": 1, "category_id": 3}},
         "this link exists already in product_categories."),
        ({"table": "product_categories", "values": {"product_id": 2, "nope": 3}},
         "values must name existing, non-sensitive columns, two or more of them foreign keys."),
        ({"table": "order_lines", "values": {"order_id": 1, "quantity": 2}},
         "values must name existing, non-sensitive columns, two or more of them foreign keys."),
    ],
)  # fmt: skip
def test_link_refusals_in_the_tool_and_its_preview(
    workspace: Workspace, arguments: dict[str, Any], error: str
) -> None:
    assert invoke(workspace, "link_records", arguments).content == "Error: " + error
    assert preview(workspace, "link_records", arguments) == [f"The call will be refused: {error}"]


@pytest.mark.parametrize(
    ("values", "error"),
    [
        ({"product_id": 2}, "values: Dictionary should have at least 2 items after validation"),
        ({"product_id": [2], "category_id": 1}, "values.product_id.str: Input should be a valid"),
        ("product_id=2", "values: Input should be a valid dictionary"),
    ],
)
def test_malformed_links(workspace: Workspace, values: Any, error: str) -> None:
    result = invoke(workspace, "link_records", {"table": "product_categories", "values": values})
    assert result.content.startswith(f'Error: invalid arguments for tool "link_records": {error}')


def test_a_link_with_extra_columns(workspace: Workspace) -> None:
    with database_of(workspace) as db:
        db.execute(
            "CREATE TABLE favourites (customer_id INT REFERENCES customers(id),"
            " product_id INT REFERENCES products(id), note TEXT, secret_token TEXT)"
        )
    values = {"customer_id": 1, "product_id": 4, "note": "gift\nidea"}
    assert preview(workspace, "link_records", {"table": "favourites", "values": values}) == [
        "link in favourites:",
        "customer_id: 1 (customers: Ada Lovelace)",
        "product_id: 4 (products: Fountain pen)",
        "note: gift idea",
    ]
    hidden = {**values, "secret_token": "x"}
    refused = invoke(workspace, "link_records", {"table": "favourites", "values": hidden})
    assert refused.content.endswith("two or more of them foreign keys.")
    assert ADA_HASH not in str(preview(workspace, "link_records", {"table": "favourites",
                                                                   "values": values}))  # fmt: skip


# -- set_field -------------------------------------------------------------------------------


def test_set_field_previews_before_and_after(workspace: Workspace) -> None:
    arguments = {"table": "customers", "id": 2, "column": "city", "value": "Paris"}
    assert preview(workspace, "set_field", arguments) == [
        "set customers row 2:", "city: Arlington → Paris",
    ]  # fmt: skip
    missing = {**arguments, "id": 99}
    assert preview(workspace, "set_field", missing) == [
        "set customers row 99:", "no row of customers has id 99; nothing would change.",
    ]  # fmt: skip


def test_an_approved_set_field_writes_one_column(workspace: Workspace) -> None:
    arguments = {"table": "customers", "id": 2, "column": "city", "value": "Paris"}
    gated = gated_run(workspace, "set_field", arguments)
    assert query(workspace, "SELECT city FROM customers WHERE id = 2") == [("Arlington",)]
    assert gated.decide("approve").status is RunStatus.COMPLETED
    assert gated.tool_message().content == "customers row 2: 1 row updated."
    assert query(workspace, "SELECT city, name FROM customers WHERE id = 2") == [
        ("Paris", "Grace Hopper")
    ]


@pytest.mark.parametrize("column", ["password_hash", "api_token", "id", "nope"])
def test_set_field_refuses_sensitive_key_and_unknown_columns(
    workspace: Workspace, column: str
) -> None:
    arguments = {"table": "customers", "id": 1, "column": column, "value": "x"}
    error = "column must be an existing, non-sensitive, non-key column."
    assert invoke(workspace, "set_field", arguments).content == f"Error: {error}"
    assert preview(workspace, "set_field", arguments) == [f"The call will be refused: {error}"]
    assert query(workspace, "SELECT password_hash FROM customers WHERE id = 1") == [(ADA_HASH,)]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"table": "sessions", "id": 1, "column": "customer_id", "value": 2},
         "Error: table 'sessions' not found or not permitted."),
        ({"table": "product_categories", "id": 1, "column": "product_id", "value": 2},
         "Error: table 'product_categories' has no single-column primary key."),
        ({"table": "customers", "id": "one", "column": "city", "value": "x"},
         'Error: invalid arguments for tool "set_field": id: Input should be a valid integer,'
         " unable to parse string as an integer"),
        ({"table": "customers", "id": 1, "column": "city", "value": {"a": 1}},
         'Error: invalid arguments for tool "set_field": value.str: Input should be a valid'
         " string; value.int: Input should be a valid integer; value.float: Input should be a"
         " valid number; value.bool: Input should be a valid boolean"),
        ({"table": "customers", "id": 1, "column": "name", "value": None},
         "Error: the workspace database refused the write."),
    ],
)  # fmt: skip
def test_set_field_refusals(workspace: Workspace, arguments: dict[str, Any], error: str) -> None:
    assert invoke(workspace, "set_field", arguments).content == error


VALUES = st.one_of(
    st.text(max_size=40), st.integers(-(2**62), 2**62), st.booleans(), st.none(),
    st.sampled_from(["a@b.example", "sk-abcdefghijklmnopqrstuvwx", "x" * 400, "\n\n"]),
)  # fmt: skip


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=VALUES)
def test_writers_answer_in_text_alone(workspace: Workspace, value: Any) -> None:
    """No artifact from either writer, so none can show more than the text; the preview shows
    each value as the read tools would."""
    arguments = {"table": "notes", "id": 1, "column": "body", "value": value}
    lines = preview(workspace, "set_field", arguments)
    assert lines[0] == "set notes row 1:" and lines[1].startswith("body: ")
    assert "\n" not in lines[1] and len(lines[1]) < 700
    result = invoke(workspace, "set_field", arguments)
    assert result.artifacts == ()
    link = invoke(workspace, "link_records", {"table": "notes", "values": {"body": value, "id": 1}})
    assert link.artifacts == () and link.is_error
