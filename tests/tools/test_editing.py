from __future__ import annotations

import pytest

from toolwire import ChatMessage, RunOptions, ToolContext, ToolLoop, User
from toolwire.core.lifecycle import RunStatus
from toolwire.demo._content import CUSTOMERS
from toolwire.tools.api import Effect, needs_approval
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace

from ..fakes import RecordingProvider, call
from .conftest import NOTES, gated_run, invoke, preview, query

ADA_HASH, ADA_TOKEN = CUSTOMERS[0][3], CUSTOMERS[0][4]
UPDATE_COLUMNS = "Error: values may only name existing, non-sensitive, non-key columns."
INSERT_COLUMNS = "Error: values may only name existing, non-sensitive columns."


def city_of_ada(workspace: Workspace) -> str:
    return str(query(workspace, "SELECT city FROM customers WHERE id = 1")[0][0])


def enabled_registry() -> ToolRegistry:
    registry = ToolRegistry(builtin_tools())
    registry.availability.set_tool("update_record", True)
    registry.availability.set_tool("insert_record", True)
    return registry


@pytest.mark.parametrize(
    ("name", "effect"),
    [("update_record", Effect.IDEMPOTENT_WRITE), ("insert_record", Effect.NON_IDEMPOTENT_WRITE)],
)
def test_record_writers_ship_disabled_and_need_approval(name: str, effect: Effect) -> None:
    registry = ToolRegistry(builtin_tools())
    tool = registry.get(name)
    assert tool is not None
    traits = (tool.requires_approval, tool.enabled_by_default, tool.group, tool.data_class)
    assert traits == (True, False, "editing", "content")
    assert getattr(tool, "effect", None) is effect and needs_approval(tool)
    assert name not in registry.enabled_names()


def test_enabled_and_offered_it_suspends_the_run_before_executing(workspace: Workspace) -> None:
    provider = RecordingProvider.of(
        [
            {"tool_calls": [call("update_record", {"table": "customers", "id": 1,
                                                   "values": {"city": "Paris"}})]},
            {"content": "done"},
        ]
    )  # fmt: skip
    result = ToolLoop(provider, enabled_registry()).run_sync(
        [ChatMessage.user("move Ada")],
        context=ToolContext(user=User("admin", is_admin=True), workspace=workspace),
        options=RunOptions(allowed_tools=["update_record"]),
    )
    assert provider.requests[0].tools[0].name == "update_record"
    assert result.trace == () and result.suspended is not None
    assert city_of_ada(workspace) == "London"


# -- update_record: preview ---------------------------------------------------------------


def test_update_preview_shows_each_column_before_and_after(workspace: Workspace) -> None:
    values = {"city": "Paris", "email": "ada@example.org"}
    lines = preview(workspace, "update_record", {"table": "customers", "id": 1, "values": values})
    assert lines == [
        "update customers row 1:",
        "city: London → Paris",
        "email: ada@example.com → ada@example.org",
    ]


def test_update_preview_formats_cells_like_the_read_tools(workspace: Workspace) -> None:
    arguments = {"table": "customers", "id": 2, "values": {"city": None, "name": "G\nH"}}
    lines = preview(workspace, "update_record", arguments)
    assert lines == [
        "update customers row 2:",
        "city: Arlington → null",
        "name: Grace Hopper → G H",
    ]


def test_update_preview_says_when_no_row_has_the_id(workspace: Workspace) -> None:
    arguments = {"table": "customers", "id": 99, "values": {"city": "Paris"}}
    assert preview(workspace, "update_record", arguments) == [
        "update customers row 99:",
        "no row of customers has id 99; nothing would change.",
    ]


@pytest.mark.parametrize("column", ["password_hash", "api_token", "nickname", "id"])
def test_update_preview_never_shows_a_sensitive_or_unknown_column(
    workspace: Workspace, column: str
) -> None:
    arguments = {"table": "customers", "id": 1, "values": {"city": "Paris", column: "x"}}
    lines = preview(workspace, "update_record", arguments)
    assert lines == [f"The call will be refused: {UPDATE_COLUMNS.removeprefix('Error: ')}"]
    assert ADA_HASH not in str(lines) and ADA_TOKEN not in str(lines)


@pytest.mark.parametrize("table", ["sessions", "sqlite_master", "nowhere"])
def test_update_preview_of_a_hidden_table_confirms_nothing(
    workspace: Workspace, table: str
) -> None:
    lines = preview(workspace, "update_record", {"table": table, "id": 1, "values": {"a": 1}})
    assert lines == [f"The call will be refused: table '{table}' not found or not permitted."]


# -- update_record: the call itself ---------------------------------------------------------


def test_update_changes_one_row(workspace: Workspace) -> None:
    result = invoke(workspace, "update_record", {"table": "customers", "id": 1,
                                                 "values": {"city": "Paris"}})  # fmt: skip
    assert (result.is_error, result.content) == (False, "customers row 1: 1 row updated.")
    assert query(workspace, "SELECT id, city FROM customers ORDER BY id")[:2] == [
        (1, "Paris"),
        (2, "Arlington"),
    ]


