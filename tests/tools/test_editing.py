from __future__ import annotations

import sqlite3

from toolwire import ChatMessage, RunOptions, ToolContext, ToolLoop, User
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace import Workspace

from ..fakes import RecordingProvider, call


def city_of_ada(workspace: Workspace) -> str:
    assert workspace.database_url is not None
    path = workspace.database_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        (city,) = db.execute("SELECT city FROM customers WHERE id = 1").fetchone()
    db.close()
    return str(city)


def test_update_record_ships_disabled_and_needs_approval() -> None:
    registry = ToolRegistry(builtin_tools())
    tool = registry.get("update_record")
    assert tool is not None
    assert (tool.requires_approval, tool.enabled_by_default, tool.group) == (True, False, "editing")
    assert "update_record" not in registry.enabled_names()


def test_enabled_and_offered_it_suspends_the_run_before_executing(workspace: Workspace) -> None:
    registry = ToolRegistry(builtin_tools())
    registry.availability.set_tool("update_record", True)
    provider = RecordingProvider.of(
        [
            {
                "tool_calls": [
                    call(
                        "update_record",
                        {"table": "customers", "id": 1, "values": {"city": "Paris"}},
                    )
                ]
            },
            {"content": "done"},
        ]
    )
    result = ToolLoop(provider, registry).run_sync(
        [ChatMessage.user("move Ada")],
        context=ToolContext(user=User("admin", is_admin=True), workspace=workspace),
        options=RunOptions(allowed_tools=["update_record"]),
    )
    assert provider.requests[0].tools[0].name == "update_record"
    assert result.trace == () and result.suspended is not None
    assert city_of_ada(workspace) == "London"
