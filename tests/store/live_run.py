"""A run whose MCP server asks a person a question, carried out in this process with a person
to ask (as the inspector carries out its runs) and recorded in a store; run as a second process
by the tests of live questions.

    python -m tests.store.live_run URL FOLDER WAIT_S USER

Prints one JSON line with the run's id once it started, and one with how it ended: its status,
what the server was told (the tool's result) and the run's decision steps.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from toolwire import RunOptions, ScriptedProvider
from toolwire.mcp.asks import attending
from toolwire.mcp.hub import HUB
from toolwire.policy.trace import DecisionStep
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.tools.api import ToolContext, User

from ..mcp.kit import PYTHON, remote_registry, script, workspace


def said(line: dict[str, object]) -> None:
    print(json.dumps(line), flush=True)


async def main(url: str, folder: Path, wait_s: float, user: str) -> None:
    ws = workspace(folder, f"""
[mcp_servers.asking]
command = "{PYTHON}"
args = [{script("asking.py")}]
enabled = true
admin_only = false
data_class = "public"
timeout = 20
elicitation_timeout = {wait_s}
""")  # fmt: skip
    tools, problems = remote_registry(ws)
    assert problems == [], problems
    store = RunStore.open(url)
    call = {"name": "asking__sign_up", "arguments": {}}
    turns: list[dict[str, object]] = [{"tool_calls": [call]}, {"content": "signed up"}]
    request = RunRequest.of("sign me up", provider=ScriptedProvider.from_turns(turns),
                            options=RunOptions(trust_zone="local"),
                            context=ToolContext(user=User(user)))  # fmt: skip
    try:
        with attending():  # a person can be asked, as in the inspector
            outcome = await Runtime(tools, recorder=store).run(
                request, on_start=lambda run_id: said({"run_id": run_id})
            )
    finally:
        HUB.close()
        store.close()
    result = outcome.result
    told = None if result is None or not result.trace else result.trace[-1].result
    steps = [s for s in outcome.steps if isinstance(s, DecisionStep)]
    said({"status": str(outcome.status), "told": told,
          "decisions": [[s.decision, s.decided_by] for s in steps]})  # fmt: skip


if __name__ == "__main__":
    url, folder, wait, user = sys.argv[1:5]
    asyncio.run(main(url, Path(folder), float(wait), user))