@pytest.mark.parametrize("column", ["password_hash", "api_token", "nickname", "id"])
def test_update_refuses_sensitive_unknown_and_key_columns(
    workspace: Workspace, column: str
) -> None:
    result = invoke(workspace, "update_record", {"table": "customers", "id": 1,
                                                 "values": {column: "x"}})  # fmt: skip
    assert (result.is_error, result.content) == (True, UPDATE_COLUMNS)
    assert query(workspace, "SELECT password_hash, api_token FROM customers WHERE id = 1") == [
        (ADA_HASH, ADA_TOKEN)
    ]


def test_update_refuses_a_table_without_a_single_key(workspace: Workspace) -> None:
    result = invoke(workspace, "update_record", {"table": "wide", "id": 1, "values": {"c1": 9}})
    assert result.content == "Error: table 'wide' has no single-column primary key."
    assert preview(workspace, "update_record", {"table": "wide", "id": 1, "values": {"c1": 9}}) == [
        "The call will be refused: table 'wide' has no single-column primary key."
    ]


# -- insert_record ------------------------------------------------------------------------


def test_insert_preview_lists_the_row_in_table_column_order(workspace: Workspace) -> None:
    values = {"stock": 3, "name": "Notebook", "sku": "NB-05", "price_cents": 900}
    assert preview(workspace, "insert_record", {"table": "products", "values": values}) == [
        "insert into products:",
        "sku: NB-05",
        "name: Notebook",
        "price_cents: 900",
        "stock: 3",
    ]


@pytest.mark.parametrize("column", ["password_hash", "api_token", "nickname"])
def test_insert_refuses_sensitive_and_unknown_columns(workspace: Workspace, column: str) -> None:
    arguments = {"table": "customers", "values": {"name": "Eve", column: "pw"}}
    result = invoke(workspace, "insert_record", arguments)
    assert (result.is_error, result.content) == (True, INSERT_COLUMNS)
    assert preview(workspace, "insert_record", arguments) == [
        f"The call will be refused: {INSERT_COLUMNS.removeprefix('Error: ')}"
    ]
    assert query(workspace, "SELECT count(*) FROM customers") == [(len(CUSTOMERS),)]


def test_insert_answers_with_the_new_primary_key(workspace: Workspace) -> None:
    result = invoke(workspace, "insert_record", {"table": "notes", "values": {"body": "new"}})
    assert (result.is_error, result.content) == (False, f"notes: 1 row inserted, id = {NOTES + 1}.")
    assert query(workspace, f"SELECT body FROM notes WHERE id = {NOTES + 1}") == [("new",)]


def test_insert_into_a_table_without_a_key_names_none(workspace: Workspace) -> None:
    result = invoke(workspace, "insert_record", {"table": "wide", "values": {"c1": 7}})
    assert result.content == "wide: 1 row inserted."
    assert query(workspace, "SELECT c1, c2 FROM wide ORDER BY rowid") == [(1, 2), (7, None)]


def test_a_constraint_failure_is_a_generic_refusal(workspace: Workspace) -> None:
    values = {"sku": "MUG-01", "name": "Mug again", "price_cents": 1, "stock": 1}
    result = invoke(workspace, "insert_record", {"table": "products", "values": values})
    assert (result.is_error, result.content) == (
        True,
        "Error: the workspace database refused the write.",
    )
    assert query(workspace, "SELECT count(*) FROM products") == [(4,)]


# -- through Runtime: suspend, approve, deny ------------------------------------------------


def test_update_waits_then_runs_once_when_approved(workspace: Workspace) -> None:
    gated = gated_run(workspace, "update_record",
                      {"table": "customers", "id": 1, "values": {"city": "Paris"}})  # fmt: skip
    assert gated.outcome.status is RunStatus.AWAITING_APPROVAL
    pause = gated.outcome.pause
    assert pause is not None
    assert [p.lines for p in pause.previews] == [
        ("update customers row 1:", "city: London → Paris")
    ]
    assert city_of_ada(workspace) == "London"
    resumed = gated.decide("approve")
    assert resumed.status is RunStatus.COMPLETED and resumed.result is not None
    assert resumed.result.final_content == "done"
    assert gated.tool_message().content == "customers row 1: 1 row updated."
    assert city_of_ada(workspace) == "Paris"
    tool_turns = [m for m in gated.provider.requests[-1].messages if m.role == "tool"]
    assert len(tool_turns) == 1


def test_update_denied_leaves_the_row_and_tells_the_model(workspace: Workspace) -> None:
    gated = gated_run(workspace, "update_record",
                      {"table": "customers", "id": 1, "values": {"city": "Paris"}})  # fmt: skip
    resumed = gated.decide("deny")
    assert resumed.status is RunStatus.COMPLETED
    message = gated.tool_message()
    assert (message.is_error, message.content) == (
        True,
        'Error: tool "update_record" was denied by the operator.',
    )
    assert city_of_ada(workspace) == "London"


def test_insert_waits_then_inserts_exactly_one_row(workspace: Workspace) -> None:
    gated = gated_run(workspace, "insert_record", {"table": "notes", "values": {"body": "hi"}})
    pause = gated.outcome.pause
    assert pause is not None and pause.previews[0].lines == ("insert into notes:", "body: hi")
    assert query(workspace, "SELECT count(*) FROM notes") == [(NOTES,)]
    gated.decide("approve")
    assert gated.tool_message().content == f"notes: 1 row inserted, id = {NOTES + 1}."
    assert query(workspace, "SELECT count(*) FROM notes WHERE body = 'hi'") == [(1,)]
    assert query(workspace, "SELECT count(*) FROM notes") == [(NOTES + 1,)]
