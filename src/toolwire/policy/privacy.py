"""Privacy levels and the step filter applied when a step is stored (never to the live view).

``none < metadata < redacted < full``; ``metadata`` is the default. The content keys of a step
are what the model and the tools said: messages sent, model content, thinking, requested tool
calls, the raw response, the answer's checked JSON value (``output``), tool arguments, the
tool result and its artifacts.

- ``none`` and ``metadata``: every content key is removed; everything else is kept, plus counts
  and lengths that describe the content without revealing it, and ``content_withheld: true``
  (a context step has no content: it is kept as it is).
  The name of a registered tool (``tool_name``, ``requested_tool_names``) and the policy's
  refusals are metadata: they are the operator's words and name what ran, not what was said.
  Any other tool name was made up by the model, so it is content: it is kept as ``unknown:``
  and a digest (``unknown:sha256:…``) that still tells names apart. The step says which names
  are registered (the seam looked them up, see :func:`registered_names`); a plain step that
  does not say has none. A call id is kept only when short and plain (else a digest), a finish
  reason only when it is a word the APIs use (else ``other``).
- ``redacted``: the step keeps its shape; every string leaf and every string key, at any depth,
  goes through :func:`toolwire.core.redact.redact`. Keys are redacted too because tool arguments and
  raw responses are model-shaped maps whose keys can carry data. An image artifact keeps its
  type and label but not its pixels, which no redactor can read (a screenshot of a key).
- ``full``: verbatim.

What leaves the process (an exported span, see :mod:`toolwire.telemetry`) is filtered the same
way by :func:`filter_for_export`, with one rule more: artifacts never leave, at any level (their
count and types are metadata and do).

Invariant: :func:`filter_step` never raises. Whatever a step holds, the result at ``none`` and
``metadata`` holds no content key, and a step it cannot filter becomes a bare marker.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, assert_never

from toolwire.core.errors import ConfigError
from toolwire.core.redact import redact
from toolwire.core.result import ArtifactType
from toolwire.policy.trace import (
    ContextStep,
    DecisionStep,
    FailedStep,
    LlmStep,
    RequestStep,
    RunStep,
    ToolStep,
)
from toolwire.providers.base import Stop

# What the model, the tools or a person said, per kind of step. Everything else in a step is
# metadata: counts, names, timings, who decided.
REQUEST_CONTENT = frozenset({"messages_sent"})
LLM_CONTENT = frozenset({"content", "thinking", "refusal", "requested_tool_calls", "raw", "output"})
# A held value (toolwire.policy.quarantine) is tool output: it goes where ``tool_result`` goes.
TOOL_CONTENT = frozenset({"tool_arguments", "tool_result", "tool_artifacts", "tool_held_values"})
DECISION_CONTENT = frozenset({"decision_reason"})
CONTEXT_CONTENT: frozenset[str] = frozenset()  # counts and token figures only
# A provider's failure: its name, the error's class and the HTTP layer's bounded, redacted
# line (what the run's own error keeps at every level).
FAILED_CONTENT: frozenset[str] = frozenset()
CONTENT_KEYS = REQUEST_CONTENT | LLM_CONTENT | TOOL_CONTENT | DECISION_CONTENT | CONTEXT_CONTENT
# A model picks tool names; a stored name longer than any real tool name is noise or an attack.
NAME_CHAR_CAP = 200
# A call id is kept at ``metadata`` only when it looks like one (short, plain); a model chooses
# it, so anything else is stored as a digest that still tells ids apart.
PLAIN_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
MODEL_NAME = re.compile(r"[A-Za-z0-9_.:/@-]{1,128}")  # openai/gpt-4o-mini, a version after @
ID_DIGEST_CHARS = 16
# A tool name that names no registered tool, at ``metadata``: this, then a digest of the name.
UNKNOWN_TOOL = "unknown:"
# The words the three APIs (and toolwire) use for how a turn ended; any other is "other".
KNOWN_FINISH_REASONS = frozenset({
    *(stop.value for stop in Stop),
    "stop", "length", "tool_calls", "content_filter", "function_call",  # OpenAI
    "end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal",  # Anthropic
    "model_context_window_exceeded",
    "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "LANGUAGE", "OTHER", "BLOCKLIST",  # Gemini
    "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL", "IMAGE_SAFETY",
    "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS", "FINISH_REASON_UNSPECIFIED",
})  # fmt: skip
# Deeper structures are cut rather than recursed into, so a hostile raw response cannot
# exhaust the stack (artifacts are already capped at depth 64 by the bounder).
REDACT_MAX_DEPTH = 100
TOO_DEEP = "… [too deep]"
IMAGE_NOT_KEPT = "Image not kept at this privacy level: an image cannot be redacted."
_ARTIFACT_TYPES = frozenset(str(t) for t in ArtifactType)


class PrivacyLevel(StrEnum):
    """How much of a run's content the store keeps, least to most."""

    NONE = "none"
    METADATA = "metadata"
    REDACTED = "redacted"
    FULL = "full"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    @property
    def keeps_content(self) -> bool:
        return self.rank >= _RANKS[PrivacyLevel.REDACTED]

    @classmethod
    def parse(cls, value: str) -> PrivacyLevel:
        """The level named ``value`` (any case); a clear ``ConfigError`` for anything else."""
        try:
            return cls(value.strip().lower())
        except ValueError:
            shown = value if len(value) <= 40 else value[:40] + "…"
            choices = ", ".join(level.value for level in cls)
            raise ConfigError(f"unknown privacy level {shown!r}: choose one of {choices}") from None

    # A StrEnum would otherwise compare alphabetically ("full" < "metadata").
    def __lt__(self, other: object) -> bool:
        return self.rank < _rank_of(other)

    def __le__(self, other: object) -> bool:
        return self.rank <= _rank_of(other)

    def __gt__(self, other: object) -> bool:
        return self.rank > _rank_of(other)

    def __ge__(self, other: object) -> bool:
        return self.rank >= _rank_of(other)


