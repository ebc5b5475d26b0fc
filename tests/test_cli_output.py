"""``toolwire run --output-schema`` through real ``python -m toolwire`` processes against
vendor-shaped servers on loopback: the schema on the wire in each API's own form, the checked
answer in ``--json``, asking again once, the ``output_invalid`` ending, and a bad schema file
refused before any request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolwire.demo import prepare_demo

from .providers.servers import FakeModel, loopback
from .providers.test_anthropic_sdk import validate_request as anthropic_request
from .providers.test_openai_sdk import checked as openai_request
from .test_cli_run_options import tw

LOCAL = ("--provider", "llama-cpp-python", "--model", "smollm2")  # a local server: no key
TABLES = {
    "type": "object",
    "properties": {"tables": {"type": "integer"}, "names": {"type": "array"}},
    "required": ["tables"],
}


def _schema(tmp_path: Path, schema: Any = TABLES, name: str = "tables.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(schema))
    return str(path)


def _workspace(tmp_path: Path) -> str:
    return str(prepare_demo(tmp_path / "shop").root / "workspace.toml")


def test_an_openai_compatible_run_asks_for_the_schema_and_answers_its_json(
    tmp_path: Path,
) -> None:
    model = FakeModel([[("list_tables", {})], '{"tables": 4, "names": ["a", "b", "c", "d"]}'])
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--workspace",
                  _workspace(tmp_path), "--output-schema", _schema(tmp_path), "--json",
                  "How many tables?")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout)
    assert (outcome["reason"], outcome["output"]) == (
        "completed", {"tables": 4, "names": ["a", "b", "c", "d"]},
    )  # fmt: skip
    bodies = [c.json() for c in model.captured]
    for body in bodies:
        openai_request(body)
    wanted = {"type": "json_schema",
              "json_schema": {"name": "tables", "schema": TABLES, "strict": False}}  # fmt: skip
    assert [b["response_format"] for b in bodies] == [wanted, wanted]


def test_an_answer_out_of_schema_is_asked_again_then_the_run_ends_output_invalid(
    tmp_path: Path,
) -> None:
    model = FakeModel(["There are four tables.", '{"tables": "four"}'])
    with loopback(model) as base:
        done = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--no-tools",
                  "--output-schema", _schema(tmp_path), "--json", "How many?")  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    outcome = json.loads(done.stdout)
    assert (outcome["status"], outcome["reason"], outcome["output"]) == (
        "completed", "output_invalid", None,
    )  # fmt: skip
    told = model.captured[1].json()["messages"][-1]
    assert told["role"] == "user" and "not one JSON document" in told["content"]
    again = FakeModel(["four", "still four"])
    with loopback(again) as base:
        text = tw(tmp_path, "run", *LOCAL, "--base-url", f"{base}/v1", "--no-tools",
                  "--output-schema", _schema(tmp_path), "How many?")  # fmt: skip
    said = " ".join((text.stdout + text.stderr).split())
    assert "does not match the required output schema, asked for twice" in said, said


def test_an_anthropic_run_answers_through_its_answer_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
    model = FakeModel([[("list_tables", {})], [("final_answer", {"tables": 4})]])
    with loopback(model) as base:
        done = tw(tmp_path, "run", "--provider", "anthropic", "--model", "claude-test",
                  "--base-url", base, "--trust-zone", "local", "--workspace",
                  _workspace(tmp_path), "--output-schema", _schema(tmp_path), "--json",
                  "How many tables?")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    outcome = json.loads(done.stdout)
    assert (outcome["reason"], outcome["answer"], outcome["output"]) == (
        "completed", '{"tables": 4}', {"tables": 4},
    )  # fmt: skip
    bodies = [c.json() for c in model.captured]
    assert len(bodies) == 2
    for body in bodies:
        anthropic_request(body)
        answer = body["tools"][-1]
        assert (answer["name"], answer["input_schema"]) == ("final_answer", TABLES)
    assert "list_tables" in [t["name"] for t in bodies[0]["tools"]]
    # The answer tool's call is the answer: no tool result for it was ever sent.
    assert len(bodies[1]["messages"]) == 3


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{not json", "is not JSON"),
        ('{"type": "nonsense"}', "not a valid JSON Schema"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_a_bad_schema_file_is_a_usage_error_naming_the_file(
    tmp_path: Path, content: str, says: str
) -> None:
    path = tmp_path / "shape.json"
    path.write_text(content)
    done = tw(tmp_path, "run", "--no-tools", "--output-schema", str(path), "q")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    flat = " ".join(done.stderr.split()).replace("│", "")
    assert "--output-schema" in flat and says in " ".join(flat.split()), done.stderr
    missing = tw(tmp_path, "run", "--no-tools", "--output-schema", str(tmp_path / "no.json"), "q")
    assert missing.returncode == 2 and "cannot read" in " ".join(missing.stderr.split())
