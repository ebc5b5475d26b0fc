"""A call's arguments decode to a JSON object or to nothing, whatever text the model sent."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolwire import ToolCall


def reference(text: str) -> dict[str, Any] | None:
    """What the arguments mean, by the standard decoder: an object, else nothing; NaN and
    Infinity are not JSON; blank text is no arguments."""
    if not text.strip(" \t\n\r") or text.isspace():
        return {}

    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        value = json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    containers,
    max_leaves=8,
)
# JSON's own whitespace, and characters Python calls space that JSON does not
spaces = st.sampled_from(["", " ", "\t\n", "\r\n ", "\x0b", "\x0c", "\u00a0", " \u2028"])
tails = st.sampled_from(["", "}", "{}", "x", ",", "]", "\x00"])


@given(value=json_values, before=spaces, after=spaces, tail=tails)
def test_arguments_decode_as_the_standard_decoder_reads_them(
    value: Any, before: str, after: str, tail: str
) -> None:
    text = before + json.dumps(value) + after + tail
    assert ToolCall("c1", "add", text).decoded_arguments() == reference(text)


objects = st.dictionaries(st.text(max_size=4), json_values, max_size=3)


@given(value=objects, after=spaces, tail=tails)
def test_an_object_and_what_follows_it_decode_as_the_standard_decoder_reads_them(
    value: dict[str, Any], after: str, tail: str
) -> None:
    text = json.dumps(value) + after + tail  # the common case: an object from the first "{"
    assert ToolCall("c1", "add", text).decoded_arguments() == reference(text)


@given(text=st.text(max_size=40))
def test_any_text_decodes_to_an_object_or_to_nothing(text: str) -> None:
    assert ToolCall("c1", "add", text).decoded_arguments() == reference(text)


def test_arguments_nested_past_the_decoder_s_depth_are_nothing() -> None:
    text = '{"a": ' * 100_000 + "1" + "}" * 100_000
    assert ToolCall("c1", "add", text).decoded_arguments() is None
