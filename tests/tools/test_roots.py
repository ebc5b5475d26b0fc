"""Named file roots: ``files_root`` is the root called ``files``; ``[files_roots]`` adds more."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from toolwire.core.errors import ConfigError
from toolwire.workspace.config import Workspace, load_workspace

from .conftest import OUTSIDE_SECRET, gated_run, invoke


@pytest.fixture
def rooted(workspace: Workspace, tmp_path: Path) -> Workspace:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "intro.md").write_text("# Intro\nwelcome\n")
    (docs / "id_rsa").write_text("not really a key, but named like one\n")
    (docs / "out.md").symlink_to(tmp_path / "outside" / "secret.txt")
    return dataclasses.replace(workspace, files_roots={"docs": docs})


def test_a_named_root_is_browsed_read_and_searched(rooted: Workspace) -> None:
    listing = invoke(rooted, "browse_folder", {"root": "docs", "depth": 2})
    assert listing.content == (
        "Folder .:\n"
        "  - guide/\n"
        "    - intro.md (16 bytes)\n"
        "  - id_rsa (secrets file, details withheld)\n"
        "  - out.md -> (outside)"
    )
    source = invoke(rooted, "read_source", {"root": "docs", "path": "guide/intro.md"})
    assert source.content == "guide/intro.md lines 1-2 of 2:\n# Intro\nwelcome"
    found = invoke(rooted, "find_files", {"root": "docs", "pattern": "*.md"})
    assert found.artifacts[0].data["rows"] == [["guide/intro.md", "16"]]  # out.md escapes
    hits = invoke(rooted, "search_code", {"root": "docs", "pattern": "welcome"})
    assert hits.content == "Matches for 'welcome':\nguide/intro.md:2: welcome"


def test_the_default_root_is_files(rooted: Workspace) -> None:
    assert invoke(rooted, "file_info", {"path": "README.md"}).content.startswith(
        "path: README.md\nkind: file\nbytes: 6\n"
    )
    explicit = invoke(rooted, "file_info", {"path": "README.md", "root": "files"})
    assert explicit.content.startswith("path: README.md\n")


@pytest.mark.parametrize(
    "tool", ["browse_folder", "file_info", "read_source", "find_files", "search_code"]
)
@pytest.mark.parametrize("root", ["nope", "../files", "", "x" * 500])
def test_an_unknown_root_is_refused_naming_the_roots(
    rooted: Workspace, tool: str, root: str
) -> None:
    args = {"pattern": "x"} if tool in ("find_files", "search_code") else {"path": "."}
    result = invoke(rooted, tool, {**args, "root": root})
    assert result.is_error
    assert result.content.startswith("Error: root ")
    assert result.content.endswith(" is not a file root of the workspace: files, docs.")
    assert len(result.content) < 200


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("../files/.env", "Error: path '../files/.env' leaves the files folder."),
        ("out.md", "Error: path 'out.md' leaves the files folder."),
        ("id_rsa", "Error: 'id_rsa' looks like a secrets file and is never read."),
    ],
)
def test_a_named_root_confines_like_the_default(rooted: Workspace, path: str, error: str) -> None:
    result = invoke(rooted, "read_source", {"root": "docs", "path": path})
    assert result.content == error
    assert OUTSIDE_SECRET not in result.content


def test_write_file_takes_a_root(rooted: Workspace) -> None:
    gated = gated_run(rooted, "write_file", {"root": "docs", "path": "new.md", "text": "hi\n"})
    assert gated.outcome.pause is not None
    assert gated.outcome.pause.previews[0].lines == ("new file new.md, 1 lines", "hi")
    gated.decide("approve")
    assert (rooted.files_roots["docs"] / "new.md").read_text() == "hi\n"


def test_without_any_root_the_file_tools_fail_closed() -> None:
    result = invoke(Workspace(), "browse_folder", {"root": "docs"})
    assert result.content == "Error: the workspace has no files folder."


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "workspace.toml"
    path.write_text(text)
    return path


def test_files_roots_load_beside_files_root(tmp_path: Path) -> None:
    for name in ("files", "docs", "etc"):
        (tmp_path / name).mkdir()
    workspace = load_workspace(
        write(tmp_path, 'files_root = "files"\n[files_roots]\ndocs = "docs"\nconf-1 = "etc"\n')
    )
    assert workspace.roots() == {
        "files": tmp_path / "files",
        "docs": tmp_path / "docs",
        "conf-1": tmp_path / "etc",
    }


def test_files_roots_alone_have_no_default_root(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    workspace = load_workspace(write(tmp_path, '[files_roots]\ndocs = "docs"\n'))
    result = invoke(workspace, "file_info", {"path": "."})
    assert result.content == "Error: root 'files' is not a file root of the workspace: docs."
    assert invoke(workspace, "file_info", {"path": ".", "root": "docs"}).is_error is False


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('[files_roots]\ndocs = "missing"\n', "files_roots.docs: "),
        ('[files_roots]\n"a b" = "docs"\n', "files_roots.a b: a root name is 1 to 40 letters"),
        ('files_root = "docs"\n[files_roots]\nfiles = "docs"\n', "the root 'files' is already"),
        ('[files_roots]\nfiles = "docs"\n', "the root 'files' is already the one files_root sets"),
        ("files_roots = 3\n", "files_roots: Input should be a valid dictionary"),
        ('[files_roots]\ndocs = ""\n', "files_roots.docs: must name a folder"),
    ],
)
def test_bad_files_roots_name_the_key(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "docs").mkdir()
    with pytest.raises(ConfigError) as caught:
        load_workspace(write(tmp_path, text))
    assert error in str(caught.value)
