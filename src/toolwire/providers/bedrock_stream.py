"""A streamed ConverseStream turn, assembled into the body Converse would have answered whole.

The events (botocore's ``ConverseStreamOutput``: ``messageStart``, ``contentBlockStart``,
``contentBlockDelta``, ``contentBlockStop``, ``messageStop``, ``metadata``) rebuild one message:
a text delta is appended to its block's ``text``, a tool use starts with its id and name and its
``input`` pieces are joined and decoded when the block stops, a reasoning delta appends to
``reasoningContent.reasoningText.text``, sets its ``signature`` or adds to its
``redactedContent`` (base64, as in the whole body). ``messageStop`` gives the stop reason and
``metadata`` the usage. The adapter decodes the result with the same ``decode`` as a whole body,
so a streamed turn and a whole one normalise to the same response. Exceptions inside the stream
never get here: the HTTP layer raises them typed.

Invariant: only answer text and thinking go to the delta sink, as they arrive.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from toolwire.providers.base import Delta, DeltaSink


class StreamedConverse:
    """The message a stream has described so far; ``feed`` takes each event in order."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._on_delta = on_delta
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._body: dict[str, Any] = {}
        self.finished = False  # ``messageStop`` arrived: the stream was not cut short

    def feed(self, name: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        if name == "contentBlockStart":
            self._start(data)
        elif name == "contentBlockDelta":
            self._delta(data)
        elif name == "contentBlockStop":
            self._stop(data.get("contentBlockIndex"))
        elif name == "messageStop":
            self._body["stopReason"] = data.get("stopReason")
            self.finished = True
        elif name == "metadata" and isinstance(data.get("usage"), dict):
            self._body["usage"] = data["usage"]

    def body(self) -> dict[str, Any]:
        """The turn as one Converse body; blocks in index order."""
        for index in list(self._json):
            self._stop(index)
        content = [self._blocks[i] for i in sorted(self._blocks)]
        return {"output": {"message": {"role": "assistant", "content": content}}, **self._body}

    def _start(self, data: dict[str, Any]) -> None:
        index, start = data.get("contentBlockIndex"), data.get("start")
        tool_use = start.get("toolUse") if isinstance(start, dict) else None
        if isinstance(index, int) and isinstance(tool_use, dict):
            self._blocks[index] = {"toolUse": {**tool_use, "input": {}}}
            self._json[index] = []

    def _delta(self, data: dict[str, Any]) -> None:
        index, delta = data.get("contentBlockIndex"), data.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict):
            return
        if "text" in delta:
            block = self._blocks.setdefault(index, {"text": ""})
            self._append(block, "text", delta["text"], "content")
        elif isinstance(delta.get("toolUse"), dict) and index in self._json:
            self._json[index].append(_str(delta["toolUse"].get("input")))
        elif isinstance(delta.get("reasoningContent"), dict):
            self._reasoning(index, delta["reasoningContent"])

    def _reasoning(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks.setdefault(index, {"reasoningContent": {}})
        reasoning = block.setdefault("reasoningContent", {})
        if "redactedContent" in delta:
            joined = _unbase64(_str(reasoning.get("redactedContent")))
            joined += _unbase64(_str(delta["redactedContent"]))
            reasoning["redactedContent"] = base64.b64encode(joined).decode("ascii")
            return
        said = reasoning.setdefault("reasoningText", {"text": ""})
        if "text" in delta:
            self._append(said, "text", delta["text"], "thinking")
        if "signature" in delta:
            said["signature"] = _str(said.get("signature")) + _str(delta["signature"])

    def _append(self, block: dict[str, Any], key: str, piece: Any, kind: Any) -> None:
        piece = _str(piece)
        block[key] = _str(block.get(key)) + piece
        if piece and self._on_delta is not None:
            self._on_delta(Delta(kind, piece))

    def _stop(self, index: Any) -> None:
        pieces = self._json.pop(index, None) if isinstance(index, int) else None
        if pieces is None:
            return
        joined = "".join(pieces)
        if not joined.strip():
            return  # no input streamed: a call without arguments
        try:
            self._blocks[index]["toolUse"]["input"] = json.loads(joined)
        except ValueError:
            self._blocks[index]["toolUse"]["input"] = joined  # decode keeps the broken text


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _unbase64(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value.encode()
