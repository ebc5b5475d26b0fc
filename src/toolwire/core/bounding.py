"""Byte bounds for both channels of a tool result, applied once at the invoke seam.

Content: coerced to valid UTF-8, then capped at ``CONTENT_BYTE_CAP`` bytes inclusive. The head
is kept, cut on a character boundary, and the truncation marker counts inside the cap.

Artifacts: every string leaf, key and label coerced the same way, then the whole list validated
with the canonical encoder's rules (finite numbers, JSON types only, no cycles, depth at most
``ARTIFACT_MAX_DEPTH``) and an independent ``ARTIFACT_BYTE_CAP``. Any failure replaces the whole
list with exactly one ``text`` artifact labelled ``Artifacts omitted``: never a partial structure.

Images first: the images of one result share ``IMAGE_DATA_CAP`` characters of base64, in order.
An image over what is left, of a type the page does not draw, or whose data is not base64 keeps
its place and label but loses its data, and its ``note`` says why: one large image must not cost
the result every other artifact.
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolwire.core.jsonenc import dumps_bytes
from toolwire.core.reprs import size, tagged
from toolwire.core.result import Artifact, ArtifactType
from toolwire.core.text import coerce_utf8

# Tool output goes to an external provider on every round; 50 kB is ample for a model to read
# and keeps one hostile tool from filling the context window or the bill.
CONTENT_BYTE_CAP = 50_000
# Artifacts stay in the run, but they are streamed to a browser and stored per step: the same
# budget keeps one step's row and stream line small.
ARTIFACT_BYTE_CAP = 50_000
# JSON nesting, counting the artifact list as level 1 (a table's cells sit at level 5). Deeper
# data is almost surely an accident or an attack on recursive renderers.
ARTIFACT_MAX_DEPTH = 64

# Base64 characters of image data per tool result (about 24 kB of image): within the artifact
# cap, with room left for the rest of the list. A page draws an image from a data URL only of
# these types (no SVG: it is a document that can carry script).
IMAGE_DATA_CAP = 32_000
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

TRUNCATION_MARKER = f"\n…[tool result truncated at {CONTENT_BYTE_CAP} bytes]"
_MARKER_BYTES = len(TRUNCATION_MARKER.encode("utf-8"))
OMITTED_LABEL = "Artifacts omitted"


@dataclass(frozen=True, slots=True)
class BoundedContent:
    """Bounded content and the size of what the tool actually returned."""

    text: str
    original_bytes: int

    @property
    def truncated(self) -> bool:
        return self.original_bytes > CONTENT_BYTE_CAP

    def __repr__(self) -> str:
        return tagged(
            "BoundedContent", text_bytes=size(self.text), original_bytes=self.original_bytes
        )


def fits(content: object) -> bool:
    """Whether ``content`` is already what :func:`bound_content` makes of it: a ``str`` of
    ASCII within the cap (one byte a character). The common case, decided building nothing."""
    return type(content) is str and len(content) <= CONTENT_BYTE_CAP and content.isascii()


def bound_content(content: str | bytes) -> BoundedContent:
    """Coerce to UTF-8 and cap at ``CONTENT_BYTE_CAP`` bytes, marker included."""
    text = coerce_utf8(content)
    if text.isascii():  # one byte per character: no need to encode a large output
        if len(text) <= CONTENT_BYTE_CAP:
            return BoundedContent(text, len(text))
        return _cut(text, ascii=True)
    encoded = text.encode("utf-8")
    if len(encoded) <= CONTENT_BYTE_CAP:
        return BoundedContent(text, len(encoded))
    return _cut(text, ascii=False)


# The last output that was cut, and its cut: a tool that hands back the same large string
# again (a document it keeps, a cached page) gets the same bounded copy, instead of a new one
# of 100 kB (the marker's "…" makes it two bytes a character) on every call. A pure function's
# result, kept for one input only; replaced whole, so threads never see half of it.
_last_cut: list[tuple[str, BoundedContent]] = []


def _cut(text: str, *, ascii: bool) -> BoundedContent:
    """``text``, over the cap, cut to its head and the marker."""
    for kept, cut in _last_cut[-1:]:
        if kept is text:
            return cut
    if ascii:
        cut = BoundedContent(text[: CONTENT_BYTE_CAP - _MARKER_BYTES] + TRUNCATION_MARKER,
                             len(text))  # fmt: skip
    else:
        encoded = text.encode("utf-8")
        head = encoded[: CONTENT_BYTE_CAP - _MARKER_BYTES].decode("utf-8", "ignore")
        cut = BoundedContent(head + TRUNCATION_MARKER, len(encoded))
    _last_cut[:] = [(text, cut)]
    return cut


class _Unencodable(Exception):
    """Internal: why an artifact list cannot be kept."""


def bound_artifacts(artifacts: Sequence[Artifact]) -> tuple[Artifact, ...]:
    """Coerce and validate the whole list; on any failure return the single marker."""
    if not artifacts:
        return ()
    try:
        coerced = tuple(_coerce_artifact(a) for a in bound_images(artifacts))
        size = len(dumps_bytes([a.to_dict() for a in coerced]))
    except _Unencodable as reason:
        return (omitted_marker(f"could not be encoded: {reason}"),)
    except (TypeError, ValueError, RecursionError):
        return (omitted_marker("could not be encoded"),)
    if size > ARTIFACT_BYTE_CAP:
        return (omitted_marker(f"exceeded {ARTIFACT_BYTE_CAP} bytes ({size} bytes encoded)"),)
    return coerced


def bound_images(artifacts: Sequence[Artifact]) -> list[Artifact]:
    """The list with every image checked and the images' data within ``IMAGE_DATA_CAP``."""
    left = IMAGE_DATA_CAP
    out = []
    for artifact in artifacts:
        if isinstance(artifact, Artifact) and artifact.type is ArtifactType.IMAGE:
            image, used = _bound_image(artifact, left)
            out.append(image)
            left -= used
        else:
            out.append(artifact)
    return out


