"""Image artifacts: checked and capped at the seam, kept without pixels when redacted."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import Artifact, ArtifactType, ToolResult, bound_artifacts
from toolwire.core.bounding import ARTIFACT_BYTE_CAP, IMAGE_DATA_CAP, IMAGE_TYPES
from toolwire.core.jsonenc import dumps_bytes
from toolwire.policy.privacy import IMAGE_NOT_KEPT, PrivacyLevel, filter_run_step
from toolwire.policy.trace import ToolStep

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(40))).decode()


def b64(size: int) -> str:
    """Base64 of exactly ``size`` characters (a multiple of 4)."""
    return base64.b64encode(b"x" * (size // 4 * 3)).decode()


def test_a_small_image_of_a_drawn_type_is_kept_whole() -> None:
    (kept,) = bound_artifacts([Artifact.image("logo", "image/png", PNG)])
    assert kept == Artifact(ArtifactType.IMAGE, "logo", {"mime_type": "image/png", "data": PNG,
                                                          "note": ""})  # fmt: skip
    assert {"image/png", "image/jpeg", "image/gif", "image/webp"} == IMAGE_TYPES


@pytest.mark.parametrize(
    ("mime", "data", "note"),
    [
        ("image/svg+xml", PNG, "Image omitted: 'image/svg+xml' is not a type the page draws."),
        ("text/html", PNG, "Image omitted: 'text/html' is not a type the page draws."),
        ("image/png", "not base64!", "Image omitted: the data is not base64."),
        ("image/png", PNG[:-1], "Image omitted: the data is not base64."),
        ("image/png", "", "Image omitted: no data."),
    ],
)
def test_an_image_the_page_would_not_draw_keeps_its_place_with_a_note(
    mime: str, data: str, note: str
) -> None:
    text = Artifact.text("after", "kept")
    bounded = bound_artifacts([Artifact.image("pic", mime, data), text])
    assert bounded == (Artifact.image("pic", mime, "", note=note), text)


def test_a_malformed_image_artifact_is_a_note_not_a_failure() -> None:
    odd = Artifact(ArtifactType.IMAGE, "odd", {"mime_type": 3, "data": ["x"]})
    assert bound_artifacts([odd]) == (
        Artifact.image("odd", "", "", note="Image omitted: not an image."),
    )


def test_images_share_the_cap_in_order_and_the_rest_of_the_list_survives() -> None:
    big, small = b64(IMAGE_DATA_CAP - 400), b64(800)
    table = Artifact.table("rows", ["a"], [["1"]])
    bounded = bound_artifacts([
        Artifact.image("first", "image/png", big),
        Artifact.image("second", "image/jpeg", small),
        table,
        Artifact.image("third", "image/gif", b64(400)),
    ])  # fmt: skip
    assert [a.data["data"] for a in bounded if a.type is ArtifactType.IMAGE] == [big, "", b64(400)]
    assert bounded[1].data["note"] == (
        "Image omitted: 800 characters of base64, over the 400 left of the 32000 the images of "
        "one result share."
    )
    assert bounded[2] == table
    assert len(dumps_bytes([a.to_dict() for a in bounded])) < ARTIFACT_BYTE_CAP


@given(sizes=st.lists(st.integers(0, 12_000).map(lambda n: n // 4 * 4), max_size=8))
def test_kept_image_data_never_exceeds_the_cap(sizes: list[int]) -> None:
    images = [Artifact.image(f"i{n}", "image/webp", b64(size)) for n, size in enumerate(sizes)]
    bounded = bound_artifacts(images)
    kept = [len(a.data["data"]) for a in bounded]
    assert sum(kept) <= IMAGE_DATA_CAP
    assert [a.label for a in bounded] == [a.label for a in images]  # every one keeps its place
    left = IMAGE_DATA_CAP
    for size, length in zip(sizes, kept, strict=True):  # greedy, in order
        assert length == (size if 0 < size <= left else 0)
        left -= length


def image_step(*artifacts: Artifact) -> Any:
    result = ToolResult.text("here", *artifacts)
    return ToolStep(round=1, duration_ms=1.0, tool_call_id="c1", tool_name="shot",
                    tool_arguments={}, tool_result=result.content, tool_is_error=False,
                    tool_artifacts=result.artifacts)  # fmt: skip


def test_redacted_keeps_the_image_but_not_its_pixels_and_full_keeps_them() -> None:
    step = image_step(Artifact.image("screen", "image/png", PNG), Artifact.text("t", "x"))
    redacted = filter_run_step(step, PrivacyLevel.REDACTED)["tool_artifacts"]
    assert redacted == [
        {"type": "image", "label": "screen",
         "data": {"mime_type": "image/png", "data": "", "note": IMAGE_NOT_KEPT}},
        {"type": "text", "label": "t", "data": {"text": "x"}},
    ]  # fmt: skip
    full = filter_run_step(step, PrivacyLevel.FULL)["tool_artifacts"]
    assert full[0]["data"]["data"] == PNG
    metadata = filter_run_step(step, PrivacyLevel.METADATA)
    assert "tool_artifacts" not in metadata
    assert metadata["tool_artifact_types"] == ["image", "text"]
