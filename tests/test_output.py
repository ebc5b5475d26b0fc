"""A run that requires its final answer to match a JSON schema: the schema, the check, asking
again once, the ``output_invalid`` ending, and what the trace and the privacy filter keep."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from toolwire import ChatMessage, RunOptions, ToolLoop, ToolRegistry, tool
from toolwire.core.lifecycle import TerminationReason
from toolwire.core.output import MAX_SCHEMA_BYTES, OutputSchema
from toolwire.loop.seam import answer_not_matching
from toolwire.policy.privacy import PrivacyLevel, filter_run_step
from toolwire.policy.trace import LlmStep, RunTrace

from .fakes import RecordingProvider, call

CITY = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "people": {"type": "integer", "minimum": 0}},
    "required": ["name", "people"],
    "additionalProperties": False,
}


class City(BaseModel):
    name: str
    people: int


@tool(data_class="public")
def population(name: str) -> str:
    """How many people live in a city."""
    return f"{name}: 8000"


def run(turns: list[dict[str, Any]], **options: Any) -> tuple[Any, RecordingProvider, RunTrace]:
    provider = RecordingProvider.of(turns)
    trace = RunTrace()
    result = ToolLoop(provider, ToolRegistry([population])).run_sync(
        [ChatMessage.user("go")], options=RunOptions(**options), trace=trace
    )
    return result, provider, trace


def llm_steps(trace: RunTrace) -> list[LlmStep]:
    return [s for s in trace.steps if isinstance(s, LlmStep)]


# -- the schema ------------------------------------------------------------------------------


def test_a_schema_is_made_from_a_dict_a_pydantic_model_or_itself() -> None:
    plain = OutputSchema.of(CITY)
    assert (plain.schema, plain.name, plain.strict, plain.model) == (CITY, "answer", False, None)
    modelled = OutputSchema.of(City)
    assert modelled.name == "City" and modelled.model is City
    assert modelled.schema["required"] == ["name", "people"]
    assert OutputSchema.of(plain) is plain
    with pytest.raises(TypeError, match="not int"):
        OutputSchema.of(3)  # type: ignore[arg-type]


def test_a_schema_keeps_its_own_copy() -> None:
    given = json.loads(json.dumps(CITY))
    schema = OutputSchema.of(given)
    given["properties"]["name"]["type"] = "integer"
    assert schema.schema["properties"]["name"]["type"] == "string"


@pytest.mark.parametrize(
    ("schema", "name", "says"),
    [
        ({"type": "nonsense"}, "answer", "not a valid JSON Schema"),
        ({"type": "object", "minimum": float("nan")}, "answer", "not plain JSON"),
        ({"type": "object"}, "has space", "1 to 64 letters"),
        ({"type": "object"}, "x" * 65, "1 to 64 letters"),
        ({"enum": ["x" * MAX_SCHEMA_BYTES]}, "answer", f"over {MAX_SCHEMA_BYTES} bytes"),
    ],
)
def test_a_bad_schema_is_refused_saying_why(schema: Any, name: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        OutputSchema(schema, name)


def test_an_answer_is_checked_and_its_problem_names_only_the_schema() -> None:
    schema = OutputSchema.of(CITY)
    assert schema.check('{"name": "Oslo", "people": 709000}') == (
        {"name": "Oslo", "people": 709000},
        None,
    )
    secret = "sk-live-ffffffffffffffff"
    for answer, words in [
        (f'{{"name": "{secret}"}}', "at required (required: missing people)"),
        (f'{{"name": "{secret}", "people": "many {secret}"}}', "properties/people/type"),
        (f'{{"name": "{secret}", "people": -1}}', "minimum"),
        (f'{{"name": "{secret}", "people": 1, "{secret}": 2}}', "additionalProperties"),
        (f"the answer is {secret}", "not one JSON document"),
        ('{"name": "Oslo", "people": NaN}', "not one JSON document"),
        ('{"name": "Oslo", "people": 1} {"again": 1}', "not one JSON document"),
    ]:
        checked = schema.check(answer)
        assert checked.value is None and checked.problem is not None, answer
        assert words in checked.problem, checked.problem
        assert secret not in checked.problem and "many" not in checked.problem


def test_a_deeply_nested_answer_is_a_problem_not_a_crash() -> None:
    checked = OutputSchema.of({"type": "array"}).check("[" * 100_000 + "]" * 100_000)
    assert checked.problem is not None


def test_the_schema_travels_with_a_suspended_run_as_plain_data() -> None:
    options = RunOptions(output=City)
    back = RunOptions.from_dict(json.loads(json.dumps(options.to_dict())))
    assert back.output_schema == options.output_schema
    assert back.output_schema is not None and back.output_schema.model is None  # plain JSON
    assert RunOptions.from_dict(RunOptions().to_dict()).output_schema is None


# -- the loop --------------------------------------------------------------------------------


def test_a_matching_answer_is_the_runs_output_and_every_request_carries_the_schema() -> None:
    answer = '{"name": "Oslo", "people": 8000}'
    result, provider, trace = run(
        [{"tool_calls": [call("population", {"name": "Oslo"})]}, {"content": answer}],
        output=CITY,
    )
    assert result.reason is TerminationReason.COMPLETED and not result.truncated
    assert (result.final_content, result.output) == (answer, {"name": "Oslo", "people": 8000})
    assert [r.output for r in provider.requests] == [OutputSchema.of(CITY)] * 2
    assert not any(r.output_forced for r in provider.requests)
    final = llm_steps(trace)[-1]
    assert (final.output, final.output_problem) == ({"name": "Oslo", "people": 8000}, None)
    assert llm_steps(trace)[0].output is None  # a turn of calls is not an answer


def test_a_pydantic_model_gives_back_the_model() -> None:
    result, _, _ = run([{"content": '{"name": "Oslo", "people": 3}'}], output=City)
    assert result.output == City(name="Oslo", people=3)


def test_a_wrong_answer_is_asked_again_once_and_the_second_is_kept() -> None:
    result, provider, trace = run(
        [{"content": "Oslo has 8000 people"}, {"content": '{"name": "Oslo", "people": 8000}'}],
        output=CITY,
    )
    assert result.reason is TerminationReason.COMPLETED
    assert result.output == {"name": "Oslo", "people": 8000}
    first, again = provider.requests
    assert (first.output_forced, again.output_forced) == (False, True)
    told = again.messages[-1]
    assert told.role == "user"
    assert told.content == answer_not_matching("the answer is not one JSON document")
    assert again.messages[-2].content == "Oslo has 8000 people"
    steps = llm_steps(trace)
    assert steps[0].output_problem == "the answer is not one JSON document"
    assert steps[1].output_problem is None


def test_a_model_that_cannot_comply_ends_output_invalid_after_two_answers() -> None:
    result, provider, trace = run(
        [{"content": '{"name": "Oslo"}'}, {"content": '{"name": "Oslo", "people": "lots"}'}],
        output=CITY,
    )
    assert (result.reason, result.truncated, result.output) == (
        TerminationReason.OUTPUT_INVALID, True, None,
    )  # fmt: skip
    assert result.final_content == '{"name": "Oslo", "people": "lots"}'
    assert len(provider.requests) == 2
    assert llm_steps(trace)[-1].output_problem is not None


def test_a_cut_answer_ends_by_its_own_reason_unchecked() -> None:
    result, provider, trace = run([{"content": '{"name": "Os', "stop": "max_tokens"}], output=CITY)
    assert result.reason is TerminationReason.MAX_TOKENS and len(provider.requests) == 1
    assert llm_steps(trace)[0].output_problem is None


def test_a_run_without_a_schema_asks_nothing_of_the_answer() -> None:
    result, provider, trace = run([{"content": "anything at all"}])
    assert (result.reason, result.output) == (TerminationReason.COMPLETED, None)
    assert provider.requests[0].output is None
    assert llm_steps(trace)[0].output_problem is None


def test_the_answers_value_is_content_and_its_problem_metadata() -> None:
    _, _, trace = run(
        [{"content": "not json"}, {"content": '{"name": "Oslo", "people": 8000}'}], output=CITY
    )
    wrong, right = llm_steps(trace)
    kept = filter_run_step(right, PrivacyLevel.FULL)
    assert kept["output"] == {"name": "Oslo", "people": 8000}
    hidden = filter_run_step(right, PrivacyLevel.METADATA)
    assert "Oslo" not in json.dumps(hidden)
    assert filter_run_step(wrong, PrivacyLevel.METADATA)["output_problem"] == (
        "the answer is not one JSON document"
    )
