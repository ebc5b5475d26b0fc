"""A run waiting at its egress limit, over the API: the pending view names the bytes, a
decision from the inspector's endpoint sends the held request or ends the run, on a real store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolwire.core.sealing import StateKey
from toolwire.inspector import create_app
from toolwire.store import RunStore
from toolwire.workspace.config import load_workspace

from ..inspector_kit import AUTH, call, settings, waiting_registry
from .asgi import asgi_client
from .test_decisions import decide, lines, start

pytestmark = pytest.mark.anyio
SCRIPT = [{"tool_calls": [call("lookup", {"customer": "Ada"})]}, {"content": "Ada has orders."}]


def app_for(tmp_path: Path) -> Any:
    path = tmp_path / "workspace.toml"
    path.write_text('[egress]\nmax_run_bytes = 1\non_limit = "approve"\n')
    store = RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}")
    return store, create_app(settings(registry=waiting_registry(), store=store,
                                      state_key=StateKey.generate(),
                                      workspace=load_workspace(path),
                                      scripts={"metered": SCRIPT}))  # fmt: skip


@pytest.mark.parametrize("action", ["approve", "deny"])
async def test_the_inspector_shows_and_decides_an_egress_pause(tmp_path: Path, action: str) -> None:
    store, app = app_for(tmp_path)
    async with asgi_client(app) as client:
        end = await start(client, "metered")
        assert (end["type"], end["status"]) == ("end", "awaiting_approval")
        pending = end["pending"]
        assert (pending["kind"], pending["calls"], pending["previews"]) == ("egress", [], [])
        egress = pending["egress"]
        facts = [egress[k] for k in ("provider", "scope", "sent_bytes", "limit_bytes")]
        assert facts == ["metered", "run", 0, 1]
        assert egress["request_bytes"] > 1
        shown = await client.get(f"/api/runs/{end['run_id']}/pending", headers=AUTH)
        assert shown.status_code == 200 and shown.json() == pending
        response = await decide(client, end["run_id"], action=action, digest=pending["digest"])
        assert response.status_code == 200
        events = lines(response.content)
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert steps[0]["kind"] == "decision" and steps[0]["decision"] == action
    spent = store.egress_spent(end["run_id"])
    store.close()
    if action == "approve":
        assert events[-1]["status"] == "completed"
        assert [s["kind"] for s in steps] == ["decision", "request", "llm"]
        assert spent == egress["request_bytes"]
    else:
        assert events[-1]["reason"] == "egress_limit"
        assert [s["kind"] for s in steps] == ["decision"]
        assert spent == 0
