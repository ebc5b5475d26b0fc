"""The typed tool result: one wire string, run-only artifacts.

Invariant: ``ToolResult.content`` is the only member that can become provider wire bytes.
Artifacts are structured data for the trace, the live inspector and the audit store; nothing in
this module (or anywhere) turns them into text. ``ToolResult`` therefore has no string form,
cannot be built directly, and an error result never carries artifacts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NoReturn, final

from toolwire.core.reprs import ident, measured, tagged, utf8_size
from toolwire.core.slots import setters


class ArtifactType(StrEnum):
    """Rendering shapes. Each has a producer in toolwire and a renderer in the inspector."""

    TABLE = "table"  # {"columns": [str], "rows": [[str]]}
    TEXT = "text"  # {"text": str}
    TREE = "tree"  # {"nodes": [{"label": str, "children": [node, ...]}]}: a forest
    KEY_VALUE = "key_value"  # {"items": [[str, str], ...]}: ordered pairs
    CODE = "code"  # {"code": str, "language": str, "first_line": int}
    LINK = "link"  # {"url": str, "text": str}: shown as a link only for http(s) URLs
    # {"mime_type": str, "data": base64 str, "note": str}: drawn from a data URL only for PNG,
    # JPEG, GIF or WebP within the seam's cap (see bounding); else ``data`` is "" and ``note``
    # says why
    IMAGE = "image"


@dataclass(frozen=True, slots=True)
class Artifact:
    """A structured, run-only piece of a tool result. ``data`` is plain JSON-shaped data."""

    type: ArtifactType
    label: str
    data: Mapping[str, Any]

    @classmethod
    def table(
        cls, label: str, columns: Iterable[str], rows: Iterable[Iterable[object]]
    ) -> Artifact:
        """A table; every cell is turned into a string."""
        return cls(
            ArtifactType.TABLE,
            label,
            {"columns": [str(c) for c in columns], "rows": [[str(c) for c in r] for r in rows]},
        )

    @classmethod
    def text(cls, label: str, text: str) -> Artifact:
        """A block of preformatted text."""
        return cls(ArtifactType.TEXT, label, {"text": text})

    @classmethod
    def tree(cls, label: str, nodes: Iterable[Mapping[str, Any]]) -> Artifact:
        """A forest of ``{"label": str, "children": [...]}`` nodes (folders, relations)."""
        return cls(ArtifactType.TREE, label, {"nodes": [_node(n) for n in nodes]})

    @classmethod
    def key_value(cls, label: str, items: Iterable[tuple[object, object]]) -> Artifact:
        """Ordered key/value pairs; keys and values are turned into strings."""
        return cls(ArtifactType.KEY_VALUE, label, {"items": [[str(k), str(v)] for k, v in items]})

    @classmethod
    def code(cls, label: str, code: str, *, language: str = "", first_line: int = 1) -> Artifact:
        """Source text with its language and the number of its first line."""
        data = {"code": code, "language": language, "first_line": first_line}
        return cls(ArtifactType.CODE, label, data)

    @classmethod
    def link(cls, label: str, url: str, text: str = "") -> Artifact:
        return cls(ArtifactType.LINK, label, {"url": url, "text": text or url})

    @classmethod
    def image(cls, label: str, mime_type: str, data: str, *, note: str = "") -> Artifact:
        """An image as base64 ``data``; ``note`` says why the data is missing, when it is."""
        return cls(ArtifactType.IMAGE, label, {"mime_type": mime_type, "data": data, "note": note})

    def to_dict(self) -> dict[str, Any]:
        """The plain form every sink serialises: ``{"type", "label", "data"}``."""
        return {"type": str(self.type), "label": self.label, "data": self.data}

    def __repr__(self) -> str:
        """Its type and sizes (rows, nodes, items, bytes), never a label, cell or text."""
        data = self.data if isinstance(self.data, Mapping) else {}
        keys = _MEASURED.get(str(self.type), ())
        parts = dict([measured("label", self.label)])
        parts.update(measured(key, data[key]) for key in keys if key in data)
        return tagged("Artifact", type=ident(self.type), **parts)


# What an artifact's repr measures, per type: the keys that carry its data.
_MEASURED: dict[str, tuple[str, ...]] = {
    ArtifactType.TABLE: ("columns", "rows"),
    ArtifactType.TEXT: ("text",),
    ArtifactType.TREE: ("nodes",),
    ArtifactType.KEY_VALUE: ("items",),
    ArtifactType.CODE: ("code",),
    ArtifactType.LINK: ("url", "text"),
}


_new_object = object.__new__


def _refuse_text(_: object, *__: object) -> NoReturn:
    raise TypeError(
        "ToolResult has no string form: use result.content for the text the model may read"
    )


@final
class ToolResult:
    """What a tool returns: ``content`` (to the model), ``is_error``, ``artifacts`` (run-only).

    Build one with :meth:`text` or :meth:`error`; direct construction raises ``TypeError``.
    """

    __slots__ = ("artifacts", "content", "is_error")
    content: str
    is_error: bool
    artifacts: tuple[Artifact, ...]

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("build a ToolResult with ToolResult.text() or ToolResult.error()")

    @classmethod
    def text(cls, content: str, *artifacts: Artifact) -> ToolResult:
        """A successful result: ``content`` for the model, ``artifacts`` for the run only."""
        if not isinstance(content, str):
            raise TypeError(f"ToolResult content must be str, not {type(content).__name__}")
        for artifact in artifacts:
            if not isinstance(artifact, Artifact):
                raise TypeError(f"artifacts must be Artifact, not {type(artifact).__name__}")
        result = _new_object(cls)  # what ``_build`` does, without its call: every tool's result
        _content(result, content)
        _is_error(result, False)
        _artifacts(result, artifacts)  # a tuple already
        return result

    @classmethod
    def error(cls, content: str) -> ToolResult:
        """A failed result. It carries no artifacts, ever."""
        if not isinstance(content, str):
            raise TypeError(f"ToolResult content must be str, not {type(content).__name__}")
        return cls._build(content, True, ())

    @classmethod
    def _build(cls, content: str, is_error: bool, artifacts: tuple[Artifact, ...]) -> ToolResult:
        result = _new_object(cls)
        _content(result, content)
        _is_error(result, is_error)
        _artifacts(result, artifacts if type(artifacts) is tuple else tuple(artifacts))
        return result

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("ToolResult is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ToolResult is immutable")

    __str__ = _refuse_text
    __format__ = _refuse_text
    __bytes__ = _refuse_text

    def __repr__(self) -> str:
        return tagged(
            "ToolResult",
            is_error=self.is_error,
            content_bytes=utf8_size(self.content),
            artifacts=len(self.artifacts),
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolResult):
            return NotImplemented
        return (self.content, self.is_error, self.artifacts) == (
            other.content,
            other.is_error,
            other.artifacts,
        )

    def __hash__(self) -> int:
        return hash((self.content, self.is_error, len(self.artifacts)))

    def __reduce__(self) -> NoReturn:
        raise TypeError("ToolResult is run-only and cannot be pickled")


_content, _is_error, _artifacts = setters(ToolResult, "content", "is_error", "artifacts")


def _node(node: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "label": str(node.get("label", "")),
        "children": [_node(c) for c in node.get("children", ())],
    }
