"""Image artifacts in the store: verbatim at ``full``, no pixel at ``redacted``, none below."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from toolwire import Artifact, RunOptions, ScriptedProvider, ToolRegistry, ToolResult, tool
from toolwire.policy.privacy import IMAGE_NOT_KEPT, PrivacyLevel
from toolwire.runs.runtime import RunRequest, Runtime

from .conftest import Backend

PIXELS = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"pixels-canary-5e1f").decode()


@tool(group="screens", data_class="public")
def screenshot() -> ToolResult:
    """Take a picture."""
    return ToolResult.text("taken", Artifact.image("screen", "image/png", PIXELS))


def stored_artifacts(backend: Backend, level: PrivacyLevel) -> Any:
    store = backend.open(level)
    provider = ScriptedProvider.from_turns(
        [{"tool_calls": [{"name": "screenshot", "arguments": {}}]}, {"content": "done"}]
    )
    request = RunRequest.of("shoot", provider=provider, options=RunOptions())
    outcome = Runtime(ToolRegistry([screenshot]), recorder=store).run_sync(request)
    store.flush()
    run = store.get_run(outcome.run_id)
    assert run is not None
    (step,) = [s for s in run.steps if s["kind"] == "tool"]
    return step


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_an_image_is_stored_as_the_level_allows(backend: Backend, level: PrivacyLevel) -> None:
    step = stored_artifacts(backend, level)
    if level is PrivacyLevel.FULL:
        assert step["tool_artifacts"] == [Artifact.image("screen", "image/png", PIXELS).to_dict()]
        assert PIXELS.encode() in backend.raw_bytes()
        return
    assert PIXELS.encode() not in backend.raw_bytes()
    if level is PrivacyLevel.REDACTED:
        assert step["tool_artifacts"] == [
            {"type": "image", "label": "screen",
             "data": {"mime_type": "image/png", "data": "", "note": IMAGE_NOT_KEPT}}
        ]  # fmt: skip
    else:
        assert "tool_artifacts" not in step and step["tool_artifact_types"] == ["image"]
