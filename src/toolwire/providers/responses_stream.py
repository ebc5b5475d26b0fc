"""A streamed Responses API turn, assembled into the ``response`` object a whole call returns.

The events (openai-python ``types/responses/response_stream_event.py``) rebuild one response:
``response.created`` (and ``in_progress``/``queued``) give its envelope; ``response.output_item.
added`` opens an output item at its ``output_index``; text, refusal, reasoning and argument
deltas are appended to the item they name; ``response.output_item.done`` replaces the item with
the server's finished one (the reasoning item's ``encrypted_content`` comes whole there);
``response.completed``, ``response.incomplete`` and ``response.failed`` carry the final response,
whose ``output`` stands when it holds items (else the assembled items do). The adapter decodes
the result with the same ``decode`` as a whole body, so a streamed turn and a whole one
normalise to the same response. An ``error`` event never gets here: the HTTP layer raises it
typed.

Invariants:
- ``finished`` is True only once one of the three final events arrived: a stream cut before
  it must not pass for a whole, shorter answer (the adapter refuses it).
- Only answer text (``content``) and reasoning text, summaries or raw (``thinking``) go to the
  delta sink, as they arrive; refusal text and arguments do not.
- Events of a type this module does not know, or whose fields are not of the documented
  types, change nothing.
"""

from __future__ import annotations

from typing import Any, Literal

from toolwire.providers.base import Delta, DeltaSink

DeltaKind = Literal["content", "thinking"]
START_EVENTS = frozenset({"response.created", "response.in_progress", "response.queued"})
FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


class StreamedResponse:
    """The response a stream has described so far; ``feed`` takes each event in order."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._on_delta = on_delta
        self._response: dict[str, Any] = {}
        self._items: dict[int, dict[str, Any]] = {}
        self.finished = False  # a final event arrived: the stream was not cut short

    def feed(self, name: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        kind = data.get("type", name)
        if kind in START_EVENTS or kind in FINAL_EVENTS:
            response = data.get("response")
            if isinstance(response, dict):
                self._response = dict(response)
            self.finished = self.finished or kind in FINAL_EVENTS
            return
        index = data.get("output_index")
        if not isinstance(index, int) or isinstance(index, bool):
            return
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = data.get("item")
            if isinstance(item, dict):
                self._items[index] = _copied(item)
            return
        item = self._items.get(index)
        if item is not None:
            self._delta(kind, item, data)

    def body(self) -> dict[str, Any]:
        """The response as one body: the final event's, with the assembled items when it
        listed none."""
        output = self._response.get("output")
        if isinstance(output, list) and output:
            return dict(self._response)
        return {**self._response, "output": [self._items[i] for i in sorted(self._items)]}

    def _delta(self, kind: str, item: dict[str, Any], data: dict[str, Any]) -> None:
        delta = _str(data.get("delta"))
        if kind == "response.output_text.delta":
            self._append(_part(item, "content", data, "output_text"), "text", delta, "content")
        elif kind == "response.refusal.delta":
            part = _part(item, "content", data, "refusal")
            part["refusal"] = _str(part.get("refusal")) + delta
        elif kind == "response.function_call_arguments.delta":
            item["arguments"] = _str(item.get("arguments")) + delta
        elif kind == "response.function_call_arguments.done" and "arguments" in data:
            item["arguments"] = _str(data.get("arguments"))
        elif kind == "response.reasoning_summary_text.delta":
            part = _part(item, "summary", data, "summary_text", "summary_index")
            self._append(part, "text", delta, "thinking")
        elif kind == "response.reasoning_text.delta":
            self._append(_part(item, "content", data, "reasoning_text"), "text", delta, "thinking")

    def _append(self, part: dict[str, Any], key: str, piece: str, kind: DeltaKind) -> None:
        part[key] = _str(part.get(key)) + piece
        if piece and self._on_delta is not None:
            self._on_delta(Delta(kind, piece))


def _part(
    item: dict[str, Any],
    key: str,
    data: dict[str, Any],
    kind: str,
    index_key: str = "content_index",
) -> dict[str, Any]:
    """The part at the event's index of ``item[key]``, made (of type ``kind``) if missing."""
    parts = item.get(key)
    if not isinstance(parts, list):
        parts = item[key] = []
    index = data.get(index_key)
    position = index if isinstance(index, int) and not isinstance(index, bool) else len(parts)
    position = min(max(position, 0), len(parts))
    if position == len(parts):
        parts.append({"type": kind})
    elif not isinstance(parts[position], dict):
        parts[position] = {"type": kind}
    part: dict[str, Any] = parts[position]
    return part


def _copied(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` with its part lists copied, so deltas never write into the event's data."""
    copy = dict(item)
    for key in ("content", "summary"):
        if isinstance(copy.get(key), list):
            copy[key] = [dict(p) if isinstance(p, dict) else p for p in copy[key]]
    return copy


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
