"""The README's example of tools that wait for a person defines working tools."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from toolwire import RunRequest, Runtime, ScriptedProvider, StateKey, ToolRegistry
from toolwire.core.lifecycle import RunStatus
from toolwire.tools.api import input_model_of, needs_approval

README = Path(__file__).parents[1] / "README.md"


def section(title: str) -> str:
    text = README.read_text()
    start = text.index(f"## {title}")
    return text[start : text.index("\n## ", start + 1)]


def test_the_approval_example_pauses_with_its_own_preview_and_asks_for_input() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", section("Runs that wait for a person"), re.S)
    names: dict[str, Any] = {}
    exec(compile(code, str(README), "exec"), names)  # the README's own text
    refund, send_receipt = names["refund"], names["send_receipt"]
    assert needs_approval(refund) and not needs_approval(send_receipt)
    assert input_model_of(send_receipt) is names["Recipient"]
    provider = ScriptedProvider.from_turns(
        [{"tool_calls": [{"name": "refund", "arguments": {"invoice_id": 7, "amount_cents": 1250}}]}]
    )
    runtime = Runtime(ToolRegistry([refund, send_receipt]), state_key=StateKey.generate())
    outcome = runtime.run_sync(RunRequest.of("refund invoice 7", provider=provider))
    assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
    assert outcome.pause.previews[0].lines == ("invoice 7: refund 12.50",)
