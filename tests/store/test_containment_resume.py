"""Containment labels go with a run across processes: a run that read untrusted output in one
process still holds its next consequential call when another process carries it on."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from toolwire import ToolRegistry
from toolwire.core.sealing import StateKey
from toolwire.runs.runtime import Runtime
from toolwire.store import RunStore

from . import resume_kit
from .resume_kit import Kit, answer

# ``note`` declares no integrity, so its output is untrusted; ``mark`` needs approval, and its
# answer here is trusted: what holds the second mark can only be the note read in round 1.
TOOLS = resume_kit.TOOLS.replace(
    '@tool(data_class="public", requires_approval=True)',
    '@tool(data_class="public", requires_approval=True, integrity="trusted")',
)
TURNS = [
    {"tool_calls": [{"name": "note", "arguments": {"n": 0}}]},
    {"tool_calls": [{"name": "mark", "arguments": {"n": 1}}]},
    {"tool_calls": [{"name": "mark", "arguments": {"n": 2}}]},
    {"content": "finished"},
]
HELD = "planned after reading untrusted output of `note`, round 1"


def test_the_labels_of_a_killed_run_hold_its_next_write_in_the_resuming_process(
    tmp_path: Path,
) -> None:
    kit = Kit.make(tmp_path)
    (tmp_path / "script.json").write_text(json.dumps(TURNS))
    assert TOOLS != resume_kit.TOOLS
    (tmp_path / "site" / "twresume.py").write_text(TOOLS)
    url = str(tmp_path / "runs.db")
    proc, suspended = kit.suspend(url)
    proc.send_signal(signal.SIGKILL)  # only the store survives
    proc.communicate(timeout=resume_kit.WAIT_SECONDS)
    key = StateKey.parse(kit.key, "the test's key")
    with RunStore.open(url) as store:
        first = Runtime(registry_stub(), recorder=store, state_key=key).pending(suspended["run_id"])
        assert [p.held for p in first.previews] == [HELD]
        steps = store.get_run(suspended["run_id"]).steps  # type: ignore[union-attr]
        assert [s.get("tool_integrity") for s in steps if s["kind"] == "tool"] == ["untrusted"]
    (resumer,) = kit.resume(url, suspended["run_id"], suspended["digest"])
    assert answer(resumer)["status"] == "awaiting_approval"  # the second write waits again
    assert kit.marks() == ["note 0", "mark 1"]
    with RunStore.open(url) as store:
        again = Runtime(registry_stub(), recorder=store, state_key=key).pending(suspended["run_id"])
        assert [(p.tool, p.held) for p in again.previews] == [("mark", HELD)]


def registry_stub() -> ToolRegistry:
    """The test reads the sealed pause only: no tool of it runs here."""
    return ToolRegistry([])
