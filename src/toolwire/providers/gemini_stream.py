"""Assembling a ``streamGenerateContent`` event stream into one ``GenerateContentResponse``.

Each server-sent event is a whole ``GenerateContentResponse`` holding a piece of the turn. The
assembly rebuilds the body a non-streaming call would have returned, so the adapter decodes both
the same way and a streamed turn normalises to exactly the same ``CompletionResponse``.

Invariants:
- Text pieces join into one part while they are of one kind (answer or thought) and the part so
  far carries no ``thoughtSignature``; a signature arriving on a piece (often an empty one at the
  end) lands on the part it closes. Every other part (``functionCall`` with its signature, and
  anything unknown) is kept whole, in order.
- ``finishReason``, ``finishMessage``, ``modelVersion`` and ``responseId`` are the last ones
  given; ``usageMetadata`` is the last chunk's (it holds the turn's totals).
- Every non-empty text piece goes to the delta sink as it arrives: thought text as ``thinking``,
  the rest as ``content``.
"""

from __future__ import annotations

from typing import Any

from toolwire.providers.base import Delta, DeltaSink

_TEXT_KEYS = frozenset({"text", "thought", "thoughtSignature"})  # a part that is only text
_LAST_WINS = ("finishReason", "finishMessage")
_BODY_LAST_WINS = ("modelVersion", "responseId", "usageMetadata", "promptFeedback")


class StreamAssembly:
    """Takes the stream's events one by one; ``body()`` is the assembled response."""

    def __init__(self, on_delta: DeltaSink | None) -> None:
        self._on_delta = on_delta
        self._parts: list[dict[str, Any]] = []
        self._candidate: dict[str, Any] = {}
        self._body: dict[str, Any] = {}
        self._role = "model"
        self._any_candidate = False

    def feed(self, event: str, data: Any) -> None:
        if not isinstance(data, dict):
            return
        for key in _BODY_LAST_WINS:
            if data.get(key):
                self._body[key] = data[key]
        candidates = data.get("candidates")
        if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
            self._any_candidate = True
            self._take_candidate(candidates[0])

    def _take_candidate(self, candidate: dict[str, Any]) -> None:
        for key in _LAST_WINS:
            if candidate.get(key):
                self._candidate[key] = candidate[key]
        content = candidate.get("content")
        if not isinstance(content, dict):
            return
        if isinstance(content.get("role"), str):
            self._role = content["role"]
        parts = content.get("parts")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict):
                self._take_part(part)

    def _take_part(self, part: dict[str, Any]) -> None:
        piece = part.get("text")
        if isinstance(piece, str) and piece and self._on_delta is not None:
            self._on_delta(Delta("thinking" if part.get("thought") else "content", piece))
        last = self._parts[-1] if self._parts else None
        if last is not None and _joins(last, part):
            last["text"] = last["text"] + part["text"]
            if "thoughtSignature" in part:
                last["thoughtSignature"] = part["thoughtSignature"]
            return
        self._parts.append(dict(part))

    def body(self) -> dict[str, Any]:
        body = dict(self._body)
        if self._any_candidate:
            content = {"role": self._role, "parts": self._parts}
            body["candidates"] = [{"content": content, **self._candidate, "index": 0}]
        return body


def _joins(last: dict[str, Any], part: dict[str, Any]) -> bool:
    """Whether ``part`` continues the text part ``last``."""
    return (
        _is_text(last)
        and _is_text(part)
        and "thoughtSignature" not in last
        and bool(last.get("thought")) == bool(part.get("thought"))
    )


def _is_text(part: dict[str, Any]) -> bool:
    return isinstance(part.get("text"), str) and part.keys() <= _TEXT_KEYS
