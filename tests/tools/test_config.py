"""``get_config`` and ``check_config`` over the workspace's configuration folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import ArtifactType
from toolwire.core.errors import ConfigError
from toolwire.workspace.config import Workspace, load_workspace
from toolwire.workspace.maps import ConfigMap

from .conftest import OUTSIDE_SECRET, assert_artifacts_within_text, invoke

DEMO = Path(__file__).parents[2] / "src" / "toolwire" / "demo"
SECRETS = ["Sup3rS3cret", "sk_live_51Hdemo0000fakeKEYabcdef", "correct-horse-battery-staple",
           "glpat-DEMO1234567890abcdefghij", "shop@shop.example"]  # fmt: skip
PEM = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"


def json_problem(text: str) -> tuple[int, str]:
    """The line and the message this Python's json gives for ``text`` (3.13 words a trailing
    comma, and places it, differently from 3.11)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return exc.lineno, exc.msg
    raise AssertionError(f"{text!r} is valid JSON")


FEATURES_LINE, FEATURES_PROBLEM = json_problem((DEMO / "config" / "features.json").read_text())


@pytest.fixture
def configured(tmp_path: Path) -> Workspace:
    folder = tmp_path / "config"
    shutil.copytree(DEMO / "config", folder)
    (folder / "credentials.json").write_text('{"token": "creds-canary"}')
    (folder / "tls.yaml").write_text("cert: x\nkey: |\n  " + PEM.replace("\n", "\n  "))
    (folder / ".env").write_text("X=env-canary\n")
    (tmp_path / "outside.yaml").write_text(f"leak: {OUTSIDE_SECRET}\n")
    (folder / "escape.yaml").symlink_to(tmp_path / "outside.yaml")
    schemas = (("app.toml", DEMO / "schemas" / "app.schema.json"),)
    return Workspace(config=ConfigMap(folder=folder, schemas=schemas))


def folder_of(workspace: Workspace) -> Path:
    assert workspace.config is not None
    return workspace.config.folder


def test_the_list_of_configuration_files(configured: Workspace) -> None:
    result = invoke(configured, "get_config")
    assert result.content == (
        "Configuration files (6):\n"
        "- app.toml (TOML)\n"
        "- credentials.json (secrets file, not read)\n"
        "- features.json (JSON)\n"
        "- logging.ini (INI)\n"
        "- search.yaml (YAML)\n"
        "- tls.yaml (secrets file, not read)"
    )
    assert result.artifacts[0].type is ArtifactType.TABLE
    assert_artifacts_within_text(result)


def test_values_with_secrets_masked(configured: Workspace) -> None:
    result = invoke(configured, "get_config", {"path": "app.toml"})
    assert result.content == (
        "app.toml (TOML, 11 values, secrets masked):\n"
        "name = Demo shop\ndebug = false\ndatabase.host = db.internal\ndatabase.port = 5432\n"
        "database.user = shop\ndatabase.password = ***\npayments.provider = stripe\n"
        "payments.api_key = ***\npayments.currency = EUR\nmail.from = ***@***\n"
        "mail.smtp_url = smtp://shop:***@mail.internal:587"
    )
    (pairs,) = result.artifacts
    assert pairs.type is ArtifactType.KEY_VALUE
    assert pairs.data["items"][5] == ["database.password", "***"]
    assert_artifacts_within_text(result)
    for secret in SECRETS:
        assert secret not in result.content


def test_yaml_and_ini_values(configured: Workspace) -> None:
    yaml_values = invoke(configured, "get_config", {"path": "search.yaml"})
    assert "languages[1] = de\n" in yaml_values.content
    assert yaml_values.content.endswith("backend.token = ***")
    ini = invoke(configured, "get_config", {"path": "logging.ini"})
    assert "handler_file.level = INFO\n" in ini.content
    assert "formatter_plain.format = %(asctime)s %(levelname)s %(message)s" in ini.content


def test_a_broken_file_points_to_check_config(configured: Workspace) -> None:
    result = invoke(configured, "get_config", {"path": "features.json"})
    assert result.content == (
        f"Error: features.json is not valid JSON (line {FEATURES_LINE}: {FEATURES_PROBLEM});"
        " check_config lists every problem."
    )


def test_check_finds_syntax_and_schema_errors_with_lines(configured: Workspace) -> None:
    result = invoke(configured, "check_config")
    assert result.content == (
        "4 configuration files checked: 2 problems.\n"
        "- app.toml:7: schema: database.port: must be of type integer\n"
        f"- features.json:{FEATURES_LINE}: syntax: {FEATURES_PROBLEM}"
    )
    assert result.artifacts[0].data["rows"][0] == [
        "app.toml", "7", "schema", "database.port: must be of type integer",
    ]  # fmt: skip
    assert_artifacts_within_text(result)
    one = invoke(configured, "check_config", {"path": "search.yaml"})
    assert one.content == "1 configuration files checked: no problems."