_RANKS = {
    PrivacyLevel.NONE: 0,
    PrivacyLevel.METADATA: 1,
    PrivacyLevel.REDACTED: 2,
    PrivacyLevel.FULL: 3,
}


def _rank_of(other: object) -> int:
    if not isinstance(other, PrivacyLevel):
        raise TypeError(f"cannot compare a privacy level with {type(other).__name__}")
    return other.rank


def content_keys(step: RunStep) -> frozenset[str]:
    """The content keys of ``step``'s kind; mypy checks that every kind is covered."""
    match step:
        case RequestStep():
            return REQUEST_CONTENT
        case LlmStep():
            return LLM_CONTENT
        case ToolStep():
            return TOOL_CONTENT
        case DecisionStep():
            return DECISION_CONTENT
        case ContextStep():
            return CONTEXT_CONTENT
        case FailedStep():
            return FAILED_CONTENT
        case _:
            assert_never(step)


def registered_names(step: RunStep) -> frozenset[str]:
    """The tool names ``step`` recorded as naming a registered tool (see ``Seam.knows``)."""
    if isinstance(step, ToolStep):
        return frozenset((step.tool_name,)) if step.tool_registered else frozenset()
    if isinstance(step, LlmStep):
        return step.registered_tool_names
    return frozenset()


def filter_run_step(step: RunStep, level: PrivacyLevel) -> dict[str, Any]:
    """The plain copy of a recorded step the store may keep at ``level``. Never raises."""
    return filter_step(step.to_dict(), level, content_keys(step), registered_names(step))


def filter_for_export(step: RunStep, level: PrivacyLevel) -> dict[str, Any]:
    """The plain copy of ``step`` that may leave the process at ``level``: what the store would
    keep, without artifacts at any level (their count and types stay). Never raises."""
    try:
        artifacts = step.tool_artifacts if isinstance(step, ToolStep) else None
        if isinstance(step, ToolStep) and artifacts is not None:
            step = step._replace(tool_artifacts=None)
        out = filter_step(step.to_dict(), level, content_keys(step), registered_names(step))
        if artifacts is not None:
            out["tool_artifacts_count"] = len(artifacts)
            out["tool_artifact_types"] = [_artifact_type(a.to_dict()) for a in artifacts]
        return out
    except Exception:
        return {"content_withheld": True, "filter_failed": True}


