from __future__ import annotations

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
