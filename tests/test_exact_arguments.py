"""A tool whose parameters are plain ``int``, ``str``, ``float`` and ``bool`` skips the validator
for arguments of exactly those types: what it is called with is what validation would give,
for any arguments a model may send, and anything else still goes through the validator."""

from __future__ import annotations

import math
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import Field

from toolwire import ToolContext, ToolRefusal, tool
from toolwire.tools.api import FunctionTool

seen: list[dict[str, Any]] = []


@tool
def plain(a: int, s: str, x: float, flag: bool) -> str:
    """Every plain type."""
    seen.append({"a": a, "s": s, "x": x, "flag": flag})
    return "ok"


values = st.one_of(
    st.integers(), st.text(max_size=5), st.floats(allow_nan=True), st.booleans(), st.none(),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)  # fmt: skip


def _called_with(tool_: FunctionTool, arguments: dict[str, Any]) -> dict[str, Any] | str:
    seen.clear()
    try:
        tool_.execute(arguments, ToolContext())
    except ToolRefusal as exc:
        return f"refused: {exc}"
    return seen[0]


def _validated(tool_: FunctionTool, arguments: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return tool_.validate(arguments)
    except ToolRefusal as exc:
        return f"refused: {exc}"


def _same(left: object, right: object) -> bool:
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    return type(left) is type(right) and left == right


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "s", "x", "flag", "other"]), values, max_size=5))
def test_a_plain_tool_is_called_with_what_validation_gives_for_any_arguments(
    arguments: dict[str, Any],
) -> None:
    assert _same(_called_with(plain, arguments), _validated(plain, arguments))


def test_arguments_of_exactly_the_declared_types_skip_the_validator() -> None:
    calls: list[object] = []
    validate = plain._validate

    def counted(arguments: object) -> Any:
        calls.append(arguments)
        return validate(arguments)

    plain._validate = counted  # type: ignore[assignment]
    try:
        plain.execute({"a": 1, "s": "t", "x": 1.5, "flag": True}, ToolContext())
        assert calls == []
        plain.execute({"a": "1", "s": "t", "x": 1.5, "flag": True}, ToolContext())  # lax: "1"
        plain.execute({"a": 1, "s": "t", "x": 1, "flag": True}, ToolContext())  # int for float
        plain.execute({"a": True, "s": "t", "x": 1.5, "flag": True}, ToolContext())  # bool for int
        with pytest.raises(ToolRefusal, match="Extra inputs"):
            plain.execute({"a": 1, "s": "t", "x": 1.5, "flag": True, "b": 2}, ToolContext())
    finally:
        plain._validate = validate
    assert len(calls) == 4


@pytest.mark.parametrize(
    "function",
    [
        lambda a=1: str(a),  # a default
        lambda a: str(a),  # no annotation
    ],
)
def test_a_parameter_that_is_not_a_plain_required_type_always_validates(function: Any) -> None:
    assert tool(function)._exact is None


def test_a_constrained_or_listed_parameter_always_validates() -> None:
    @tool
    def short(name: Annotated[str, Field(max_length=3)]) -> str:
        """Short."""
        return name

    @tool
    def listed(items: list[int]) -> str:
        """Listed."""
        return str(items)

    assert short._exact is None and listed._exact is None
    with pytest.raises(ToolRefusal, match="at most 3"):
        short.execute({"name": "long"}, ToolContext())