SCHEMA = {
    "type": "object",
    "required": ["name", "port"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "maxLength": 3},
        "port": {"type": "integer", "minimum": 1},
        "mode": {"enum": ["a", "b"]},
        "password": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


@pytest.mark.parametrize(
    ("name", "text", "problems"),
    [
        ("s.yaml", "name: abcd-secret-value\nport: 0\nmode: z\nextra: 1\n",
         ["s.yaml:1: schema: name: fails the schema's 'maxLength' rule (3)",
          "s.yaml:2: schema: port: must be ≥ 1",
          "s.yaml:3: schema: mode: must be one of [\"a\", \"b\"]",
          "s.yaml:4: schema: the document: unexpected key 'extra'"]),
        ("s.json", '{\n  "name": "x",\n  "tags": ["a", 7],\n  "password": 5\n}',
         ["s.json:1: schema: the document: missing required key 'port'",
          "s.json:3: schema: tags[1]: must be of type string",
          "s.json:4: schema: password: must be of type string"]),
        ("s.toml", 'name = "x"\nport = 1\n[nested]\nport = "no"\n',
         ["s.toml:3: schema: the document: unexpected key 'nested'"]),
        ("s.ini", "[main]\nx = 1\n", ["s.ini:1: schema: the document: unexpected key 'main'",
                                      "s.ini: schema: the document: missing required key 'name'",
                                      "s.ini: schema: the document: missing required key 'port'"]),
    ],
)  # fmt: skip
def test_schema_problems_never_quote_a_value(
    tmp_path: Path, name: str, text: str, problems: list[str]
) -> None:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / name).write_text(text)
    (tmp_path / "s.schema.json").write_text(json.dumps(SCHEMA))
    ws = Workspace(config=ConfigMap(folder=folder, schemas=(("s.*", tmp_path / "s.schema.json"),)))
    result = invoke(ws, "check_config")
    assert result.content.split("\n")[1:] == [f"- {p}" for p in problems]
    assert "abcd" not in result.content and "no" not in result.content.split("\n", 1)[1]


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("a.toml", "a = 1\nb = \n", "a.toml:2: syntax: Invalid value"),
        ("a.toml", "a = 1\na = 2\n", "a.toml:2: syntax: Cannot overwrite a value"),
        ("a.yaml", "a: 1\nb: [1, 2\nc: 3\n", "a.yaml:3: syntax: while parsing a flow sequence: "
         + ("did not find expected ',' or ']'" if yaml.__with_libyaml__
            else "expected ',' or ']', but got ':'")),
        ("a.yaml", "a: *nope-canary\n", "a.yaml:1: syntax: found undefined alias"),
        ("a.yaml", "a: &secret-canary 1\nb: &secret-canary 2\n",
         "a.yaml:2: syntax: found duplicate anchor; first occurrence: second occurrence"),
        ("a.yaml", "when: 2024-13-45\n", "a.yaml: syntax: a value its type cannot hold"),
        ("a.yaml", "a: 'secret-canary\n", "a.yaml:2: syntax: while scanning a quoted scalar:"
         " found unexpected end of stream"),
        ("a.json", '{"a": 1,}', "a.json:1: syntax: " + json_problem('{"a": 1,}')[1]),
        ("a.ini", "x = secret-canary\n[a]\n", "a.ini:1: syntax: a key before any [section] header"),
        ("a.ini", "[a]\nsecret-canary\n", "a.ini:2: syntax: not a key = value line"),
        ("a.ini", "[a]\nx = 1\nx = 2\n", "a.ini:3: syntax: key x appears twice in section [a]"),
        ("a.ini", "[a]\n[a]\n", "a.ini:2: syntax: section [a] appears twice"),
        ("a.yaml", "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
            f"{chr(98 + n)}: &{chr(98 + n)} [*{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)},"
            f" *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}, *{chr(97 + n)}]\n"
            for n in range(8)), "a.yaml: syntax: aliases expand to more than 100000 values"),
    ],
)  # fmt: skip
def test_syntax_problems_have_lines_and_no_content(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / name).write_text(text)
    result = invoke(Workspace(config=ConfigMap(folder=folder)), "check_config")
    assert result.content == f"1 configuration files checked: 1 problems.\n- {problem}"
    assert "secret-canary" not in result.content
    assert_artifacts_within_text(result)


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        ("get_config", {"path": "../outside.yaml"},
         "Error: path '../outside.yaml' leaves the files folder."),
        ("get_config", {"path": "escape.yaml"},
         "Error: path 'escape.yaml' leaves the files folder."),
        ("get_config", {"path": "credentials.json"},
         "Error: 'credentials.json' looks like a secrets file and is never read."),
        ("get_config", {"path": "tls.yaml"},
         "Error: 'tls.yaml' looks like a secrets file and is never read."),
        ("get_config", {"path": ".env"}, "Error: '.env' is not a TOML, YAML, JSON or INI file."),
        ("check_config", {"path": "credentials.json"},
         "Error: 'credentials.json' looks like a secrets file and is never read."),
        ("check_config", {"path": "/etc/passwd"},
         "Error: path '/etc/passwd' is absolute; give a path inside the files folder."),
        ("check_config", {"path": "nope.toml"}, "Error: path 'nope.toml' does not exist."),
        ("get_config", {"path": 7},
         'Error: invalid arguments for tool "get_config": path: Input should be a valid string'),
        ("get_config", {"path": "systemd"}, "Error: path 'systemd' is not a regular file."),
    ],
)  # fmt: skip
def test_refusals(configured: Workspace, tool: str, arguments: dict[str, Any], error: str) -> None:
    result = invoke(configured, tool, arguments)
    assert result.content == error
    assert OUTSIDE_SECRET not in result.content and "creds-canary" not in result.content