def filter_step(
    step: Mapping[str, Any],
    level: PrivacyLevel,
    keys: frozenset[str] = CONTENT_KEYS,
    registered: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The copy of a plain ``step`` the store may keep at ``level``. Never raises.

    ``keys`` are the content keys withheld below ``redacted``: every kind's, unless the kind
    is known. ``registered``: the tool names in the step that name a registered tool, kept
    below ``redacted``; any other becomes ``unknown:`` and its digest.
    """
    try:
        if level is PrivacyLevel.FULL:
            return dict(step)
        if level is PrivacyLevel.REDACTED:
            return _redact_map(_without_pixels(step), 0)
        return _metadata(step, keys, registered)
    except Exception:
        return {"content_withheld": True, "filter_failed": True}


def filter_text(text: str | None, level: PrivacyLevel) -> str | None:
    """A single content string (a run's final answer) at ``level``: None when withheld."""
    if text is None or not level.keeps_content:
        return None
    return redact(text) if level is PrivacyLevel.REDACTED else text


def _metadata(
    step: Mapping[str, Any], keys: frozenset[str], registered: frozenset[str]
) -> dict[str, Any]:
    out = {key: value for key, value in step.items() if key not in keys}
    if "tool_name" in out:
        out["tool_name"] = tool_name(out["tool_name"], registered)
    for key in ("tool_call_id", "response_id"):
        if key in out:
            out[key] = plain_id(out[key])
    if "response_model" in out:  # a server's words: a plain model name, else its digest
        out["response_model"] = plain_id(out["response_model"], MODEL_NAME)
    for key in ("finish_reason", "stop"):
        if key in out:
            out[key] = out[key] if out[key] in KNOWN_FINISH_REASONS else "other"
    out.update(_summaries(step, registered))
    if keys:  # a kind with no content (a context step) has nothing withheld
        out["content_withheld"] = True
    return out


def _summaries(step: Mapping[str, Any], registered: frozenset[str]) -> dict[str, Any]:
    """Counts and lengths of the content keys, each only when the value has the right type."""
    out: dict[str, Any] = {}
    for key in ("messages_sent", "tool_artifacts"):
        if isinstance(step.get(key), list | tuple):
            out[f"{key}_count"] = len(step[key])
    for key in ("content", "thinking", "refusal", "tool_result", "decision_reason"):
        if isinstance(step.get(key), str):
            out[f"{key}_length"] = len(step[key])
    if isinstance(step.get("tool_artifacts"), list | tuple):
        out["tool_artifact_types"] = [_artifact_type(a) for a in step["tool_artifacts"]]
    if isinstance(step.get("requested_tool_calls"), list | tuple):
        out["requested_tool_names"] = _call_names(step["requested_tool_calls"], registered)
    if isinstance(step.get("tool_arguments"), Mapping):
        out["tool_arguments_keys_count"] = len(step["tool_arguments"])
    return out


def plain_id(value: Any, plain: re.Pattern[str] = PLAIN_ID) -> str:
    """A model-chosen id as metadata: itself when short and plain, else a digest of it."""
    text = value if isinstance(value, str) else repr(value)
    return text if plain.fullmatch(text) else _digest(text)


def tool_name(name: Any, registered: frozenset[str]) -> str:
    """A tool name as metadata: a registered tool's (clipped), else ``unknown:`` and a digest
    of the name the model made up (``unknown:sha256:…``, as a call id's)."""
    if isinstance(name, str) and name in registered:
        return _clip(name)
    return UNKNOWN_TOOL + _digest(name if isinstance(name, str) else repr(name))


def _digest(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return "sha256:" + digest[:ID_DIGEST_CHARS]


def _artifact_type(artifact: Any) -> str:
    # Only the closed set of types is metadata; anything else could be data in disguise.
    kind = artifact.get("type") if isinstance(artifact, Mapping) else None
    return kind if isinstance(kind, str) and kind in _ARTIFACT_TYPES else "other"


def _call_names(calls: Any, registered: frozenset[str]) -> list[str]:
    names = (c.get("name") for c in calls if isinstance(c, Mapping))
    return [tool_name(name, registered) for name in names if isinstance(name, str)]


def _clip(name: str) -> str:
    return name if len(name) <= NAME_CHAR_CAP else name[:NAME_CHAR_CAP] + "…"


def _without_pixels(step: Mapping[str, Any]) -> Mapping[str, Any]:
    artifacts = step.get("tool_artifacts")
    if not isinstance(artifacts, list | tuple):
        return step
    return {**step, "tool_artifacts": [_pixelless(a) for a in artifacts]}


def _pixelless(artifact: Any) -> Any:
    if not isinstance(artifact, Mapping) or artifact.get("type") != str(ArtifactType.IMAGE):
        return artifact
    data = artifact.get("data")
    mime = data.get("mime_type") if isinstance(data, Mapping) else None
    kept = {"mime_type": mime if isinstance(mime, str) else "", "data": "", "note": IMAGE_NOT_KEPT}
    return {**artifact, "data": kept}


def _redact_map(value: Mapping[Any, Any], depth: int) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for key, item in value.items():
        new_key = redact(key) if isinstance(key, str) else key
        while new_key in out:  # two keys masked alike: keep both, do not merge them
            new_key = f"{new_key}#"
        out[new_key] = _redact_value(item, depth + 1)
    return out


def _redact_value(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth >= REDACT_MAX_DEPTH:
        return TOO_DEEP
    if isinstance(value, Mapping):
        return _redact_map(value, depth)
    if isinstance(value, list | tuple):
        return [_redact_value(item, depth + 1) for item in value]
    return redact(repr(value))
