"""Re-running a run replayed from a script file: the script's name labels the run, but the
run form's provider is the one the server serves it under (``scripted``), over a real SQLite
store at the full level and the server's own provider factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from toolwire.inspector import InspectorSettings, create_app, provider_factory
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import AUTH, TOKEN, registry

pytestmark = pytest.mark.anyio
SCRIPT = """
name: ux audit replay
turns:
  - content: "Nothing to look up."
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    store = RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}", privacy=PrivacyLevel.FULL)
    settings = InspectorSettings(
        registry=registry(), provider_factory=provider_factory(script), token=TOKEN,
        store=store, privacy_level=str(PrivacyLevel.FULL),
    )  # fmt: skip
    transport = httpx.ASGITransport(create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
        yield c
    store.close()


async def test_a_scripted_run_is_rerun_as_scripted_not_by_its_scripts_name(
    client: httpx.AsyncClient,
) -> None:
    started = await client.post("/api/runs", json={"prompt": "hi", "provider": "scripted"},
                                headers=AUTH)  # fmt: skip
    assert started.status_code == 200, started.text
    original = started.json()["context"]["run_id"]
    listed = (await client.get(f"/api/runs/{original}", headers=AUTH)).json()
    assert listed["provider"] == "ux audit replay"  # the script's name labels the run
    form = (await client.get(f"/api/runs/{original}/rerun", headers=AUTH)).json()
    assert (form["available"], form["provider"], form["provider_problem"]) == (
        True, "scripted", ""
    )  # fmt: skip
    again = await client.post("/api/runs", headers=AUTH, json={
        "prompt": form["prompt"], "provider": form["provider"], "rerun_of": original})  # fmt: skip
    assert again.status_code == 200, again.text
    assert again.json()["result"]["status"] == "completed"
