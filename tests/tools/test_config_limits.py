"""The configuration tools read each file on its own, within its limits: a file nested too
deeply, too slow to read or that breaks its reader is ``not checked``, and the others answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.tools.builtin import _config_files, config
from toolwire.tools.builtin._per_file import MAX_NESTING, Budget, NotChecked
from toolwire.workspace.config import Workspace
from toolwire.workspace.maps import ConfigMap

from .conftest import assert_artifacts_within_text, invoke

DEEP = 600  # the depth a hostile or generated file reaches, well past any real settings file
NESTED = f"nested more than {MAX_NESTING} levels deep"


def folder_with(tmp_path: Path, files: dict[str, str], schemas: dict[str, object]) -> Workspace:
    folder = tmp_path / "config"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    mapped: list[tuple[str, Path]] = []
    for glob, schema in schemas.items():
        path = tmp_path / f"{len(mapped)}.schema.json"
        path.write_text(json.dumps(schema))
        mapped.append((glob, path))
    return Workspace(config=ConfigMap(folder=folder, schemas=tuple(mapped)))


def test_a_deep_file_is_not_checked_and_the_others_still_answer(tmp_path: Path) -> None:
    files = {
        "deep.json": '{"a": ' * DEEP + '"x"' + "}" * DEEP,
        "app.json": '{\n  "port": 80\n}\n',
        "search.yaml": "languages: [en, de]\n",
    }
    ws = folder_with(tmp_path, files, {"*.json": {"type": "object", "required": ["name"]}})
    result = invoke(ws, "check_config")
    assert result.content == (
        "2 configuration files checked, 1 not checked: 1 problems.\n"
        "- app.json:1: schema: the document: missing required key 'name'\n"
        f"- deep.json: not checked: {NESTED}"
    )
    assert result.artifacts[0].data["rows"] == [
        ["app.json", "1", "schema", "the document: missing required key 'name'"],
        ["deep.json", "", "not checked", NESTED],
    ]
    assert_artifacts_within_text(result)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("object.json", '{"a": ' * DEEP + "1" + "}" * DEEP),
        ("array.json", "[" * DEEP + "]" * DEEP),
        ("flow.yaml", "[" * DEEP + "]" * DEEP),
        ("block.yaml", "".join(f"{' ' * n}k:\n" for n in range(DEEP)) + " " * DEEP + "k: 1\n"),
        ("compact.yaml", "- " * DEEP + "x\n"),
        ("crashes-libyaml.yaml", "[" * 200_000 + "]" * 200_000),  # its C composer recurses
        ("arrays.toml", "a = " + "[" * DEEP + "]" * DEEP + "\n"),
        ("dotted.toml", ".".join(["a"] * DEEP) + " = 1\n"),
    ],
)
def test_every_format_stops_at_the_nesting_limit(tmp_path: Path, name: str, text: str) -> None:
    ws = folder_with(tmp_path, {name: text}, {"*": {"type": "object", "required": ["name"]}})
    checked = invoke(ws, "check_config")
    assert checked.content == (
        "0 configuration files checked, 1 not checked: no problems.\n"
        f"- {name}: not checked: {NESTED}"
    )
    shown = invoke(ws, "get_config", {"path": name})
    assert shown.content == f"Error: {name} was not read: {NESTED}."


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(1, 2 * MAX_NESTING), kind=st.sampled_from(["JSON", "YAML"]))
def test_a_file_is_read_exactly_up_to_the_nesting_limit(depth: int, kind: str) -> None:
    text = "[" * depth + "]" * depth
    if depth <= MAX_NESTING:
        parsed = _config_files.parse(text, kind, Budget(60))
        assert json.dumps(parsed.document) == text.replace("][", "], [")
    else:
        with pytest.raises(NotChecked, match=NESTED):
            _config_files.parse(text, kind, Budget(60))


def test_a_long_plain_yaml_file_is_read_whole_given_the_time_and_stopped_when_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "".join(f"k{n}: {n % 10}\n" for n in range(99_000))  # 978,890 bytes
    ws = folder_with(tmp_path, {"big.yaml": text}, {})
    # Given the time, every value is read: 99,000 keys are not an alias bomb. (The budget is
    # the clock's, which a loaded machine spends sooner; it is tested on its own below.)
    monkeypatch.setattr(config, "FILE_SECONDS", 120.0)
    assert invoke(ws, "check_config").content == "1 configuration files checked: no problems."
    assert len(_config_files.parse(text, "YAML", Budget(120)).document) == 99_000
    # Not given it, reading stops part way: the clock is looked at all through a long file
    # (198,000 nodes composed then built), not once at the end. Ten looks spend this budget.
    reads = [0]
    clock = ticking(1.0)

    def counted() -> float:
        reads[0] += 1
        return clock()

    with pytest.raises(NotChecked, match=r"^took longer than 10 seconds to read$"):
        _config_files.parse(text, "YAML", Budget(10.0, clock=counted))
    assert reads[0] == 11  # the start, then one look per 1,024 nodes until the tenth


def ticking(step: float) -> Callable[[], float]:
    """A clock that moves on by ``step`` seconds each time it is read."""
    now = [0.0]

    def clock() -> float:
        now[0] += step
        return now[0]

    return clock


@pytest.mark.parametrize("kind", ["YAML", "JSON", "TOML", "INI"])
def test_a_file_slower_than_its_budget_is_not_checked(kind: str) -> None:
    text = {"YAML": "a: 1\n" * 5_000, "JSON": "[1]", "TOML": "a = 1\n", "INI": "[a]\nb = 1\n"}
    budget = Budget(1.0, clock=ticking(1.0))  # spent at the first look after starting
    with pytest.raises(NotChecked, match=r"^took longer than 1 seconds to read$"):
        _config_files.parse(text[kind], kind, budget)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("JSON", "[" * DEEP + "]" * DEEP),
        ("TOML", ".".join(["a"] * DEEP) + " = 1\n"),
        ("YAML", "[" * DEEP + "]" * DEEP),
    ],
    ids=["JSON", "TOML", "YAML"],
)
def test_a_file_too_deep_says_so_however_slow_the_machine(kind: str, text: str) -> None:
    budget = Budget(1.0, clock=ticking(1.0))  # spent at the first look after starting
    with pytest.raises(NotChecked, match=f"^{NESTED}$"):
        _config_files.parse(text, kind, budget)


def test_past_the_budget_files_are_listed_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = folder_with(tmp_path, {"a.json": "{}", "b.yaml": "b: 1\n"}, {})
    monkeypatch.setattr(config, "FILE_SECONDS", 0.0)
    result = invoke(ws, "check_config")
    assert result.content == (
        "0 configuration files checked, 2 not checked: no problems.\n"
        "- a.json: not checked: took longer than 0 seconds to read\n"
        "- b.yaml: not checked: took longer than 0 seconds to read"
    )
    monkeypatch.setattr(config, "FILE_SECONDS", 60.0)
    monkeypatch.setattr(config, "CALL_SECONDS", 0.0)
    assert invoke(ws, "check_config").content.endswith(
        "- b.yaml: not checked: the call's time was spent on the files before it"
    )


def test_a_file_that_breaks_its_reader_is_not_checked(tmp_path: Path) -> None:
    files = {"a.json": '{"name": "x"}', "b.json": "{}", "c.yaml": "c: [1\n"}
    # A reference nothing can resolve (and nothing is fetched for): the validator raises.
    schemas = {"a.json": {"$ref": "urn:nowhere:schema"}, "b.json": {"required": ["name"]}}
    result = invoke(folder_with(tmp_path, files, schemas), "check_config")
    assert result.content == (
        "2 configuration files checked, 1 not checked: 2 problems.\n"
        "- a.json: not checked: its reader failed on it\n"
        "- b.json:1: schema: the document: missing required key 'name'\n"
        "- c.yaml:2: syntax: while parsing a flow sequence: did not find expected ',' or ']'"
    )


def test_a_file_breaking_one_rule_per_value_has_each_problem_found_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = 10_000
    text = "{\n" + ",\n".join(f'  "k{n}": {n}' for n in range(keys)) + "\n}\n"
    schema = {"type": "object", "additionalProperties": {"type": "string"}}
    ws = folder_with(tmp_path, {"data.json": text}, {"data.json": schema})
    # The budgets are the clock's, which a loaded machine spends sooner (the budget itself is
    # tested above); here the file is given the time, and every problem must be found.
    monkeypatch.setattr(config, "FILE_SECONDS", 120.0)
    monkeypatch.setattr(config, "CALL_SECONDS", 120.0)
    result = invoke(ws, "check_config")
    lines = result.content.split("\n")
    assert lines[0] == "1 configuration files checked: 20 problems."
    # Which twenty is the validator's choice (it walks extra keys as a set); each has its line.
    found = [line.removeprefix("- data.json:").split(": ", 1) for line in lines[1:]]
    numbers = [int(number) for number, _ in found]
    assert numbers == sorted(numbers) and len(numbers) == 20
    for number, problem in found:
        assert problem == f"schema: k{int(number) - 2}: must be of type string"
