from __future__ import annotations

from toolwire.tools import api
from toolwire.tools.api import reaches_outside, title_of
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.defaults import default_registry


def test_default_registry_starts_with_every_built_in() -> None:
    names = [t.spec.name for t in builtin_tools()]
    assert len(names) == len(set(names)) == 39
    assert default_registry().names()[: len(names)] == names


def test_every_built_in_has_a_description_and_an_object_schema() -> None:
    for tool in builtin_tools():
        assert tool.spec.description, tool.spec.name
        assert tool.spec.parameters["type"] == "object"
        assert "context" not in tool.spec.parameters.get("properties", {})


def test_only_the_built_in_that_makes_requests_reaches_outside_the_workspace() -> None:
    outside = [t.spec.name for t in builtin_tools() if reaches_outside(t)]
    assert outside == ["probe_url"]  # an HTTP request to the workspace's own base URL


def test_a_tool_has_its_own_title_or_its_name_made_readable() -> None:
    @api.tool(title="Weather now", open_world=True)
    def weather(city: str) -> str:
        """Say the weather."""
        return city

    @api.tool
    def read_the_log_tail() -> str:
        """Read it."""
        return ""

    assert (title_of(weather), reaches_outside(weather)) == ("Weather now", True)
    assert (title_of(read_the_log_tail), reaches_outside(read_the_log_tail)) == (
        "Read the log tail", False)  # fmt: skip
