"""An MCP tool result as a toolwire ``ToolResult``: text for the model, the rest for the run.

- Text blocks meant for the model become ``content``, joined by newlines. A block whose
  ``audience`` leaves the assistant out is for the person only: it becomes a text artifact.
- ``structuredContent`` becomes an artifact: a table for a list of flat objects (also the
  ``{"result": [...]}`` wrapping SDK servers give a list), key/value pairs for a flat object,
  otherwise pretty JSON.
- Images become image artifacts (the seam caps their size); embedded resources become text,
  image or key/value artifacts; resource links become link artifacts; audio is described.
- ``isError`` becomes an error result with the server's text (an error carries no artifacts).

A result with no text for the model says how many items were kept back (:mod:`toolwire.loop.seam`
writes that text), so the model is not left with an empty turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)

from toolwire.core.result import Artifact, ToolResult
from toolwire.loop import seam

STRUCTURED_LABEL = "structured content"
Scalar = str | int | float | bool | None


def to_result(result: CallToolResult, name: str) -> ToolResult:
    """``result`` of the call of the tool registered as ``name``."""
    texts: list[str] = []
    artifacts: list[Artifact] = []
    for index, block in enumerate(result.content):
        if isinstance(block, TextContent) and _for_model(block):
            texts.append(block.text)
        else:
            artifacts.append(_artifact(block, index))
    content = "\n".join(texts)
    if result.is_error:
        return ToolResult.error(content if content.strip() else seam.tool_failed(name))
    if result.structured_content is not None:
        artifacts.append(structured(result.structured_content))
    if not content and artifacts:
        content = seam.remote_no_text(len(artifacts))
    return ToolResult.text(content, *artifacts)


def _for_model(block: TextContent) -> bool:
    audience = block.annotations.audience if block.annotations is not None else None
    return audience is None or "assistant" in audience


def _artifact(block: Any, index: int) -> Artifact:
    if isinstance(block, TextContent):
        return Artifact.text(f"text for the user ({index + 1})", block.text)
    if isinstance(block, ImageContent):
        return Artifact.image(f"image ({index + 1})", block.mime_type, block.data)
    if isinstance(block, EmbeddedResource):
        return _resource(block)
    if isinstance(block, ResourceLink):
        return Artifact.link(block.title or block.name, block.uri, block.description or block.name)
    if isinstance(block, AudioContent):
        about = f"Audio ({block.mime_type}, {len(block.data)} characters of base64): not played."
        return Artifact.text(f"audio ({index + 1})", about)
    return Artifact.text(f"content ({index + 1})", f"A {type(block).__name__} block: not shown.")


def _resource(block: EmbeddedResource) -> Artifact:
    resource = block.resource
    uri, mime = str(resource.uri), resource.mime_type or ""
    if isinstance(resource, BlobResourceContents):
        if mime.startswith("image/"):
            return Artifact.image(uri, mime, resource.blob)
        size = f"{len(resource.blob)} characters of base64"
        return Artifact.key_value(uri, [("uri", uri), ("type", mime or "unknown"), ("size", size)])
    return Artifact.text(uri, resource.text)


def structured(value: Any) -> Artifact:
    """Structured content as the artifact that shows it best."""
    if _flat(value):
        return Artifact.key_value(STRUCTURED_LABEL, [(k, cell(v)) for k, v in value.items()])
    label, rows = STRUCTURED_LABEL, value
    if isinstance(value, Mapping) and len(value) == 1:
        ((key, rows),) = value.items()
        label = str(key)
    if isinstance(rows, list) and rows and all(_flat(row) for row in rows):
        columns = list(dict.fromkeys(key for row in rows for key in row))
        table = [[cell(row.get(c, "")) for c in columns] for row in rows]
        return Artifact.table(label, columns, table)
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return Artifact.code(STRUCTURED_LABEL, text, language="json")


def _flat(value: Any) -> bool:
    return isinstance(value, Mapping) and all(_scalar(v) for v in value.values())


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def cell(value: Scalar) -> str:
    """A scalar as a table cell: text as it is, anything else as JSON writes it."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value)
