"""Byte bounds for both channels of a tool result, applied once at the invoke seam.

Content: coerced to valid UTF-8, then capped at ``CONTENT_BYTE_CAP`` bytes inclusive. The head
is kept, cut on a character boundary, and the truncation marker counts inside the cap.

Artifacts: every string leaf, key and label coerced the same way, then the whole list validated
with the canonical encoder's rules (finite numbers, JSON types only, no cycles, depth at most
``ARTIFACT_MAX_DEPTH``) and an independent ``ARTIFACT_BYTE_CAP``. Any failure replaces the whole
list with exactly one ``text`` artifact labelled ``Artifacts omitted``: never a partial structure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolwire.jsonenc import dumps_bytes
from toolwire.reprs import size, tagged
from toolwire.result import Artifact, ArtifactType
from toolwire.text import coerce_utf8

# Tool output goes to an external provider on every round; 50 kB is ample for a model to read
# and keeps one hostile tool from filling the context window or the bill.
CONTENT_BYTE_CAP = 50_000
# Artifacts stay in the run, but they are streamed to a browser and stored per step: the same
# budget keeps one step's row and stream line small.
ARTIFACT_BYTE_CAP = 50_000
# JSON nesting, counting the artifact list as level 1 (a table's cells sit at level 5). Deeper
# data is almost surely an accident or an attack on recursive renderers.
ARTIFACT_MAX_DEPTH = 64

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


def bound_content(content: str | bytes) -> BoundedContent:
    """Coerce to UTF-8 and cap at ``CONTENT_BYTE_CAP`` bytes, marker included."""
    text = coerce_utf8(content)
    if text.isascii():  # one byte per character: no need to encode a large output
        if len(text) <= CONTENT_BYTE_CAP:
            return BoundedContent(text, len(text))
        return BoundedContent(
            text[: CONTENT_BYTE_CAP - _MARKER_BYTES] + TRUNCATION_MARKER, len(text)
        )
    encoded = text.encode("utf-8")
    if len(encoded) <= CONTENT_BYTE_CAP:
        return BoundedContent(text, len(encoded))
    head = encoded[: CONTENT_BYTE_CAP - _MARKER_BYTES].decode("utf-8", "ignore")
    return BoundedContent(head + TRUNCATION_MARKER, len(encoded))


class _Unencodable(Exception):
    """Internal: why an artifact list cannot be kept."""


def bound_artifacts(artifacts: Sequence[Artifact]) -> tuple[Artifact, ...]:
    """Coerce and validate the whole list; on any failure return the single marker."""
    if not artifacts:
        return ()
    try:
        coerced = tuple(_coerce_artifact(a) for a in artifacts)
        size = len(dumps_bytes([a.to_dict() for a in coerced]))
    except _Unencodable as reason:
        return (omitted_marker(f"could not be encoded: {reason}"),)
    except (TypeError, ValueError, RecursionError):
        return (omitted_marker("could not be encoded"),)
    if size > ARTIFACT_BYTE_CAP:
        return (omitted_marker(f"exceeded {ARTIFACT_BYTE_CAP} bytes ({size} bytes encoded)"),)
    return coerced


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
