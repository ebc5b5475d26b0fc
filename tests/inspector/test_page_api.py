"""What the page needs from the API: tool schemas, the replay default, trust zones and the
gate's verdict before a run, and prompt previews of stored runs (only when stored)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from toolwire.inspector import create_app
from toolwire.inspector.previews import PROMPT_PREVIEW_CHARS
from toolwire.policy.privacy import PrivacyLevel
from toolwire.store import RunStore

from ..inspector_kit import AUTH, HOSTILE_SCHEMA_TEXT, form_registry, settings, tune
from .asgi import asgi_client

pytestmark = pytest.mark.anyio
HOSTILE_PROMPT = (
    '<img src=x onerror="window.__pwned=1">  Ada\'s\norders sk-proj-AbCdEfGhIjKlMnOpQrStUv'
)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings(registry=form_registry()))
    async with asgi_client(app) as c:
        yield c


async def get(client: httpx.AsyncClient, path: str) -> Any:
    response = await client.get(path, headers=AUTH)
    assert response.status_code == 200, response.text
    return response.json()


async def test_each_tool_row_carries_its_parameter_schema_verbatim(
    client: httpx.AsyncClient,
) -> None:
    rows = {t["name"]: t for t in (await get(client, "/api/tools"))["tools"]}
    assert rows["tune"]["parameters"] == tune.spec.parameters
    assert rows["tune"]["parameters"]["properties"]["key"]["title"] == f"Key {HOSTILE_SCHEMA_TEXT}"
    assert rows["dormant"]["parameters"] == {
        "additionalProperties": False, "properties": {}, "type": "object",
    }  # fmt: skip


async def test_defaults_name_the_replay_and_every_trust_zone(client: httpx.AsyncClient) -> None:
    defaults = await get(client, "/api/defaults")
    assert defaults["replay_label"] == "Replay: scripted model, no provider is called"
    assert defaults["trust_zones"] == ["local", "private_hosted", "external_eu", "external_global"]


async def test_a_real_default_provider_has_no_replay_label() -> None:
    from toolwire.inspector.settings import RunDefaults

    app = create_app(settings(defaults=RunDefaults(provider="nonesuch")))
    async with asgi_client(app) as c:
        assert (await get(c, "/api/defaults"))["replay_label"] is None


async def test_the_gate_verdict_follows_the_providers_zone(client: httpx.AsyncClient) -> None:
    verdict = await get(client, "/api/gate?provider=scripted")
    assert verdict["trust_zone"] == "local"
    assert verdict["tools"] == [
        {"tool": "lookup", "allowed": True, "reason": "allowed", "detail": ""},
        {"tool": "echo", "allowed": True, "reason": "allowed", "detail": ""},
        {"tool": "dormant", "allowed": False, "reason": "disabled", "detail": ""},
        {"tool": "boom", "allowed": True, "reason": "allowed", "detail": ""},
        {"tool": "tune", "allowed": True, "reason": "allowed", "detail": ""},
    ]


async def test_a_chosen_zone_refuses_what_is_above_its_ceiling(client: httpx.AsyncClient) -> None:
    verdict = await get(client, "/api/gate?provider=scripted&trust_zone=External_Global")
    assert verdict["trust_zone"] == "external_global"
    refused = [v for v in verdict["tools"] if not v["allowed"]]
    assert refused == [
        {"tool": "dormant", "allowed": False, "reason": "disabled", "detail": ""},
        {"tool": "tune", "allowed": False, "reason": "trust_zone",
         "detail": "data class configuration is above the external_global ceiling"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("trust_zone=moon", "unknown trust zone 'moon': choose one of local, private_hosted, "
         "external_eu, external_global"),
        ("provider=nonesuch", 'unknown provider "nonesuch"'),
    ],
)  # fmt: skip
async def test_the_gate_refuses_a_zone_or_provider_it_cannot_serve(
    client: httpx.AsyncClient, query: str, message: str
) -> None:
    response = await client.get(f"/api/gate?{query}", headers=AUTH)
    assert response.status_code == 422
    assert response.json()["error"]["message"].startswith(message)


async def test_a_run_in_a_chosen_zone_is_offered_only_what_the_zone_allows(
    client: httpx.AsyncClient,
) -> None:
    body = {"prompt": "go", "trust_zone": "external_global"}
    ran = await client.post("/api/runs", json=body | {"stream": False}, headers=AUTH)
    assert ran.status_code == 200, ran.text
    context = ran.json()["context"]
    assert context["trust_zone"] == "external_global"
    assert context["tools"] == ["lookup", "echo", "boom"]
    local = (await client.post("/api/runs", json={"prompt": "go"}, headers=AUTH)).json()
    assert local["context"]["trust_zone"] == "local"
    assert local["context"]["tools"] == ["lookup", "echo", "boom", "tune"]


async def test_a_misspelt_run_zone_is_a_422_naming_the_choices(client: httpx.AsyncClient) -> None:
    response = await client.post("/api/runs", json={"prompt": "go", "trust_zone": "moon"},
                                 headers=AUTH)  # fmt: skip
    assert response.status_code == 422
    assert "choose one of local, private_hosted" in response.json()["error"]["message"]


async def stored_previews(tmp_path: Path, level: PrivacyLevel, prompt: str) -> list[Any]:
    store = RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}", privacy=level)
    app = create_app(settings(store=store, privacy_level=str(level)))
    try:
        async with asgi_client(app) as c:
            ran = await c.post("/api/runs", json={"prompt": prompt, "stream": False}, headers=AUTH)
            assert ran.status_code == 200
            return [r["prompt_preview"] for r in (await get(c, "/api/runs"))["runs"]]
    finally:
        store.close()


async def test_a_redacted_store_lists_a_one_line_redacted_prompt_preview(tmp_path: Path) -> None:
    previews = await stored_previews(tmp_path, PrivacyLevel.REDACTED, HOSTILE_PROMPT)
    assert previews == ['<img src=x onerror="window.__pwned=1"> Ada\'s orders sk-proj-***']


async def test_a_long_prompt_preview_is_cut_with_an_ellipsis(tmp_path: Path) -> None:
    [preview] = await stored_previews(tmp_path, PrivacyLevel.FULL, "word " * 100)
    assert len(preview) == PROMPT_PREVIEW_CHARS and preview.endswith("word…")


@pytest.mark.parametrize("level", [PrivacyLevel.METADATA, PrivacyLevel.NONE])
async def test_no_preview_where_the_level_keeps_no_prompt(
    tmp_path: Path, level: PrivacyLevel
) -> None:
    assert await stored_previews(tmp_path, level, "Ada's orders") == [None]
