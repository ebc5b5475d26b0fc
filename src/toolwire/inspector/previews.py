"""Prompt previews of stored runs: a short line from the first user message, as stored.

A preview is only ever read back from the store, so it is exactly as redacted as the run's
privacy level made it; at ``none`` and ``metadata`` no message is stored and there is no
preview. It is one line: whitespace collapsed, cut at ``PROMPT_PREVIEW_CHARS``.
"""

from __future__ import annotations

from typing import Any

from toolwire.core.errors import ConfigError
from toolwire.inspector.settings import InspectorStore
from toolwire.policy.privacy import PrivacyLevel

PROMPT_PREVIEW_CHARS = 120  # one table cell's worth: enough to recognise a run, not to read it


def with_previews(store: InspectorStore, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``runs`` (plain summaries), each with ``prompt_preview``: a string, or None.

    The first request of every run that keeps its messages is read in one query."""
    kept = [str(run.get("id")) for run in runs if _keeps_messages(run.get("privacy_level"))]
    requests = store.first_requests(kept) if kept else {}
    return [{**run, "prompt_preview": _preview(requests.get(str(run.get("id"))))} for run in runs]


def _preview(request: dict[str, Any] | None) -> str | None:
    messages = request.get("messages_sent") if request else None
    return first_user_line(messages) if isinstance(messages, list) else None


def _keeps_messages(level: object) -> bool:
    try:
        return PrivacyLevel.parse(str(level)).keeps_content
    except ConfigError:
        return False


def first_user_line(messages: list[Any]) -> str | None:
    """The first user message's text as one line of at most ``PROMPT_PREVIEW_CHARS``."""
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if not isinstance(content, str):
                return None
            line = " ".join(content.split())
            if len(line) <= PROMPT_PREVIEW_CHARS:
                return line
            return line[: PROMPT_PREVIEW_CHARS - 1].rstrip() + "…"
    return None