def test_without_a_configuration_folder_both_fail_closed() -> None:
    for tool in ("get_config", "check_config"):
        result = invoke(Workspace(), tool)
        assert result.content == "Error: the workspace has no configuration folder."


def test_a_huge_file_is_not_parsed(tmp_path: Path) -> None:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "big.json").write_text("[" + "1," * 600_000 + "1]")
    (folder / "small.json").write_text("[1]")
    ws = Workspace(config=ConfigMap(folder=folder))
    result = invoke(ws, "check_config")
    assert result.content == (
        "1 configuration files checked, 1 not checked: no problems.\n"
        "- big.json: not checked: larger than 1000000 bytes"
    )
    assert result.artifacts[0].data["rows"] == [
        ["big.json", "", "not checked", "larger than 1000000 bytes"]
    ]
    one = invoke(ws, "check_config", {"path": "big.json"})
    assert one.content.startswith("0 configuration files checked, 1 not checked: no problems.\n")
    refused = invoke(ws, "get_config", {"path": "big.json"})
    assert refused.content == "Error: big.json was not read: larger than 1000000 bytes."


def test_a_broken_schema_is_one_problem(configured: Workspace, tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text('{"type": 12}')
    schemas = (("search.yaml", tmp_path / "bad.json"), ("app.toml", tmp_path / "missing.json"))
    ws = Workspace(config=ConfigMap(folder=folder_of(configured), schemas=schemas))
    result = invoke(ws, "check_config")
    rows = result.artifacts[0].data["rows"]
    assert ["app.toml", "", "schema", "its schema file cannot be read or is not valid"] in rows
    assert ["search.yaml", "", "schema", "its schema file cannot be read or is not valid"] in rows


def test_the_config_section_loads_from_toml(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "workspace.toml").write_text(
        '[config]\nfolder = "conf"\nschemas = {"app.toml" = "schemas/app.json"}\n'
    )
    loaded = load_workspace(tmp_path / "workspace.toml").config
    assert loaded == ConfigMap(
        folder=tmp_path / "conf", schemas=(("app.toml", tmp_path / "schemas" / "app.json"),)
    )
    (tmp_path / "bad.toml").write_text('[config]\nfolder = "nowhere"\n')
    with pytest.raises(ConfigError, match=r"bad\.toml: config\.folder: .*nowhere is not a folder"):
        load_workspace(tmp_path / "bad.toml")


SCALARS = st.one_of(
    st.text(max_size=30), st.integers(-(10**6), 10**6), st.booleans(), st.none(),
    st.sampled_from(["sk-abcdefghijklmnopqrstu", "a@b.example", "postgres://u:pw@h/db", "x" * 400]),
)  # fmt: skip
KEYS = st.sampled_from(["a", "password", "token", "name", "b c", "url"])


def nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4))


DOCUMENTS = st.recursive(SCALARS, nested, max_leaves=20)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=st.dictionaries(st.text(min_size=1, max_size=10), DOCUMENTS, max_size=5))
def test_every_value_in_the_artifact_is_a_line_of_the_text(
    tmp_path_factory: pytest.TempPathFactory, document: dict[str, Any]
) -> None:
    folder = tmp_path_factory.mktemp("config")
    (folder / "x.json").write_text(json.dumps(document))
    result = invoke(Workspace(config=ConfigMap(folder=folder)), "get_config", {"path": "x.json"})
    assert_artifacts_within_text(result)
    lines = result.content.split("\n")
    for key, value in result.artifacts[0].data["items"]:
        assert f"{key} = {value}" in lines
        if any(part in key.split(".") for part in ("password", "token")):
            assert value == "***"
    for secret in ("abcdefghijklmnopqrstu", "a@b.example", ":pw@"):
        assert secret not in result.content
