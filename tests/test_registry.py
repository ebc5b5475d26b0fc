from __future__ import annotations

from pathlib import Path

import pytest

from toolwire import ToolRegistry, tool
from toolwire.core.errors import DuplicateToolError, ToolError
from toolwire.tools import Availability
from toolwire.tools.api import FunctionTool

from .fakes import PLUGIN, plugin


@tool(group="files", data_class="content")
def a() -> str:
    return "a"


@tool(group="files", enabled_by_default=False, data_class="content")
def b() -> str:
    return "b"


@tool(group="system", data_class="system_diagnostics")
def c() -> str:
    return "c"


def test_duplicate_names_are_refused() -> None:
    registry = ToolRegistry([a])
    with pytest.raises(DuplicateToolError, match='"a" is already registered'):
        registry.register(a)


def test_registration_order_and_specs_order() -> None:
    registry = ToolRegistry([c, a, b])
    assert registry.names() == ["c", "a", "b"]
    assert [s.name for s in registry.specs(["a", "c"])] == ["c", "a"]
    assert registry.groups() == ["system", "files"]


def test_defaults_decide_without_overrides() -> None:
    registry = ToolRegistry([a, b, c])
    assert registry.enabled_names() == ["a", "c"]


def test_tool_override_enables_and_disables() -> None:
    registry = ToolRegistry([a, b, c])
    registry.availability.set_tool("b", True)
    registry.availability.set_tool("a", False)
    assert registry.enabled_names() == ["b", "c"]
    registry.availability.set_tool("a", None)
    assert registry.enabled_names() == ["a", "b", "c"]


def test_a_tool_override_never_reenables_a_tool_in_a_disabled_group() -> None:
    registry = ToolRegistry([a, b, c], Availability(tools={"b": True}, groups={"files": False}))
    assert registry.enabled_names() == ["c"]
    state = {s.name: s for s in registry.states()}["b"]
    assert (state.enabled, state.tool_enabled, state.group_enabled, state.overridden) == (
        False,
        True,
        False,
        True,
    )


def test_states_rows() -> None:
    (row,) = ToolRegistry([b]).states()
    assert row.name == "b" and row.group == "files"
    assert (row.enabled, row.default_enabled, row.overridden) == (False, False, False)


def test_discovery_of_a_single_tool(on_path: Path) -> None:
    plugin(on_path, PLUGIN, "greet = twplugin:greet")
    registry = ToolRegistry()
    assert registry.discover() == ["greet"]
    assert registry.get("greet") is not None


def test_discovery_of_a_factory(on_path: Path) -> None:
    plugin(on_path, PLUGIN, "all = twplugin:all_tools")
    assert ToolRegistry().discover() == ["greet", "wave"]


def test_a_broken_entry_point_is_logged_and_skipped(
    on_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plugin(on_path, PLUGIN, "bad = twplugin:broken\ngreet = twplugin:greet")
    assert ToolRegistry().discover() == ["greet"]
    assert "'bad' failed to load" in caplog.text


def test_a_plugin_cannot_shadow_a_registered_tool(
    on_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    plugin(on_path, PLUGIN, "greet = twplugin:greet\nwave = twplugin:wave")
    own = tool(name="greet", data_class="public")(lambda: "built-in")
    registry = ToolRegistry([own])
    assert registry.discover() == ["wave"]
    assert registry.get("greet") is own
    assert "'greet' is already registered" in caplog.text


@pytest.mark.parametrize(
    "name", ["with space", "dotted.name", "9starts_with_digit", "x" * 65, "ünïcode", "a/b"]
)
def test_a_name_some_provider_would_refuse_is_refused_at_registration(name: str) -> None:
    with pytest.raises(ToolError, match="would be refused by a provider"):
        ToolRegistry([FunctionTool(lambda: "x", name=name)])


@pytest.mark.parametrize("name", ["a", "_private", "get-page_2", "x" * 64])
def test_names_every_provider_accepts_register(name: str) -> None:
    assert ToolRegistry([FunctionTool(lambda: "x", name=name)]).names() == [name]
