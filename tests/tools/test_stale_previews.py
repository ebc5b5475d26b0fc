"""What a person approves is what runs: the built-in writers' previews keep whitespace, record
what they were computed on, and an approved call whose file or row changed in between does not
run; the run waits again on a fresh preview, and a decision on the old one is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolwire.core.errors import StaleDecision
from toolwire.core.lifecycle import RunStatus
from toolwire.loop.state import Pause
from toolwire.runs.runtime import OperatorDecision
from toolwire.workspace.config import Workspace

from .conftest import database_of, gated_run, query

INDENTED = "def main():\n    if ready:\n        start()\n        report()\n"
MOVED_OUT = "def main():\n    if ready:\n        start()\n    report()\n"
NEW_TEXT = "def main():\n    return 43\n"
OTHER_WRITER = "def main():\n    return 7  # another writer's\n"


def app(workspace: Workspace) -> Path:
    assert workspace.files_root is not None
    return workspace.files_root / "src" / "app.py"


def pause_of(outcome: object) -> Pause:
    pause = getattr(outcome, "pause", None)
    assert isinstance(pause, Pause)
    return pause


def test_an_indentation_moved_out_of_a_block_previews_as_distinct_lines(
    workspace: Workspace,
) -> None:
    app(workspace).write_text(INDENTED)
    gated = gated_run(workspace, "write_file", {"path": "src/app.py", "text": MOVED_OUT})
    (preview,) = pause_of(gated.outcome).previews
    assert preview.lines == (
        "--- a/src/app.py", "+++ b/src/app.py", "@@ -1,4 +1,4 @@",
        " def main():", "     if ready:", "         start()",
        "-        report()", "+    report()",
    )  # fmt: skip
    assert preview.basis is not None and preview.to_dict()["checked"] is True


def test_a_change_of_line_endings_previews_as_a_change(workspace: Workspace) -> None:
    app(workspace).write_bytes(b"one\r\ntwo\r\n")
    gated = gated_run(workspace, "write_file", {"path": "src/app.py", "text": "one\ntwo\n"})
    (preview,) = pause_of(gated.outcome).previews
    assert preview.lines[3:] == ("-one\u240d", "-two\u240d", "+one", "+two")


def test_a_file_changed_after_its_preview_is_not_overwritten_and_the_run_waits_again(
    workspace: Workspace,
) -> None:
    gated = gated_run(workspace, "write_file", {"path": "src/app.py", "text": NEW_TEXT})
    first = pause_of(gated.outcome)
    app(workspace).write_text(OTHER_WRITER)  # after the preview, before the approval
    again = gated.decide("approve")
    assert again.status is RunStatus.AWAITING_APPROVAL
    assert app(workspace).read_text() == OTHER_WRITER
    assert [s.kind for s in again.steps] == ["decision"]  # nothing ran, nothing was asked
    second = pause_of(again)
    assert second.digest != first.digest and second.calls == first.calls
    assert second.changed == (first.calls[0].id,)
    (fresh,) = second.previews
    assert fresh.lines[4:] == ("-    return 7  # another writer's", "+    return 43")
    assert fresh.basis is not None and fresh.basis != first.previews[0].basis
    assert second == gated.runtime.pending(gated.outcome.run_id)
    stale = OperatorDecision(action="approve", digest=first.digest, actor="tester")
    with pytest.raises(StaleDecision):
        gated.runtime.resume_sync(gated.outcome.run_id, stale, provider=gated.provider,
                                  context=gated.context)  # fmt: skip
    assert app(workspace).read_text() == OTHER_WRITER
    decision = OperatorDecision(action="approve", digest=second.digest, actor="tester")
    done = gated.runtime.resume_sync(gated.outcome.run_id, decision, provider=gated.provider,
                                     context=gated.context)  # fmt: skip
    assert done.status is RunStatus.COMPLETED
    assert app(workspace).read_text() == NEW_TEXT


def test_a_file_created_after_a_new_file_preview_is_not_overwritten(workspace: Workspace) -> None:
    gated = gated_run(workspace, "write_file", {"path": "notes/new.txt", "text": "mine\n"})
    assert pause_of(gated.outcome).previews[0].lines == ("new file notes/new.txt, 1 lines", "mine")
    target = app(workspace).parent.parent / "notes" / "new.txt"
    target.parent.mkdir()
    target.write_text("theirs\n")
    again = gated.decide("approve")
    assert again.status is RunStatus.AWAITING_APPROVAL
    assert target.read_text() == "theirs\n"
    assert pause_of(again).previews[0].lines[3:] == ("-theirs", "+mine")


def test_a_file_touched_but_not_changed_is_still_written(workspace: Workspace) -> None:
    gated = gated_run(workspace, "write_file", {"path": "src/app.py", "text": NEW_TEXT})
    os.utime(app(workspace), (1, 1))  # a new modification time, the same file and content
    done = gated.decide("approve")
    assert done.status is RunStatus.COMPLETED
    assert app(workspace).read_text() == NEW_TEXT


def test_a_row_changed_after_its_preview_is_not_updated_and_the_run_waits_again(
    workspace: Workspace,
) -> None:
    arguments = {"table": "customers", "id": 1, "values": {"city": "Paris"}}
    gated = gated_run(workspace, "update_record", arguments)
    first = pause_of(gated.outcome)
    assert first.previews[0].lines == ("update customers row 1:", "city: London → Paris")
    _set_city(workspace, "Berlin")
    again = gated.decide("approve")
    assert again.status is RunStatus.AWAITING_APPROVAL
    assert _city(workspace) == "Berlin"
    second = pause_of(again)
    assert second.digest != first.digest and second.changed == (first.calls[0].id,)
    assert second.previews[0].lines == ("update customers row 1:", "city: Berlin → Paris")
    stale = OperatorDecision(action="approve", digest=first.digest, actor="tester")
    with pytest.raises(StaleDecision):
        gated.runtime.resume_sync(gated.outcome.run_id, stale, provider=gated.provider,
                                  context=gated.context)  # fmt: skip
    assert _city(workspace) == "Berlin"


def test_a_change_to_another_column_of_the_row_also_waits_again(workspace: Workspace) -> None:
    arguments = {"table": "customers", "id": 1, "column": "city", "value": "Paris"}
    gated = gated_run(workspace, "set_field", arguments)
    with database_of(workspace) as db:
        db.execute("UPDATE customers SET name = 'Ada L.' WHERE id = 1")
    again = gated.decide("approve")
    assert again.status is RunStatus.AWAITING_APPROVAL and _city(workspace) == "London"


def test_an_unchanged_row_is_updated_once_approved(workspace: Workspace) -> None:
    gated = gated_run(workspace, "update_record",
                      {"table": "customers", "id": 1, "values": {"city": "Paris"}})  # fmt: skip
    assert gated.decide("approve").status is RunStatus.COMPLETED
    assert _city(workspace) == "Paris"


def _city(workspace: Workspace) -> str:
    return str(query(workspace, "SELECT city FROM customers WHERE id = 1")[0][0])


def _set_city(workspace: Workspace, city: str) -> None:
    with database_of(workspace) as db:
        db.execute("UPDATE customers SET city = ? WHERE id = 1", (city,))
