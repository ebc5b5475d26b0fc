"""An MCP server's tool as a ``ToolSpec`` that OpenAI, Anthropic and Gemini all accept.

- Name: ``<server>__<tool>``. OpenAI and Anthropic allow ``[a-zA-Z0-9_-]{1,64}``; Gemini also
  wants a letter or ``_`` first, which the server's name guarantees. Any other character of the
  tool's own name becomes ``_``; a name over 64 characters is cut and ends in 8 hex digits of a
  digest of the server's name for the tool, so two long names stay apart.
- Parameters: the server's input schema, which must be an object schema (all three adapters
  send it as the parameters object as is); ``$schema`` and the top-level ``title`` are dropped,
  ``properties`` added when missing. A schema over ``SCHEMA_BYTES`` is refused: it would go out
  in every request of a run.
- Description: the server's (or its title), cut to ``DESCRIPTION_CHARS``, the bound for an API
  that documents none; each adapter cuts it further to what its API takes (OpenAI: 1,024).

A tool that cannot be made acceptable raises ``ValueError`` saying why; it is left out with a
warning, and the server's other tools are still registered.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from toolwire.core.jsonenc import dumps_bytes
from toolwire.core.messages import ToolSpec
from toolwire.providers.presets import UNDOCUMENTED_DESCRIPTION_CHARS

NAME_CHARS = 64  # OpenAI's and Anthropic's limit; Gemini's too
DIGEST_CHARS = 8
DESCRIPTION_CHARS = UNDOCUMENTED_DESCRIPTION_CHARS  # sent in every request; adapters cut more
SCHEMA_BYTES = 16_000  # sent in every request: the biggest built-in schema is under 1 kB
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_DROPPED = ("$schema", "title")


def tool_name(server: str, remote: str) -> str:
    """The registered name of the tool ``remote`` of ``server``."""
    name = f"{server}__{_UNSAFE.sub('_', remote) or '_'}"
    if len(name) <= NAME_CHARS:
        return name
    digest = hashlib.sha256(f"{server}\0{remote}".encode()).hexdigest()[:DIGEST_CHARS]
    return f"{name[: NAME_CHARS - DIGEST_CHARS - 1]}_{digest}"


def tool_spec(name: str, description: str | None, title: str | None, schema: Any) -> ToolSpec:
    """The spec of a listed tool; ``ValueError`` when its schema cannot be used."""
    return ToolSpec(name=name, description=_description(description or title or ""),
                    parameters=parameters(schema))  # fmt: skip


def parameters(schema: Any) -> dict[str, Any]:
    """The input schema as the adapters send it."""
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise ValueError("its input schema is not an object schema")
    out = {str(k): v for k, v in schema.items() if k not in _DROPPED}
    out["type"] = "object"
    if not isinstance(out.get("properties", {}), Mapping):
        raise ValueError("its input schema's properties are not an object")
    out.setdefault("properties", {})
    try:
        size = len(dumps_bytes(out))
    except (TypeError, ValueError, RecursionError):
        raise ValueError("its input schema is not plain JSON") from None
    if size > SCHEMA_BYTES:
        raise ValueError(f"its input schema is {size} bytes, over {SCHEMA_BYTES}")
    return out


def _description(text: str) -> str:
    text = text.strip()
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"
