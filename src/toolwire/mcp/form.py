"""The form an MCP server asks a person to fill (``elicitation/create``, form mode), and an
answer checked against it.

A requested schema is flat: an object whose properties are each a string, a number, an
integer, a boolean, a single choice (``enum``, or ``oneOf`` of titled ``const``s: SEP-1330) or
a multiple choice (an ``array`` whose ``items`` are such choices), each with an optional
``default`` (SEP-1034). Anything else (a nested object, a reference, a choice that is not of
strings) is refused with an error naming the field. A server's words (a title, a description,
a choice's title) are untrusted: each is kept as text only, UTF-8 coerced and cut.

An answer is checked field by field: a key the form does not ask for, a value of the wrong
type, a choice that is not offered, a length or a bound not kept, each is named; a field left
out takes its default, and a required field with neither is named too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from toolwire.core.errors import InvalidInput
from toolwire.core.jsonenc import dumps
from toolwire.core.reprs import count, ident, tagged
from toolwire.core.text import storable

MAX_FIELDS = 32  # a form a person reads through, not a dump of a schema
MAX_CHOICES = 100  # one select a person can scan
WORDS_CHARS = 500  # a field's title or description, a choice's title
NAME_CHARS = 64  # a field's name
MAX_TEXT_CHARS = 10_000  # one answered string: a paragraph, not a file
MAX_PROBLEMS = 10  # problems named in one error

Kind = Literal["string", "number", "integer", "boolean", "choice", "choices"]
Value = str | int | float | bool | list[str]


def words(text: object, limit: int = WORDS_CHARS) -> str:
    """A server's text as toolwire keeps it: a string, UTF-8 coerced, at most ``limit``."""
    if not isinstance(text, str):
        return ""
    kept = storable(text)
    return kept if len(kept) <= limit else kept[: limit - 1] + "…"


@dataclass(frozen=True, slots=True, kw_only=True)
class Field:
    """One field of a form."""

    name: str
    kind: Kind
    title: str = ""
    description: str = ""
    required: bool = False
    default: Value | None = None
    choices: tuple[str, ...] = ()  # a choice's values, in the server's order
    labels: tuple[str, ...] = ()  # their titles, when the server gave them
    minimum: float | None = None  # a number's bound, a string's or a list's length
    maximum: float | None = None

    def __repr__(self) -> str:
        return tagged("Field", name=ident(self.name), kind=self.kind,
                      choices=count(self.choices))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """The field as the inspector's panel and ``runs pending --json`` show it."""
        return {"name": self.name, "kind": self.kind, "title": self.title,
                "description": self.description, "required": self.required,
                "default": self.default, "choices": list(self.choices),
                "labels": list(self.labels), "minimum": self.minimum,
                "maximum": self.maximum}  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Field:
        """The field ``to_dict`` gave (as a store keeps it); ``ValueError`` for one that is
        not such a field."""
        try:
            kept = {**data, "choices": tuple(data.get("choices") or ()),
                    "labels": tuple(data.get("labels") or ())}  # fmt: skip
            field = cls(**kept)
        except TypeError:
            raise ValueError("a stored field is not a form's field") from None
        if field.kind not in ("string", "number", "integer", "boolean", "choice", "choices"):
            raise ValueError("a stored field is not a form's field")
        return field


def form_of(schema: object) -> tuple[Field, ...]:
    """The fields ``schema`` asks for; ``ValueError`` naming what is not a flat form."""
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise ValueError("the requested schema is not an object")
    properties = schema.get("properties") or {}
    if not isinstance(properties, Mapping):
        raise ValueError("the requested schema's properties are not an object")
    if len(properties) > MAX_FIELDS:
        raise ValueError(f"the form asks for {len(properties)} fields, over {MAX_FIELDS}")
    required = schema.get("required") or []
    if not isinstance(required, list):
        raise ValueError("the requested schema's required is not a list")
    return tuple(_field(str(name), spec, name in required) for name, spec in properties.items())


def _field(name: str, spec: object, required: bool) -> Field:
    if len(name) > NAME_CHARS or not name or storable(name) != name:
        raise ValueError(f"a field's name is not a short plain name: {words(name, 80)!r}")
    if not isinstance(spec, Mapping):
        raise ValueError(f"field {name!r} is not described by an object")
    kind, choices, labels = _kind(name, spec)
    low, high = _bounds(kind, spec)
    field = Field(name=name, kind=kind, title=words(spec.get("title")),
                  description=words(spec.get("description")), required=required,
                  choices=choices, labels=labels, minimum=low, maximum=high)  # fmt: skip
    if "default" not in spec:
        return field
    try:
        default = check_value(field, spec["default"])
    except ValueError as exc:
        raise ValueError(f"field {name!r}: its default {exc}") from None
    return Field(**{**_fields(field), "default": default})


def _fields(field: Field) -> dict[str, Any]:
    return {slot: getattr(field, slot) for slot in Field.__slots__}


