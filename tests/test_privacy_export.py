"""What may leave the process: the store's filter, and never an artifact at any level."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import Artifact
from toolwire.core.jsonenc import dumps
from toolwire.policy.privacy import PrivacyLevel, filter_for_export, filter_run_step
from toolwire.policy.trace import LlmStep, ToolStep

from .fakes import leaves

SECRET = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"


def tool_step(artifacts: tuple[Artifact, ...] | None) -> ToolStep:
    return ToolStep(
        round=2,
        tool_name="lookup",
        tool_call_id="call_1",
        tool_arguments={"query": f"find {SECRET}"},
        tool_result=f"found {SECRET}",
        tool_artifacts=artifacts,
    )


CELLS = (Artifact.table("rows", ["k"], [["cell-canary"]]), Artifact.text("note", "text-canary"))


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_no_level_exports_an_artifact_but_every_level_counts_them(level: PrivacyLevel) -> None:
    exported = filter_for_export(tool_step(CELLS), level)
    assert "tool_artifacts" not in exported
    assert "canary" not in dumps(exported)
    assert exported["tool_artifacts_count"] == 2
    assert exported["tool_artifact_types"] == ["table", "text"]


def test_apart_from_artifacts_an_export_is_what_the_store_keeps() -> None:
    step = tool_step(CELLS)
    for level in PrivacyLevel:
        stored = filter_run_step(step, level)
        exported = filter_for_export(step, level)
        stored.pop("tool_artifacts", None)
        assert {k: v for k, v in exported.items() if not k.startswith("tool_artifact")} == {
            k: v for k, v in stored.items() if not k.startswith("tool_artifact")
        }


def test_redacted_masks_secrets_and_full_keeps_the_text() -> None:
    redacted = filter_for_export(tool_step(None), PrivacyLevel.REDACTED)
    assert redacted["tool_result"] == "found sk-ant-***"
    assert redacted["tool_arguments"] == {"query": "find sk-ant-***"}
    full = filter_for_export(tool_step(None), PrivacyLevel.FULL)
    assert full["tool_result"] == f"found {SECRET}"
    metadata = filter_for_export(tool_step(None), PrivacyLevel.METADATA)
    assert SECRET not in dumps(metadata) and metadata["content_withheld"] is True
    assert "tool_artifacts_count" not in metadata  # none were made


def test_a_step_without_artifacts_exports_like_it_is_stored() -> None:
    step = LlmStep(round=1, content=f"answer {SECRET}", prompt_tokens=3)
    for level in PrivacyLevel:
        assert filter_for_export(step, level) == filter_run_step(step, level)


@given(st.text(min_size=1), st.sampled_from(list(PrivacyLevel)))
def test_any_artifact_text_stays_home(text: str, level: PrivacyLevel) -> None:
    marker = f"\u2603{text}\u2603"
    exported = filter_for_export(tool_step((Artifact.text(marker, marker),)), level)
    assert not any(marker in found for found in leaves(exported))
