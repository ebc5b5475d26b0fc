from __future__ import annotations

import time

import pytest

from toolwire import ArtifactType
from toolwire.demo._content import ENV_SECRETS
from toolwire.workspace.config import Workspace

from .conftest import invoke


def test_read_source_returns_a_code_artifact_with_the_same_lines(workspace: Workspace) -> None:
    result = invoke(workspace, "read_source", {"path": "src/app.py", "start_line": 2})
    assert result.content == "src/app.py lines 2-3 of 3:\n    return 42\n# third line"
    (artifact,) = result.artifacts
    assert artifact.type is ArtifactType.CODE
    assert artifact.data == {
        "code": "    return 42\n# third line",
        "language": "python",
        "first_line": 2,
    }


def test_read_source_line_range_is_bounded(workspace: Workspace) -> None:
    root = workspace.files_root
    assert root is not None
    (root / "big.py").write_text("".join(f"x{n} = {n}\n" for n in range(1, 1001)))
    result = invoke(workspace, "read_source", {"path": "big.py", "end_line": 10**9})
    assert result.content.startswith("big.py lines 1-400 of 1000:\nx1 = 1\n")
    assert result.artifacts[0].data["code"].endswith("x400 = 400")
    past = invoke(workspace, "read_source", {"path": "big.py", "start_line": 1001})
    assert past.content == "Error: 'big.py' has 1000 lines; start_line 1001 is past it."
    backwards = invoke(workspace, "read_source", {"path": "big.py", "start_line": 5, "end_line": 4})
    assert backwards.content == "Error: end_line must not be before start_line."


@pytest.mark.parametrize(
    ("path", "shown"),
    [(".env", ".env"), ("deploy.pem", "deploy.pem"), ("innocent.txt", "innocent.txt")],
)
def test_secret_files_are_never_read(workspace: Workspace, path: str, shown: str) -> None:
    result = invoke(workspace, "read_source", {"path": path})
    assert result.content == f"Error: '{shown}' looks like a secrets file and is never read."
    for secret in ENV_SECRETS.values():
        assert secret not in result.content


@pytest.mark.parametrize(
    "name", ["id_rsa", "id_ed25519", "server.key", "credentials.json", ".env.local"]
)
def test_secret_file_names(workspace: Workspace, name: str) -> None:
    root = workspace.files_root
    assert root is not None
    (root / name).write_text("PRIVATE")
    result = invoke(workspace, "read_source", {"path": name})
    assert result.is_error and "PRIVATE" not in result.content


def test_read_source_refuses_binary_and_special_files(workspace: Workspace) -> None:
    root = workspace.files_root
    assert root is not None
    (root / "blob.bin").write_bytes(b"\x00\x01\x02")
    assert invoke(workspace, "read_source", {"path": "blob.bin"}).content == (
        "Error: 'blob.bin' is a binary file."
    )
    assert invoke(workspace, "read_source", {"path": "pipe"}).content == (
        "Error: path 'pipe' is not a regular file."
    )


def test_search_code_substring_and_regex(workspace: Workspace) -> None:
    result = invoke(workspace, "search_code", {"pattern": "RETURN"})
    assert result.content == "Matches for 'RETURN':\nsrc/app.py:2:     return 42"
    regex = invoke(workspace, "search_code", {"pattern": r"^#\s+\w+", "regex": True})
    assert regex.content == "Matches for '^#\\\\s+\\\\w+':\nsrc/app.py:3: # third line"


def test_search_code_skips_secret_files_and_redacts(workspace: Workspace) -> None:
    root = workspace.files_root
    assert root is not None
    (root / "settings.py").write_text('API_KEY = "sk_live_abcdefghijklmnopqrstu"\n')
    result = invoke(workspace, "search_code", {"pattern": "API_KEY"})
    assert result.content == "Matches for 'API_KEY':\nsettings.py:1: API_KEY = \"***\""
    assert invoke(workspace, "search_code", {"pattern": "sk_live"}).content == (
        "No matches for 'sk_live' in 3 files."
    )
    assert invoke(workspace, "search_code", {"pattern": "Sup3rS3cret"}).content == (
        "No matches for 'Sup3rS3cret' in 3 files."
    )


def test_a_regex_bomb_ends_with_a_clear_error(workspace: Workspace) -> None:
    root = workspace.files_root
    assert root is not None
    (root / "long.txt").write_text("a" * 1_900 + "!\n")
    started = time.monotonic()
    result = invoke(workspace, "search_code", {"pattern": "(a+)+$", "regex": True})
    assert time.monotonic() - started < 10
    assert result.content == (
        "Error: the search took longer than 3 seconds and was stopped; simplify the pattern "
        "(nested repetition such as (a+)+ backtracks badly)."
    )


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"pattern": "(", "regex": True},
         "Error: invalid regular expression: missing ), unterminated subpattern at position 0."),
        ({"pattern": "a" * 201}, "Error: pattern must be 1 to 200 characters."),
        ({"pattern": ""}, "Error: pattern must be 1 to 200 characters."),
        ({"pattern": "x", "glob": ""}, "Error: glob must be 1 to 200 characters."),
    ],
)  # fmt: skip
def test_search_code_bad_patterns(
    workspace: Workspace, arguments: dict[str, object], error: str
) -> None:
    assert invoke(workspace, "search_code", arguments).content == error