def _kind(name: str, spec: Mapping[str, Any]) -> tuple[Kind, tuple[str, ...], tuple[str, ...]]:
    declared = spec.get("type")
    if declared == "array":
        items = spec.get("items")
        if not isinstance(items, Mapping):
            raise ValueError(f"field {name!r}: a list's items must be choices")
        return ("choices", *_choices(name, items, "anyOf"))
    if "enum" in spec or "oneOf" in spec:
        if declared not in (None, "string"):
            raise ValueError(f"field {name!r}: a choice must be of strings")
        return ("choice", *_choices(name, spec, "oneOf"))
    if declared in ("string", "number", "integer", "boolean"):
        kind: Kind = declared
        return kind, (), ()
    raise ValueError(f"field {name!r}: type {words(dumps(declared), 40)} is not a flat primitive")


def _choices(
    name: str, spec: Mapping[str, Any], titled: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A choice's values and their titles: ``enum`` (with legacy ``enumNames``) or
    ``oneOf``/``anyOf`` of ``{const, title}``."""
    if titled in spec:
        options = spec[titled]
        if not isinstance(options, list) or not all(isinstance(o, Mapping) for o in options):
            raise ValueError(f"field {name!r}: {titled} must list {{const, title}} objects")
        values: object = [o.get("const") for o in options]
        labels = [words(o.get("title")) for o in options]
    else:
        values = spec.get("enum")
        names = spec.get("enumNames")
        labels = [words(n) for n in names] if isinstance(names, list) else []
    if not isinstance(values, list) or not values or len(values) > MAX_CHOICES:
        raise ValueError(f"field {name!r}: a choice needs 1 to {MAX_CHOICES} values")
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"field {name!r}: a choice's values must be strings")
    return tuple(storable(v) for v in values), tuple(labels[: len(values)])


def _bounds(kind: Kind, spec: Mapping[str, Any]) -> tuple[float | None, float | None]:
    keys = {"string": ("minLength", "maxLength"), "number": ("minimum", "maximum"),
            "integer": ("minimum", "maximum"),
            "choices": ("minItems", "maxItems")}.get(kind)  # fmt: skip
    if keys is None:
        return None, None
    low, high = (spec.get(key) for key in keys)
    return _number(low), _number(high)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def checked_answer(fields: tuple[Field, ...], values: Mapping[str, Any]) -> dict[str, Value]:
    """``values`` as the form asks for them, defaults filled in; ``InvalidInput`` naming every
    problem."""
    known = {field.name: field for field in fields}
    problems = [f"{words(key, NAME_CHARS)}: the form does not ask for it"
                for key in values if key not in known]  # fmt: skip
    answer: dict[str, Value] = {}
    for field in fields:
        if field.name in values and values[field.name] is not None:
            try:
                answer[field.name] = check_value(field, values[field.name])
            except ValueError as exc:
                problems.append(f"{field.name}: {exc}")
        elif field.default is not None:
            answer[field.name] = field.default
        elif field.required:
            problems.append(f"{field.name}: required, and it has no default")
    if problems:
        shown = "; ".join(problems[:MAX_PROBLEMS])
        raise InvalidInput(f"the answer does not fit the form: {shown}")
    return answer


def check_value(field: Field, value: object) -> Value:
    """``value`` as ``field`` takes it; ``ValueError`` saying what is wrong with it."""
    match field.kind:
        case "boolean":
            if not isinstance(value, bool):
                raise ValueError("is not true or false")
            return value
        case "integer" | "number":
            return _checked_number(field, value)
        case "string":
            text = _text(value)
            _within(field, len(text), "characters")
            return text
        case "choice":
            return _chosen(field, value)
        case "choices":
            if not isinstance(value, list):
                raise ValueError("is not a list of choices")
            picked = [_chosen(field, item) for item in value]
            _within(field, len(picked), "choices")
            return picked


def _checked_number(field: Field, value: object) -> int | float:
    whole = field.kind == "integer"
    if isinstance(value, float) and whole and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        raise ValueError("is not a whole number" if whole else "is not a number")
    if not math.isfinite(value):
        raise ValueError("is not a finite number")
    _within(field, value, "")
    return value


def _within(field: Field, amount: float, unit: str) -> None:
    suffix = f" {unit}" if unit else ""
    if field.minimum is not None and amount < field.minimum:
        raise ValueError(f"is under the least allowed, {field.minimum:g}{suffix}")
    if field.maximum is not None and amount > field.maximum:
        raise ValueError(f"is over the most allowed, {field.maximum:g}{suffix}")


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError("is not text")
    if len(value) > MAX_TEXT_CHARS:
        raise ValueError(f"is longer than {MAX_TEXT_CHARS} characters")
    return storable(value)


def _chosen(field: Field, value: object) -> str:
    if not isinstance(value, str) or value not in field.choices:
        raise ValueError(f"{words(dumps(value), 40)} is not one of the choices offered")
    return value
