"""A run's output schema as a tool the model answers with, for an API without a native
structured answer (Anthropic's Messages API).

The request offers one more tool, named :func:`answer_tool_name` (``final_answer``, or with a
suffix when a real tool has that name), whose input schema is the run's schema (wrapped in an
object under ``answer`` when the schema is not an object's: a tool's input must be one). When the
run asks again for an answer in the schema, or no other tool may be called, the choice forces
that tool. The model's call of it is the answer: :func:`as_answer` turns it into the turn's
text (the JSON of its input), so the loop checks and keeps it like any answer, and it never
reaches the seam as a call.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from toolwire.core.output import OutputSchema
from toolwire.providers.base import CompletionRequest, CompletionResponse, Stop

ANSWER_TOOL = "final_answer"
WRAPPED = "answer"  # the one property of a wrapped schema
DESCRIPTION = (
    "Give your final answer by calling this tool with it, once you need no other tool. "
    "Its input must match the schema."
)


def answer_tool_name(request: CompletionRequest) -> str:
    """``final_answer``, or ``final_answer_2``... when one of the request's tools has it."""
    names = {t.name for t in request.tools}
    name, n = ANSWER_TOOL, 1
    while name in names:
        n += 1
        name = f"{ANSWER_TOOL}_{n}"
    return name


def wraps(output: OutputSchema) -> bool:
    """Whether the schema is not an object's, so the tool's input holds it under ``answer``."""
    return output.schema.get("type") != "object"


def input_schema(output: OutputSchema) -> dict[str, Any]:
    schema = dict(output.schema)
    if not wraps(output):
        return schema
    return {"type": "object", "properties": {WRAPPED: schema}, "required": [WRAPPED]}


def forced(request: CompletionRequest) -> bool:
    """Whether this request must be answered with the answer tool now."""
    return request.output_forced or request.tool_choice == "none" or not request.tools


def as_answer(response: CompletionResponse, request: CompletionRequest) -> CompletionResponse:
    """``response`` with its call of the answer tool as its text; as it is when it made none."""
    output = request.output
    if output is None:
        return response
    name = answer_tool_name(request)
    answers = [c for c in response.tool_calls if c.name == name]
    if not answers:
        return response
    value: Any = answers[0].decoded_arguments()
    if wraps(output) and isinstance(value, Mapping):
        value = value.get(WRAPPED)
    text = answers[0].arguments if value is None else json.dumps(value, ensure_ascii=False)
    others = tuple(c for c in response.tool_calls if c.name != name)
    # Its state holds the answer's tool_use block, which no tool result would follow: not kept.
    return dataclasses.replace(
        response,
        content=text,
        tool_calls=others,
        stop=response.stop if others else Stop.END,
        provider_state=None,
    )
