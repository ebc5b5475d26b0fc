"""``find_missing_files`` and ``file_references``: paths in the database against a file root."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.demo._content import ENV_SECRETS
from toolwire.workspace.config import Workspace

from .conftest import OUTSIDE_SECRET, assert_artifacts_within_text, database_of, invoke


def files_of(workspace: Workspace) -> Path:
    assert workspace.files_root is not None
    return workspace.files_root


@pytest.fixture
def pictured(workspace: Workspace) -> Workspace:
    files = files_of(workspace)
    (files / "images").mkdir()
    (files / "images" / "mug.svg").write_text("<svg/>")
    (files / "images" / "pen.svg").write_text("<svg/>")
    (files / "src" / "pages.py").write_text(
        'HERO = "images/mug.svg"\n# also mug.svg, by name\nTOKEN = "images/mug.svg?token=abc"\n'
    )
    (files / "credentials.json").write_text('{"logo": "images/mug.svg"}\n')  # never read
    (files / "src" / "key.txt").write_text("images/mug.svg\n-----BEGIN PRIVATE KEY-----\nx\n")
    return workspace


def test_missing_and_outside_paths_are_listed(pictured: Workspace) -> None:
    result = invoke(pictured, "find_missing_files", {"table": "product_images", "column": "path"})
    assert result.content == (
        "Paths in product_images.path in root 'files' that name no file (2 of 5 rows checked):\n"
        "- id=2: images/tee.jpg (missing)\n"
        "- id=3: ../private/tote.png (outside the root)"
    )
    assert result.artifacts[0].data == {
        "columns": ["row", "path", "problem"],
        "rows": [["id=2", "images/tee.jpg", "missing"],
                 ["id=3", "../private/tote.png", "outside the root"]],
    }  # fmt: skip
    assert_artifacts_within_text(result)


def test_every_path_present(pictured: Workspace) -> None:
    with database_of(pictured) as db:
        db.execute("DELETE FROM product_images WHERE id IN (2, 3)")
    result = invoke(pictured, "find_missing_files", {"table": "product_images", "column": "path"})
    assert result.content == (
        "Every path in product_images.path in root 'files' names a file (3 rows checked)."
    )


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        ("escape.txt", "outside the root"),  # a symlink out: never followed
        ("escape_dir/secret.txt", "outside the root"),
        ("/etc/passwd", None),  # the root's top: etc/passwd in the root, missing
        ("%2e%2e/x", "outside the root"),
        ("src", "not a file"),
        ("src/app.py", ""),
        ("x\x00y", "outside the root"),
    ],
)
def test_stored_paths_never_reach_outside_the_root(
    pictured: Workspace, stored: str, problem: str | None
) -> None:
    with database_of(pictured) as db:
        db.execute("DELETE FROM product_images")
        db.execute("INSERT INTO product_images (product_id, path) VALUES (1, ?)", (stored,))
    result = invoke(pictured, "find_missing_files", {"table": "product_images", "column": "path"})
    assert OUTSIDE_SECRET not in result.content
    if problem == "":
        assert result.content.startswith("Every path in product_images.path")
    else:
        assert result.artifacts[0].data["rows"][0][2] == (problem or "missing")


def test_a_named_root(pictured: Workspace, tmp_path: Path) -> None:
    media = tmp_path / "media"
    (media / "images").mkdir(parents=True)
    (media / "images" / "tee.jpg").write_text("jpg")
    ws = dataclasses.replace(pictured, files_roots={"media": media})
    arguments = {"table": "product_images", "column": "path", "root": "media"}
    rows = invoke(ws, "find_missing_files", arguments).artifacts[0].data["rows"]
    assert [r[1] for r in rows] == ["images/mug.svg", "../private/tote.png", "/images/pen.svg"]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"table": "customers", "column": "password_hash"},
         "Error: column 'password_hash' is not a readable column of table 'customers'."),
        ({"table": "customers", "column": "nope"},
         "Error: column 'nope' is not a readable column of table 'customers'."),
        ({"table": "sessions", "column": "session_token"},
         "Error: table 'sessions' not found or not permitted."),
        ({"table": "product_images", "column": "path", "root": "elsewhere"},
         "Error: root 'elsewhere' is not a file root of the workspace: files."),
        ({"table": "product_images", "column": "path", "limit": 0},
         'Error: invalid arguments for tool "find_missing_files": limit: Input should be greater'
         " than or equal to 1"),
        ({"table": "product_images"},
         'Error: invalid arguments for tool "find_missing_files": column: Field required'),
    ],
)  # fmt: skip
def test_missing_files_refusals(pictured: Workspace, arguments: dict[str, Any], error: str) -> None:
    assert invoke(pictured, "find_missing_files", arguments).content == error


def test_references_in_cells_and_files(pictured: Workspace) -> None:
    result = invoke(pictured, "file_references", {"path": "images/mug.svg"})
    assert result.content == (
        "References to 'images/mug.svg' (3):\n"
        "- database: product_images.path id=1 (path)\n"
        "- file: src/pages.py:1 (path)\n"
        "- file: src/pages.py:2 (name)"
    )  # line 3 assigns a token: its value is masked, so it names no file as shown
    assert result.artifacts[0].data["columns"] == ["where", "location", "matched"]
    assert_artifacts_within_text(result)
    assert "credentials.json" not in result.content and "key.txt" not in result.content


def test_a_leading_slash_and_a_name_only_reference(pictured: Workspace) -> None:
    result = invoke(pictured, "file_references", {"path": "/images/pen.svg"})
    assert result.content == (
        "References to 'images/pen.svg' (1):\n- database: product_images.path id=4 (path)"
    )
    none = invoke(pictured, "file_references", {"path": "images/none.png"})
    assert none.content == "No references to 'images/none.png' or its name 'none.png'."


def test_references_never_match_inside_a_mask(pictured: Workspace) -> None:
    # The stored text holds the secret; the shown text masks it: no reference may be found.
    secret = ENV_SECRETS["MAIL_PASSWORD"]
    files = files_of(pictured)
    (files / "src" / "mail.py").write_text(f"password={secret}\n")
    result = invoke(pictured, "file_references", {"path": secret})
    assert result.content == f"No references to {secret!r} or its name {secret!r}."


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"path": "../outside/secret.txt"},
         "Error: path '../outside/secret.txt' leaves the files folder."),
        ({"path": "."}, "Error: give the path of a file in the root."),
        ({"path": "/"}, "Error: give the path of a file in the root."),
        ({"path": "a\x00b"}, "Error: path contains a NUL byte."),
        ({"path": "x", "root": "nope"},
         "Error: root 'nope' is not a file root of the workspace: files."),
        ({"path": 3}, 'Error: invalid arguments for tool "file_references": path: Input should'
         " be a valid string"),
    ],
)  # fmt: skip
def test_file_references_refusals(
    pictured: Workspace, arguments: dict[str, Any], error: str
) -> None:
    assert invoke(pictured, "file_references", arguments).content == error


def test_without_a_database_only_files_are_searched(pictured: Workspace) -> None:
    ws = dataclasses.replace(pictured, database_url=None)
    result = invoke(ws, "file_references", {"path": "images/mug.svg"})
    assert [r[0] for r in result.artifacts[0].data["rows"]] == ["file", "file"]
    missing = invoke(ws, "find_missing_files", {"table": "product_images", "column": "path"})
    assert missing.content == "Error: the workspace has no database."


PATHS = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["images/mug.svg", "../x", "/abs", "a\nb", "ada@example.com", "…", "a" * 400]),
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(paths=st.lists(PATHS, min_size=1, max_size=10))
def test_every_artifact_row_is_a_line_of_the_text(
    tmp_path_factory: pytest.TempPathFactory, paths: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("refs")
    (folder / "files" / "images").mkdir(parents=True)
    (folder / "files" / "images" / "mug.svg").write_text("x")
    database = folder / "r.db"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, path TEXT)")
        db.executemany("INSERT INTO t (path) VALUES (?)", [(p,) for p in paths])
    db.close()
    ws = Workspace(database_url=f"sqlite:///{database}", files_root=folder / "files")
    missing = invoke(ws, "find_missing_files", {"table": "t", "column": "path", "limit": 100})
    references = invoke(ws, "file_references", {"path": "images/mug.svg"})
    ws.dispose()
    for result in (missing, references):
        assert_artifacts_within_text(result)
        lines = result.content.split("\n")
        for row in result.artifacts[0].data["rows"] if result.artifacts else []:
            assert f"- {row[0]}: {row[1]} ({row[2]})" in lines
