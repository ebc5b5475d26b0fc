"""A streamed Messages API turn, assembled into the body the API would have sent whole.

The events (``message_start``, ``content_block_start``/``_delta``/``_stop``, ``message_delta``,
``message_stop``, ``ping``) rebuild one message: text and thinking deltas are appended to their
block, ``signature_delta`` sets a thinking block's signature, ``input_json_delta`` pieces are
joined and decoded into the tool use's ``input`` when the block stops. The adapter decodes the
result with the same ``decode`` as a whole body, so a streamed turn and a whole one normalise
to the same response. ``error`` events never get here: the HTTP layer raises them typed.

A ``tool_use`` block that starts with the id of the block just before it continues that block:
its input pieces are appended to the earlier one's. The Messages API gives each tool use an id
of its own (it refuses a request whose ``tool_use`` ids repeat: "`tool_use` ids must be
unique"), so this never joins two of its calls; a proxy that opens a block for each piece of an
OpenAI-style stream whose every chunk repeats the call's id (LiteLLM's ``/v1/messages`` in front
of llama-cpp-python) sends one call in several blocks, and it is one call.

Invariant: only answer text and thinking go to the delta sink, as they arrive.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from toolwire.providers.base import Delta, DeltaSink

DeltaKind = Literal["content", "thinking"]


class StreamedMessage:
    """The message a stream has described so far; ``feed`` takes each event in order."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._on_delta = on_delta
        self._message: dict[str, Any] = {"content": []}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._continues: dict[int, int] = {}  # a block's index -> the block it continues
        self._last: int | None = None  # the block started last (and not continued)
        self.finished = False  # ``message_stop`` arrived: the stream was not cut short

    def feed(self, name: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type", name)
        if kind == "message_start":
            self._start(data.get("message"))
        elif kind == "content_block_start":
            self._start_block(data)
        elif kind == "content_block_delta":
            self._delta(data)
        elif kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self.finished = True

    def body(self) -> dict[str, Any]:
        """The message as one body; blocks in index order, tool inputs decoded (here, not at
        ``content_block_stop``: the next block may continue a stopped one)."""
        for index in list(self._json):
            self._decode_input(index)
        return {**self._message, "content": [self._blocks[i] for i in sorted(self._blocks)]}

    def _start(self, message: Any) -> None:
        if isinstance(message, dict):
            self._message = {**message, "usage": dict(message.get("usage") or {})}

    def _start_block(self, data: dict[str, Any]) -> None:
        index, block = data.get("index"), data.get("content_block")
        if not isinstance(index, int) or not isinstance(block, dict):
            return
        continued = self._continued(block)
        if continued is not None:
            self._continues[index] = continued
            return
        self._last = index
        self._blocks[index] = dict(block)
        if block.get("type") == "tool_use":
            self._json[index] = []

    def _continued(self, block: dict[str, Any]) -> int | None:
        """The index of the tool use ``block`` continues (the one before it, same id), if any."""
        last = self._blocks.get(self._last) if self._last is not None else None
        if last is None or block.get("type") != "tool_use" or last.get("type") != "tool_use":
            return None
        call_id = block.get("id")
        same = isinstance(call_id, str) and bool(call_id) and call_id == last.get("id")
        return self._last if same else None

    def _delta(self, data: dict[str, Any]) -> None:
        index, delta = data.get("index"), data.get("delta")
        index = self._continues.get(index, index) if isinstance(index, int) else index
        if not isinstance(index, int) or index not in self._blocks or not isinstance(delta, dict):
            return
        block = self._blocks[index]
        kind = delta.get("type")
        if kind == "text_delta":
            self._append(block, "text", delta.get("text"), "content")
        elif kind == "thinking_delta":
            self._append(block, "thinking", delta.get("thinking"), "thinking")
        elif kind == "signature_delta":
            block["signature"] = _str(block.get("signature")) + _str(delta.get("signature"))
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(_str(delta.get("partial_json")))

    def _append(self, block: dict[str, Any], key: str, piece: Any, kind: DeltaKind) -> None:
        piece = _str(piece)
        block[key] = _str(block.get(key)) + piece
        if piece and self._on_delta is not None:
            self._on_delta(Delta(kind, piece))

    def _decode_input(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        if pieces is None or index not in self._blocks:
            return
        joined = "".join(pieces)
        if not joined.strip():
            return  # no input streamed: the start event's ``input`` stands
        try:
            self._blocks[index]["input"] = json.loads(joined)
        except ValueError:
            self._blocks[index]["input"] = joined  # decode keeps the model's broken text

    def _message_delta(self, data: dict[str, Any]) -> None:
        delta = data.get("delta")
        if isinstance(delta, dict):
            self._message.update({k: v for k, v in delta.items() if v is not None})
        usage = data.get("usage")
        if isinstance(usage, dict):  # counts here are cumulative: they replace the start's
            merged = dict(self._message.get("usage") or {})
            merged.update({k: v for k, v in usage.items() if v is not None})
            self._message["usage"] = merged


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
