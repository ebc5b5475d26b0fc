from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from toolwire import Tool, ToolContext, ToolRefusal, ToolResult, tool
from toolwire.tools.api import FunctionTool


@tool(group="records", data_class="content", requires_admin=True)
def find(
    table: Annotated[str, Field(description="Table to read")],
    limit: Annotated[int, Field(ge=1, le=50)] = 20,
    order: Literal["asc", "desc"] = "asc",
) -> str:
    """Find rows in a table."""
    return f"{table}:{limit}:{order}"


def test_builds_a_tool_with_schema_from_the_signature() -> None:
    assert isinstance(find, Tool)
    spec = find.spec
    assert (spec.name, spec.description) == ("find", "Find rows in a table.")
    assert spec.parameters["type"] == "object"
    assert spec.parameters["required"] == ["table"]
    props = spec.parameters["properties"]
    assert props["table"]["description"] == "Table to read"
    assert (props["limit"]["minimum"], props["limit"]["maximum"]) == (1, 50)
    assert props["order"]["enum"] == ["asc", "desc"]
    assert spec.parameters["additionalProperties"] is False
    assert (find.group, find.data_class, find.requires_admin) == ("records", "content", True)
    assert (find.enabled_by_default, find.requires_approval) == (True, False)


def execute(t: FunctionTool, arguments: dict[str, Any]) -> ToolResult:
    outcome = t.execute(arguments, ToolContext())
    if isinstance(outcome, ToolResult):
        return outcome
    return asyncio.run(outcome)  # type: ignore[arg-type]


def test_a_str_return_is_wrapped_as_text() -> None:
    result = execute(find, {"table": "orders", "limit": 3})
    assert (result.content, result.is_error, result.artifacts) == ("orders:3:asc", False, ())


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, 'invalid arguments for tool "find": table: Field required'),
        (
            {"table": "t", "limit": 500},
            'invalid arguments for tool "find": limit: Input should be less than or equal to 50',
        ),
        (
            {"table": "t", "order": "sideways"},
            "invalid arguments for tool \"find\": order: Input should be 'asc' or 'desc'",
        ),
        (
            {"table": ["x"], "surprise": 1},
            'invalid arguments for tool "find": table: Input should be a valid string; '
            "surprise: Extra inputs are not permitted",
        ),
    ],
)
def test_invalid_arguments_name_what_was_wrong(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolRefusal) as caught:
        find.execute(arguments, ToolContext())
    assert str(caught.value) == message


def test_argument_errors_do_not_echo_the_input_values() -> None:
    with pytest.raises(ToolRefusal) as caught:
        find.execute({"table": "t", "limit": "sk-live-SECRET"}, ToolContext())
    assert "sk-live-SECRET" not in str(caught.value)


def test_async_tools_are_awaited() -> None:
    @tool(name="later", description="Waits.")
    async def waits(n: int) -> ToolResult:
        await asyncio.sleep(0)
        return ToolResult.text(str(n))

    assert (waits.spec.name, waits.spec.description) == ("later", "Waits.")
    assert execute(waits, {"n": 4}).content == "4"


def test_the_context_parameter_is_injected_not_offered() -> None:
    @tool
    def me(context: ToolContext, prefix: str = "") -> str:
        return prefix + str(context.run_id)

    assert list(me.spec.parameters["properties"]) == ["prefix"]
    outcome = me.execute({"prefix": "run "}, ToolContext(run_id="r7"))
    assert isinstance(outcome, ToolResult) and outcome.content == "run r7"


def test_bare_decorator_defaults_are_strict() -> None:
    @tool
    def plain() -> str:
        return "x"

    assert (plain.group, plain.data_class) == ("custom", "secret_adjacent")


def test_bytes_returns_are_decoded_with_replacement() -> None:
    @tool
    def raw() -> bytes:
        return b"ok\xff"

    assert execute(raw, {}).content == "ok\ufffd"


def test_var_args_are_refused() -> None:
    with pytest.raises(TypeError, match="cannot take"):

        @tool
        def splat(*names: str) -> str:
            return ""


def test_only_the_first_paragraph_of_the_docstring_is_sent() -> None:
    @tool
    def documented() -> str:
        """Read the thing,
        carefully.

        Artifact: a table of internal shape the model never needs.
        """
        return ""

    assert documented.spec.description == "Read the thing, carefully."
