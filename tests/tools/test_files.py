from __future__ import annotations

from pathlib import Path

import pytest

from toolwire import ArtifactType
from toolwire.workspace.config import Workspace

from .conftest import OUTSIDE_SECRET, invoke

INSIDE = "give a path inside the files folder."
HOSTILE_PATHS = [
    ("../outside/secret.txt", "Error: path '../outside/secret.txt' leaves the files folder."),
    ("src/../../outside", "Error: path 'src/../../outside' leaves the files folder."),
    ("..\\outside", "Error: path '..\\\\outside' leaves the files folder."),
    ("/etc/passwd", "Error: path '/etc/passwd' is absolute; give a path inside the files folder."),
    ("C:/Windows", "Error: path 'C:/Windows' is absolute; give a path inside the files folder."),
    ("%2e%2e/outside", "Error: path '%2e%2e/outside' leaves the files folder."),
    ("%2Fetc%2Fpasswd", f"Error: path '%2Fetc%2Fpasswd' is absolute; {INSIDE}"),
    ("src%2fapp.py", "Error: path 'src%2fapp.py' is percent-encoded; give the plain path."),
    ("README.md\x00.txt", "Error: path contains a NUL byte."),
    ("README.md%00", "Error: path contains a NUL byte."),
    ("escape.txt", "Error: path 'escape.txt' leaves the files folder."),
    ("escape_dir/secret.txt", "Error: path 'escape_dir/secret.txt' leaves the files folder."),
    ("missing.txt", "Error: path 'missing.txt' does not exist."),
    ("x" * 2000, "Error: path is longer than 1024 characters."),
]  # fmt: skip


@pytest.mark.parametrize("tool", ["browse_folder", "file_info", "read_source"])
@pytest.mark.parametrize(("path", "error"), HOSTILE_PATHS)
def test_hostile_paths_are_refused(workspace: Workspace, tool: str, path: str, error: str) -> None:
    result = invoke(workspace, tool, {"path": path})
    assert result.is_error
    assert result.content == error
    assert OUTSIDE_SECRET not in result.content


def test_browse_folder_tree_never_looks_behind_escaping_links(workspace: Workspace) -> None:
    result = invoke(workspace, "browse_folder", {"path": ".", "depth": 3})
    assert result.content == (
        "Folder .:\n"
        "  - .env (secrets file, details withheld)\n"
        "  - README.md (6 bytes)\n"
        "  - deploy.pem (secrets file, details withheld)\n"
        "  - escape.txt -> (outside)\n"
        "  - escape_dir -> (outside)\n"
        "  - innocent.txt -> (link)\n"
        "  - pipe (special)\n"
        "  - src/\n"
        "    - app.py (39 bytes)"
    )
    (tree,) = result.artifacts
    assert tree.type is ArtifactType.TREE and tree.label == "."
    assert tree.data["nodes"][-1] == {
        "label": "src/",
        "children": [{"label": "app.py (39 bytes)", "children": []}],
    }
    assert "secret.txt" not in result.content


def test_browse_a_file_is_refused(workspace: Workspace) -> None:
    result = invoke(workspace, "browse_folder", {"path": "README.md"})
    assert result.content == "Error: path 'README.md' is not a folder."


@pytest.mark.parametrize("depth", [0, 4, "2; rm -rf /", -1])
def test_browse_depth_is_bounded(workspace: Workspace, depth: object) -> None:
    result = invoke(workspace, "browse_folder", {"depth": depth})
    assert result.content.startswith('Error: invalid arguments for tool "browse_folder": depth: ')


def test_find_files_matches_globs_inside_the_root_only(workspace: Workspace) -> None:
    result = invoke(workspace, "find_files", {"pattern": "*.txt"})
    assert (
        result.content
        == "Files matching '*.txt' (1):\n- innocent.txt (secrets file, details withheld)"
    )
    assert result.artifacts[0].data == {
        "columns": ["path", "bytes"],
        "rows": [["innocent.txt", "withheld"]],
    }
    nested = invoke(workspace, "find_files", {"pattern": "src/*.py"})
    assert nested.artifacts[0].data["rows"] == [["src/app.py", "39"]]


@pytest.mark.parametrize(
    ("pattern", "error"),
    [
        ("../outside/*", "Error: path '../outside/*' leaves the files folder."),
        ("/etc/*", "Error: path '/etc/*' is absolute; give a path inside the files folder."),
        ("", "Error: pattern must be 1 to 200 characters."),
        ("*" * 201, "Error: pattern must be 1 to 200 characters."),
    ],
)
def test_find_files_refuses_escaping_patterns(
    workspace: Workspace, pattern: str, error: str
) -> None:
    assert invoke(workspace, "find_files", {"pattern": pattern}).content == error


def test_find_files_count_is_bounded(workspace: Workspace) -> None:
    root = workspace.files_root
    assert root is not None
    for n in range(250):
        (root / "src" / f"m{n:03}.py").write_text("")
    result = invoke(workspace, "find_files", {"pattern": "*.py", "limit": 10**9})
    assert len(result.artifacts[0].data["rows"]) == 200


def test_file_info_is_a_key_value_artifact(workspace: Workspace) -> None:
    result = invoke(workspace, "file_info", {"path": "src/app.py"})
    (artifact,) = result.artifacts
    assert artifact.type is ArtifactType.KEY_VALUE
    items = dict(artifact.data["items"])
    assert (items["path"], items["kind"], items["bytes"]) == ("src/app.py", "file", "39")
    assert items["mode"] == "-rw-r--r--"
    assert "kind: file\nbytes: 39\n" in result.content


def test_file_info_refuses_special_files(workspace: Workspace) -> None:
    assert invoke(workspace, "file_info", {"path": "pipe"}).content == (
        "Error: path 'pipe' is a special file."
    )


def test_files_tools_fail_closed_without_a_files_root(tmp_path: Path) -> None:
    for tool in ("browse_folder", "find_files", "file_info", "read_source", "search_code"):
        args = {"pattern": "x"} if tool in ("find_files", "search_code") else {"path": "x"}
        result = invoke(Workspace(), tool, args)
        assert result.content == "Error: the workspace has no files folder.", tool
