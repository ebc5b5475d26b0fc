"""A server's requested form read as fields, and answers checked against it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire.core.errors import InvalidInput
from toolwire.mcp.form import MAX_FIELDS, WORDS_CHARS, checked_answer, form_of, words

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "default": "Ada"},
        "size": {"type": "number", "maximum": 10},
        "tier": {"oneOf": [{"const": "a", "title": "<i>A</i>"}, {"const": "b", "title": "B"}]},
        "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 1},
        "ok": {"type": "boolean", "default": False},
    },
    "required": ["tier"],
}


def test_a_flat_form_is_read_with_its_choices_defaults_and_bounds() -> None:
    fields = form_of(FORM)
    assert [(f.name, f.kind, f.default, f.choices, f.minimum, f.maximum) for f in fields] == [
        ("name", "string", "Ada", (), 2.0, None),
        ("size", "number", None, (), None, 10.0),
        ("tier", "choice", None, ("a", "b"), None, None),
        ("tags", "choices", None, ("x", "y"), None, 1.0),
        ("ok", "boolean", False, (), None, None),
    ]
    assert fields[2].labels == ("<i>A</i>", "B")  # text: the page shows it as text


def test_an_answer_takes_the_defaults_of_what_it_leaves_out() -> None:
    assert checked_answer(form_of(FORM), {"tier": "b", "size": 2.5, "tags": ["y"]}) == {
        "name": "Ada", "size": 2.5, "tier": "b", "tags": ["y"], "ok": False}  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({}, "tier: required, and it has no default"),
        ({"tier": "c"}, 'tier: "c" is not one of the choices offered'),
        ({"tier": "a", "size": 11}, "size: is over the most allowed, 10"),
        ({"tier": "a", "size": True}, "size: is not a number"),
        ({"tier": "a", "name": "A"}, "name: is under the least allowed, 2 characters"),
        ({"tier": "a", "tags": ["x", "y"]}, "tags: is over the most allowed, 1 choices"),
        ({"tier": "a", "ok": "yes"}, "ok: is not true or false"),
    ],
)
def test_an_answer_that_does_not_fit_names_the_problem(
    answer: dict[str, Any], problem: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        checked_answer(form_of(FORM), answer)
    assert str(raised.value) == f"the answer does not fit the form: {problem}"


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"type": "array"}, "the requested schema is not an object"),
        ({"properties": {"a": {"type": "object"}}},
         "field 'a': type \"object\" is not a flat primitive"),
        ({"properties": {"a": {"type": "integer", "enum": ["1"]}}},
         "field 'a': a choice must be of strings"),
        ({"properties": {"a": {"enum": [1, 2]}}}, "field 'a': a choice's values must be strings"),
        ({"properties": {"a": {"type": "integer", "default": "x"}}},
         "field 'a': its default is not a whole number"),
        ({"properties": {f"f{i}": {"type": "string"} for i in range(MAX_FIELDS + 1)}},
         f"the form asks for {MAX_FIELDS + 1} fields, over {MAX_FIELDS}"),
    ],
)  # fmt: skip
def test_a_form_that_is_not_flat_is_refused_naming_why(schema: object, problem: str) -> None:
    with pytest.raises(ValueError) as raised:
        form_of(schema)
    assert str(raised.value) == problem


@given(st.text())
def test_a_servers_words_are_valid_text_within_their_bound(text: str) -> None:
    kept = words(text)
    assert len(kept) <= WORDS_CHARS and "\x00" not in kept
    kept.encode("utf-8")  # no lone surrogate