def _bound_image(image: Artifact, left: int) -> tuple[Artifact, int]:
    """The image as kept, and the budget it used."""
    data = image.data if isinstance(image.data, Mapping) else {}
    mime, payload, note = data.get("mime_type"), data.get("data"), data.get("note", "")
    label = image.label if isinstance(image.label, str) else ""
    if not isinstance(mime, str) or not isinstance(payload, str) or not isinstance(note, str):
        return Artifact.image(label, "", "", note="Image omitted: not an image."), 0
    why = _image_problem(mime, payload, left)
    if why is not None:
        return Artifact.image(label, mime, "", note=(note or why) if not payload else why), 0
    return Artifact.image(label, mime, payload, note=note), len(payload)


def _image_problem(mime: str, payload: str, left: int) -> str | None:
    if not payload:
        return "Image omitted: no data."
    if mime not in IMAGE_TYPES:
        return f"Image omitted: {mime[:80]!r} is not a type the page draws."
    try:
        binascii.a2b_base64(payload, strict_mode=True)
    except (binascii.Error, ValueError):
        return "Image omitted: the data is not base64."
    if len(payload) > left:
        return (
            f"Image omitted: {len(payload)} characters of base64, over the "
            f"{left} left of the {IMAGE_DATA_CAP} the images of one result share."
        )
    return None


def omitted_marker(reason: str) -> Artifact:
    """The one artifact that replaces a list that could not be kept."""
    return Artifact(ArtifactType.TEXT, OMITTED_LABEL, {"text": f"Artifacts omitted: {reason}."})


def _coerce_artifact(artifact: Artifact) -> Artifact:
    if not isinstance(artifact, Artifact) or not isinstance(artifact.type, ArtifactType):
        raise _Unencodable("not an Artifact")
    if not isinstance(artifact.label, str):
        raise _Unencodable("label is not a string")
    if not isinstance(artifact.data, Mapping):
        raise _Unencodable("data is not an object")
    # The list is level 1 and the artifact object level 2, so its data starts at level 3.
    data = _coerce_value(artifact.data, 3, set())
    return Artifact(artifact.type, coerce_utf8(artifact.label), data)


def _coerce_value(value: Any, depth: int, path: set[int]) -> Any:
    if isinstance(value, str):
        return coerce_utf8(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Unencodable("non-finite number")
        return value
    if isinstance(value, Mapping | list | tuple):
        return _coerce_container(value, depth, path)
    raise _Unencodable(f"unsupported type {type(value).__name__}")


def _coerce_container(value: Any, depth: int, path: set[int]) -> Any:
    if depth > ARTIFACT_MAX_DEPTH:
        raise _Unencodable(f"nested deeper than {ARTIFACT_MAX_DEPTH} levels")
    if id(value) in path:
        raise _Unencodable("contains a cycle")
    path.add(id(value))
    try:
        if isinstance(value, Mapping):
            return {_coerce_key(k): _coerce_value(v, depth + 1, path) for k, v in value.items()}
        return [_coerce_value(v, depth + 1, path) for v in value]
    finally:
        path.discard(id(value))


def _coerce_key(key: object) -> str:
    if not isinstance(key, str):
        raise _Unencodable(f"object key of type {type(key).__name__}")
    return coerce_utf8(key)
