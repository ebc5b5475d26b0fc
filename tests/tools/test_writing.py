from __future__ import annotations

import stat
from pathlib import Path

import pytest

from toolwire.core.lifecycle import RunStatus
from toolwire.loop.suspension import PREVIEW_LINES
from toolwire.tools.api import Effect, needs_approval
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.builtin.writing import MAX_WRITE_BYTES
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace

from .conftest import OUTSIDE_SECRET, gated_run, invoke, preview

APP = "def main():\n    return 42\n# third line\n"


def root(workspace: Workspace) -> Path:
    assert workspace.files_root is not None
    return workspace.files_root


def test_write_file_is_enabled_but_every_call_waits_for_approval() -> None:
    registry = ToolRegistry(builtin_tools())
    tool = registry.get("write_file")
    assert tool is not None
    traits = (tool.requires_approval, tool.enabled_by_default, tool.group, tool.data_class)
    assert traits == (True, True, "editing", "content")
    assert getattr(tool, "effect", None) is Effect.IDEMPOTENT_WRITE and needs_approval(tool)
    assert "write_file" in registry.enabled_names()


# -- preview -------------------------------------------------------------------------------


def test_preview_of_a_new_file_gives_its_size_and_first_lines(workspace: Workspace) -> None:
    lines = preview(workspace, "write_file", {"path": "notes/todo.txt", "text": "a\n  b\n"})
    assert lines == ["new file notes/todo.txt, 2 lines", "a", "  b"]
    assert not (root(workspace) / "notes").exists()


def test_preview_of_a_long_new_file_stops_after_a_screenful(workspace: Workspace) -> None:
    text = "".join(f"line {n}\n" for n in range(1, 41))
    lines = preview(workspace, "write_file", {"path": "long.txt", "text": text})
    assert lines == ["new file long.txt, 40 lines", *(f"line {n}" for n in range(1, 20))]


def test_preview_of_an_existing_file_is_a_unified_diff(workspace: Workspace) -> None:
    text = "def main():\n    return 43\n# third line\n# fourth\n"
    assert preview(workspace, "write_file", {"path": "src/app.py", "text": text}) == [
        "--- a/src/app.py",
        "+++ b/src/app.py",
        "@@ -1,3 +1,4 @@",
        " def main():",
        "-    return 42",
        "+    return 43",
        " # third line",
        "+# fourth",
    ]
    assert (root(workspace) / "src" / "app.py").read_text() == APP


def test_preview_of_the_same_text_says_nothing_changes(workspace: Workspace) -> None:
    assert preview(workspace, "write_file", {"path": "README.md", "text": "hello\n"}) == [
        "README.md already holds this text; nothing would change."
    ]


# -- refusals: the tool and its preview alike ------------------------------------------------

REFUSED = [
    ("../outside/secret.txt", "path '../outside/secret.txt' leaves the files folder."),
    ("escape.txt", "path 'escape.txt' leaves the files folder."),
    ("escape_dir/new.txt", "path 'escape_dir/new.txt' leaves the files folder."),
    ("/etc/motd", "path '/etc/motd' is absolute; give a path inside the files folder."),
    ("a\x00b.txt", "path contains a NUL byte."),
    (".env", "'.env' looks like a secrets file and is never written."),
    ("innocent.txt", "'innocent.txt' looks like a secrets file and is never written."),
    ("keys/new.pem", "'keys/new.pem' looks like a secrets file and is never written."),
    ("src", "path 'src' is a folder; give a file's path."),
    ("pipe", "path 'pipe' is not a regular file."),
    ("README.md/inner.txt", "path 'README.md/inner.txt' could not be written."),
]


@pytest.mark.parametrize(("path", "reason"), REFUSED)
def test_a_refused_path_is_never_written(workspace: Workspace, path: str, reason: str) -> None:
    before = sorted(p.name for p in root(workspace).rglob("*"))
    result = invoke(workspace, "write_file", {"path": path, "text": "pwned\n"})
    assert (result.is_error, result.content) == (True, f"Error: {reason}")
    assert sorted(p.name for p in root(workspace).rglob("*")) == before
    assert (root(workspace).parent / "outside" / "secret.txt").read_text() == OUTSIDE_SECRET
    assert (root(workspace) / "README.md").read_text() == "hello\n"


@pytest.mark.parametrize(("path", "reason"), REFUSED[:-1])
def test_the_preview_of_a_refused_path_reads_nothing(
    workspace: Workspace, path: str, reason: str
) -> None:
    lines = preview(workspace, "write_file", {"path": path, "text": "pwned\n"})
    assert lines == [f"The call will be refused: {reason}"]


