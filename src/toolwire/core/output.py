"""A run's required answer shape: a JSON Schema its final answer must match.

A run given an :class:`OutputSchema` asks each API for it with the API's own mechanism (OpenAI's
``response_format``, Gemini's ``responseJsonSchema``, a forced answer tool for Anthropic; see
the adapters), then checks the answer here: it must be one JSON document, with no NaN or
infinity, that the schema accepts. The schema is the operator's, so it may go to the provider
and into every view; what the check says about a failing answer (:attr:`Checked.problem`) names
only the schema's own words (the path in the schema and the keyword that failed), never a value
of the answer, so it is metadata at every privacy level.

A pydantic model may stand for the schema in Python (``OutputSchema.of(Model)``): its JSON
Schema is sent and checked, and :meth:`OutputSchema.parse` builds the model from the answer.
The model class is not part of a suspended run's state; a resumed run's answer is plain JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match

# A schema travels in every request of the run: one past this is a mistake, not a shape.
MAX_SCHEMA_BYTES = 64 * 1024
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # what every API takes as a schema's or tool's name
DEFAULT_NAME = "answer"
_PROBLEM_CHARS = 300


class Checked(NamedTuple):
    """An answer checked against the schema: its value, or what is wrong with it."""

    value: Any = None
    problem: str | None = None  # None: the answer matches


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The JSON Schema a run's final answer must match, under ``name`` (the API's label)."""

    schema: Mapping[str, Any]
    name: str = DEFAULT_NAME
    # Ask the API to enforce the schema strictly where it can (OpenAI's ``strict``: the schema
    # must then be within its strict subset, e.g. ``additionalProperties: false`` and every
    # property required); the answer is checked here either way.
    strict: bool = False
    model: type[Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Mapping):
            raise ValueError("the output schema must be a JSON object")
        if not NAME.fullmatch(self.name):
            raise ValueError("the output schema's name must be 1 to 64 letters, digits, '_' or '-'")
        try:
            encoded = json.dumps(self.schema, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise ValueError(f"the output schema is not plain JSON: {error}") from None
        if len(encoded.encode()) > MAX_SCHEMA_BYTES:
            raise ValueError(f"the output schema is over {MAX_SCHEMA_BYTES} bytes")
        try:
            Draft202012Validator.check_schema(self.schema)
        except SchemaError as error:
            where = "/".join(str(p) for p in error.path) or "the top"
            raise ValueError(f"the output schema is not a valid JSON Schema (at {where})") from None
        object.__setattr__(self, "schema", json.loads(encoded))  # a plain copy, never shared

    @classmethod
    def of(cls, value: OutputSchema | Mapping[str, Any] | type[Any]) -> OutputSchema:
        """A schema from itself, a JSON Schema object, or a pydantic model class."""
        if isinstance(value, OutputSchema):
            return value
        if isinstance(value, Mapping):
            return cls(value)
        schema_of = getattr(value, "model_json_schema", None)
        if isinstance(value, type) and callable(schema_of):
            name = value.__name__ if NAME.fullmatch(value.__name__) else DEFAULT_NAME
            return cls(schema_of(), name, model=value)
        raise TypeError(
            "output takes a JSON Schema (a dict), a pydantic model class or an OutputSchema, "
            f"not {type(value).__name__}"
        )

    def check(self, text: str) -> Checked:
        """``text`` as the answer: its JSON value if the schema accepts it, else the problem."""
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return Checked(problem="the answer is not one JSON document")
        error = best_match(Draft202012Validator(self.schema).iter_errors(value))
        if error is None:
            return Checked(value)
        return Checked(problem=_problem(error))

    def parse(self, value: Any) -> Any:
        """The checked ``value`` as the pydantic model it was asked as, else as it is."""
        if self.model is None:
            return value
        return self.model.model_validate(value)

    def to_dict(self) -> dict[str, Any]:
        return {"schema": dict(self.schema), "name": self.name, "strict": self.strict}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OutputSchema:
        return cls(data["schema"], data.get("name", DEFAULT_NAME), data.get("strict", False))


def _problem(error: ValidationError) -> str:
    """Where in the schema the answer failed and which keyword: the schema's words only."""
    where = "/".join(str(p) for p in error.absolute_schema_path) or "the top"
    text = f"the answer does not match the schema at {where} ({error.validator}"
    wanted = error.validator_value
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [str(k) for k in wanted if k not in error.instance]  # the schema's names
        text += ": missing " + ", ".join(missing)
    elif error.validator == "type":
        text += ": wants " + (wanted if isinstance(wanted, str) else " or ".join(map(str, wanted)))
    text += ")"
    return text if len(text) <= _PROBLEM_CHARS else text[: _PROBLEM_CHARS - 1] + "…"
