"""A pending write_file in Chromium: the preview's whitespace is visible (with words for a screen
reader and a legend), and a file changed after the preview makes the approved run wait again
on a fresh preview, marked changed, the other writer's content kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page

from toolwire.core.sealing import StateKey
from toolwire.policy.privacy import PrivacyLevel
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace

from .harness import Watched, start_run, stored_inspector, wait_status

pytestmark = pytest.mark.browser
PANEL = "#view-run .pending-panel"
INDENTED = "def main():\n    if ready:\n        start()\n        report()\n"
MOVED_OUT = "def main():\n    if ready:\n        start()\n    report()\n"
LEGEND = (
    "Whitespace is shown: → tab, · space (at the start or end of a line, or two or more "
    "together), ␣ another space character."
)
# Each line as it is seen: the glyphs, without the words kept for assistive technology.
SEEN = """e => e.map(line => {
  const copy = line.cloneNode(true);
  copy.querySelectorAll(".visually-hidden").forEach(x => x.remove());
  return copy.textContent;
})"""


def write(path: str, text: str) -> list[dict[str, object]]:
    arguments = {"path": path, "text": text}
    turn: dict[str, object] = {"tool_calls": [{"name": "write_file", "arguments": arguments}]}
    return [turn, {"content": "Written."}]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("files")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, files: Path) -> Iterator[str]:
    registry = ToolRegistry([t for t in builtin_tools() if t.spec.name == "write_file"])
    scripts = {"indent": write("app.py", MOVED_OUT), "race": write("race.txt", "mine\n")}
    with stored_inspector(tmp_path_factory, PrivacyLevel.METADATA, registry=registry,
                          scripts=scripts, workspace=Workspace(files_root=files),
                          state_key=StateKey.generate()) as url:  # fmt: skip
        yield url


def seen_lines(page: Page) -> list[str]:
    found: list[str] = page.eval_on_selector_all(f"{PANEL} .preview-line", SEEN)
    return found


def test_an_indentation_moved_out_of_a_block_reads_as_two_distinct_lines(
    watched: Watched, files: Path
) -> None:
    page = watched.page
    (files / "app.py").write_text(INDENTED)
    start_run(page, "indent")
    wait_status(page, "awaiting_approval")
    assert seen_lines(page) == [
        "--- a/app.py", "+++ b/app.py", "@@ -1,4 +1,4 @@",
        " def main():", "·····if ready:", "·········start()",
        "-········report()", "+····report()",
    ]  # fmt: skip
    words = page.eval_on_selector_all(
        f"{PANEL} .preview-line .visually-hidden", "e => e.map(x => x.textContent)"
    )
    assert words == [" 5 spaces ", " 9 spaces ", " 8 spaces ", " 4 spaces "]
    hidden = page.eval_on_selector_all(
        f"{PANEL} .ws-glyph", "e => e.map(x => x.getAttribute('aria-hidden'))"
    )
    assert hidden == ["true"] * 4
    assert page.text_content(f"{PANEL} .ws-legend") == LEGEND
    assert page.text_content(f"{PANEL} .badge.muted") == "re-checked before it runs"
    assert page.eval_on_selector_all(f"{PANEL} .preview-line > :not(.ws)", "e => e.length") == 0
    assert (files / "app.py").read_text() == INDENTED


def test_a_file_changed_after_its_preview_waits_again_on_a_fresh_one(
    watched: Watched, files: Path
) -> None:
    page = watched.page
    race = files / "race.txt"
    race.write_text("old\n")
    start_run(page, "race")
    wait_status(page, "awaiting_approval")
    assert seen_lines(page)[3:] == ["-old", "+mine"]
    assert page.is_hidden(f"{PANEL} .pending-changed")
    race.write_text("theirs\n")
    page.click(f"{PANEL} button.approve")
    page.wait_for_selector(f"{PANEL} .pending-changed")
    wait_status(page, "awaiting_approval")
    assert page.text_content(f"{PANEL} .pending-changed") == (
        "What the calls marked changed were previewed on was changed after the decision, so "
        "nothing ran. Their previews are fresh: read them and decide again."
    )
    assert page.text_content(f"{PANEL} .badge.changed") == "changed"
    assert seen_lines(page)[3:] == ["-theirs", "+mine"]
    assert race.read_text() == "theirs\n"
    page.click(f"{PANEL} button.approve")
    wait_status(page, "completed")
    assert race.read_text() == "mine\n"