def test_text_over_the_cap_is_refused(workspace: Workspace) -> None:
    text = "x" * MAX_WRITE_BYTES + "é"
    expected = f"text is {MAX_WRITE_BYTES + 2} bytes; write_file takes at most {MAX_WRITE_BYTES}."
    result = invoke(workspace, "write_file", {"path": "big.txt", "text": text})
    assert (result.is_error, result.content) == (True, f"Error: {expected}")
    assert preview(workspace, "write_file", {"path": "big.txt", "text": text}) == [
        f"The call will be refused: {expected}"
    ]
    assert not (root(workspace) / "big.txt").exists()


def test_text_at_the_cap_is_written(workspace: Workspace) -> None:
    result = invoke(workspace, "write_file", {"path": "big.txt", "text": "x" * MAX_WRITE_BYTES})
    assert result.content == f"wrote big.txt: {MAX_WRITE_BYTES} bytes, 1 lines."


def test_a_lone_surrogate_is_refused(workspace: Workspace) -> None:
    result = invoke(workspace, "write_file", '{"path": "u.txt", "text": "\\ud800"}')
    assert result.content == "Error: text is not valid Unicode; nothing was written."
    assert not (root(workspace) / "u.txt").exists()


# -- the write itself ------------------------------------------------------------------------


def test_a_write_creates_its_folders_and_leaves_no_temporary_file(workspace: Workspace) -> None:
    result = invoke(workspace, "write_file", {"path": "docs/a/b.txt", "text": "one\ntwo\n"})
    assert (result.is_error, result.content) == (False, "wrote docs/a/b.txt: 8 bytes, 2 lines.")
    written = root(workspace) / "docs" / "a" / "b.txt"
    assert written.read_bytes() == b"one\ntwo\n"
    assert stat.S_IMODE(written.stat().st_mode) == 0o644
    assert [p.name for p in written.parent.iterdir()] == ["b.txt"]


def test_a_write_replaces_a_file_and_keeps_its_mode(workspace: Workspace) -> None:
    app = root(workspace) / "src" / "app.py"
    app.chmod(0o600)
    result = invoke(workspace, "write_file", {"path": "src/app.py", "text": "pass\n"})
    assert result.content == "wrote src/app.py: 5 bytes, 1 lines."
    assert (app.read_text(), stat.S_IMODE(app.stat().st_mode)) == ("pass\n", 0o600)
    assert sorted(p.name for p in app.parent.iterdir()) == ["app.py"]


# -- through Runtime ---------------------------------------------------------------------------


def test_a_long_diff_is_capped_by_the_pause(workspace: Workspace) -> None:
    text = "".join(f"line {n}\n" for n in range(1, 31))
    gated = gated_run(workspace, "write_file", {"path": "src/app.py", "text": text})
    pause = gated.outcome.pause
    assert pause is not None
    removed = ["-def main():", "-    return 42", "-# third line"]  # whitespace kept exactly
    added = [f"+line {n}" for n in range(1, 31)]
    head = ["--- a/src/app.py", "+++ b/src/app.py", "@@ -1,3 +1,30 @@", *removed, *added]
    assert len(head) == 36
    assert pause.previews[0].lines == (*head[:PREVIEW_LINES], "… and 16 more line(s), not shown.")


def test_write_waits_then_writes_once_when_approved(workspace: Workspace) -> None:
    gated = gated_run(workspace, "write_file", {"path": "out/new.md", "text": "# Title\n"})
    assert gated.outcome.status is RunStatus.AWAITING_APPROVAL
    pause = gated.outcome.pause
    assert pause is not None
    assert pause.previews[0].lines == ("new file out/new.md, 1 lines", "# Title")
    assert not (root(workspace) / "out").exists()
    resumed = gated.decide("approve")
    assert resumed.status is RunStatus.COMPLETED
    assert gated.tool_message().content == "wrote out/new.md: 8 bytes, 1 lines."
    assert (root(workspace) / "out" / "new.md").read_text() == "# Title\n"


def test_write_denied_leaves_the_file_and_tells_the_model(workspace: Workspace) -> None:
    gated = gated_run(workspace, "write_file", {"path": "src/app.py", "text": "pass\n"})
    gated.decide("deny")
    message = gated.tool_message()
    assert (message.is_error, message.content) == (
        True,
        'Error: tool "write_file" was denied by the operator.',
    )
    assert (root(workspace) / "src" / "app.py").read_text() == APP
