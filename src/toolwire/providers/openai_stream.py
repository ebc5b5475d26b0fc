"""Chat Completions streaming: chunks back into the body a non-streaming call returns.

``ChunkAssembler`` is fed each server-sent event's data (a ``chat.completion.chunk``) and builds
the ``chat.completion`` body of the same turn, which the adapter's one ``decode`` reads; so a
streamed turn and a whole one cannot normalise differently.

Invariants:
- Text, refusal and reasoning deltas are concatenated in arrival order. Content sent as a list
  of chunks (Mistral's reasoning models) is split: ``text`` chunks are the answer, the text of
  ``thinking`` chunks is reasoning (:func:`content_parts`, which ``decode`` uses too).
- Tool-call deltas are joined by ``index``: the first delta of a call brings its id and name,
  the later ones pieces of its arguments. A server that sends no index starts a new call with
  each new id.
- Usage is the last usage object seen (the final chunk when ``include_usage`` was asked).
- Live deltas go to the sink as they arrive: answer text as ``content``, reasoning and text
  inside inline ``<think>`` blocks as ``thinking`` (a tag cut between two deltas is held back).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolwire.core.reprs import ident, tagged
from toolwire.providers.base import Delta, DeltaSink
from toolwire.providers.wire import items, obj, text

# Where compatible servers put reasoning text: vLLM and DeepSeek, then OpenRouter.
REASONING_KEYS = ("reasoning_content", "reasoning")


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def message(self) -> dict[str, Any]:
        function = {"name": self.name, "arguments": "".join(self.arguments)}
        return {"id": self.id, "type": "function", "function": function}

    def __repr__(self) -> str:
        return tagged("_Call", id=ident(self.id), name=ident(self.name), pieces=len(self.arguments))


class ChunkAssembler:
    """Builds one ``chat.completion`` body from the chunks of a stream."""

    def __init__(self, on_delta: DeltaSink | None = None) -> None:
        self._sink = on_delta
        self._think = ThinkSplitter(on_delta)
        self._head: dict[str, Any] = {}
        self._parts: dict[str, list[str]] = {"content": [], "refusal": []}
        self._parts.update({key: [] for key in REASONING_KEYS})
        self._calls: dict[int, _Call] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self._chose = False

    def feed(self, event: str, data: Any) -> None:
        chunk = obj(data)
        for key in ("id", "created", "model", "system_fingerprint"):
            if key in chunk and key not in self._head:
                self._head[key] = chunk[key]
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        for choice in (obj(c) for c in chunk.get("choices") or ()):
            if choice.get("index", 0) == 0:
                self._choice(choice)

    def _choice(self, choice: Mapping[str, Any]) -> None:
        self._chose = True
        self._finish = text(choice.get("finish_reason")) or self._finish
        delta = obj(choice.get("delta"))
        pieces = {key: text(delta.get(key)) for key in self._parts}
        pieces["content"], thought = content_parts(delta.get("content"))
        pieces["reasoning_content"] += thought
        for key, piece in pieces.items():
            if piece:
                self._parts[key].append(piece)
                self._show(key, piece)
        for entry in delta.get("tool_calls") or ():
            self._call_delta(obj(entry))

    def _show(self, key: str, piece: str) -> None:
        if key == "content":
            self._think.feed(piece)
        elif key in REASONING_KEYS and self._sink is not None:
            self._sink(Delta("thinking", piece))

    def _call_delta(self, entry: Mapping[str, Any]) -> None:
        call = self._calls.setdefault(self._index_of(entry), _Call())
        function = obj(entry.get("function"))
        call.id = call.id or text(entry.get("id"))
        call.name = call.name or text(function.get("name"))
        if text(function.get("arguments")):
            call.arguments.append(function["arguments"])

    def _index_of(self, entry: Mapping[str, Any]) -> int:
        index = entry.get("index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        last = max(self._calls, default=-1)
        ident = text(entry.get("id"))
        is_new = last < 0 or (ident and ident != self._calls[last].id)
        return last + 1 if is_new else last

    def body(self) -> dict[str, Any]:
        """The ``chat.completion`` body of the turn streamed so far."""
        self._think.flush()
        body: dict[str, Any] = {**self._head, "object": "chat.completion"}
        if self._chose:
            choice = {"index": 0, "message": self._message(), "finish_reason": self._finish}
            body["choices"] = [choice]
        if self._usage is not None:
            body["usage"] = self._usage
        return body

    def _message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None}
        for key, parts in self._parts.items():
            if parts:
                message[key] = "".join(parts)
        if self._calls:
            message["tool_calls"] = [self._calls[i].message() for i in sorted(self._calls)]
        return message


def content_parts(value: Any) -> tuple[str, str]:
    """A message's content as (answer, thinking). A string is all answer; a list of chunks
    (mistralai/client-python models/assistantmessage.py: text chunks, and thinking chunks
    holding text chunks, models/thinkchunk.py) is split by chunk type."""
    if not isinstance(value, list):
        return text(value), ""
    answer: list[str] = []
    thought: list[str] = []
    for chunk in (obj(c) for c in value):
        if chunk.get("type") == "text":
            answer.append(text(chunk.get("text")))
        elif chunk.get("type") == "thinking":
            inner = chunk.get("thinking")
            parts = [inner] if isinstance(inner, str) else items(inner)
            thought.extend(text(part) or text(obj(part).get("text")) for part in parts)
    return "".join(answer), "".join(thought)


class ThinkSplitter:
    """Sends streamed answer text to the sink as ``content``, or as ``thinking`` while inside
    an inline ``<think>`` block."""

    def __init__(self, sink: DeltaSink | None) -> None:
        self._sink = sink
        self._inside = False
        self._held = ""

    def feed(self, piece: str) -> None:
        rest = self._held + piece
        self._held = ""
        while rest:
            tag = "</think>" if self._inside else "<think>"
            at = rest.find(tag)
            if at < 0:
                keep = _partial_tag(rest, tag)
                self._emit(rest[: len(rest) - keep])
                self._held = rest[len(rest) - keep :]
                return
            self._emit(rest[:at])
            rest = rest[at + len(tag) :]
            self._inside = not self._inside

    def flush(self) -> None:
        self._emit(self._held)
        self._held = ""

    def _emit(self, piece: str) -> None:
        if piece and self._sink is not None:
            self._sink(Delta("thinking" if self._inside else "content", piece))


def _partial_tag(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could be the start of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
