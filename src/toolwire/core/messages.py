"""The provider-neutral wire model: chat messages, tool calls and tool specs.

``ChatMessage.tool_result`` is the single wire sink for tool output. It accepts only a plain
``str``; the loop's invoke seam is its only caller and hands it ``ToolResult.content``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.core.reprs import count, ident, shape, size, tagged
from toolwire.core.slots import setters

Role = Literal["system", "user", "assistant", "tool"]
_ROLES = frozenset({"system", "user", "assistant", "tool"})


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model is told about a tool: its name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a tool spec needs a non-empty name")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. ``arguments`` is the JSON text exactly as the model sent it.

    Keeping the text (not a decoded map) means a malformed call can be reported precisely and
    replayed to the provider unchanged.
    """

    id: str
    name: str
    arguments: str = "{}"

    @classmethod
    def of(cls, id: str, name: str, arguments: Mapping[str, Any] | str | None = None) -> ToolCall:
        """Build a call from a decoded map (as Anthropic and Gemini send) or raw JSON text."""
        if arguments is None:
            return cls(id, name, "{}")
        if isinstance(arguments, str):
            return cls(id, name, arguments)
        return cls(id, name, json.dumps(arguments, ensure_ascii=False, separators=(",", ":")))

    def decoded_arguments(self) -> dict[str, Any] | None:
        """The arguments as a map, or ``None`` when the text is not a JSON object."""
        text = self.arguments
        try:
            if text[:1] == "{":  # most calls: an object from the first character, scanned at once
                value, end = _SCAN(text, 0)
                return value if end == len(text) or not text[end:].strip(_JSON_SPACE) else None
            value = _STRICT.decode(text) if text and not text.isspace() else {}
        except (ValueError, RecursionError, StopIteration):
            return None
        return value if isinstance(value, dict) else None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    def __repr__(self) -> str:
        """Its id and tool name; of the arguments only their size."""
        arguments = size(self.arguments)
        return tagged("ToolCall", id=ident(self.id), name=ident(self.name),
                      arguments_bytes=arguments)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ProviderState:
    """Opaque model state of an assistant turn, for the provider family that wrote it.

    Thinking blocks with their signatures (Anthropic), parts with thought signatures (Gemini):
    the API wants them back verbatim on the next request. ``data`` is the adapter's own JSON;
    only an adapter of ``provider`` reads it, so it never reaches another provider.
    """

    provider: str
    data: Any

    def to_dict(self) -> dict[str, Any]:
        return {"provider": self.provider, "data": self.data}

    def __repr__(self) -> str:
        return tagged("ProviderState", provider=ident(self.provider), data=shape(self.data))


@dataclass(frozen=True, slots=True, init=False)
class ChatMessage:
    """One turn of a conversation. Build it with the factories below."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    provider_state: ProviderState | None = None

    def __init__(  # noqa: PLR0917 (the fields in order, as the generated form takes them)
        self,
        role: Role,
        content: str,
        tool_calls: tuple[ToolCall, ...] = (),
        tool_call_id: str | None = None,
        is_error: bool = False,
        provider_state: ProviderState | None = None,
    ) -> None:
        """Written out rather than generated: the checks and the fields in one pass, since a
        run makes two messages every round (a third of the generated form's cost)."""
        if role not in _ROLES:
            raise ValueError(f"unknown message role {role!r}")
        if type(content) is not str:
            raise TypeError(f"message content must be str, not {type(content).__name__}")
        if role != "assistant" and (tool_calls or provider_state is not None):
            if tool_calls:
                raise ValueError("only an assistant message can carry tool calls")
            raise ValueError("only an assistant message carries provider state")
        if (tool_call_id is not None) != (role == "tool"):
            raise ValueError("a tool message, and only a tool message, has a tool_call_id")
        if tool_call_id == "":
            raise ValueError("tool_call_id must not be empty")
        _role(self, role)
        _content(self, content)
        _tool_calls(self, tool_calls)
        _tool_call_id(self, tool_call_id)
        _is_error(self, is_error)
        _provider_state(self, provider_state)

    @classmethod
    def system(cls, content: str) -> ChatMessage:
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> ChatMessage:
        return cls("user", content)

    @classmethod
    def assistant(
        cls,
        content: str,
        tool_calls: Sequence[ToolCall] = (),
        provider_state: ProviderState | None = None,
    ) -> ChatMessage:
        return cls("assistant", content, tuple(tool_calls), None, False, provider_state)

    @classmethod
    def tool_result(cls, call_id: str, content: str, *, is_error: bool = False) -> ChatMessage:
        """The only way tool output becomes a message. ``content`` must be a plain ``str``."""
        if type(content) is not str:
            raise TypeError(
                f"tool_result takes the result's content string, not {type(content).__name__}"
            )
        return cls("tool", content, (), call_id, is_error, None)  # positional: the cheap call

    def to_dict(self) -> dict[str, Any]:
        """A provider-neutral plain form, used by the trace and the stores."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.is_error:
            out["is_error"] = True
        if self.provider_state is not None:
            out["provider_state"] = self.provider_state.to_dict()
        return out

    def __repr__(self) -> str:
        """Its role and sizes: message text stays out of logs and tracebacks."""
        state = self.provider_state
        return tagged(
            "ChatMessage",
            role=self.role,
            content_bytes=size(self.content),
            tool_calls=count(self.tool_calls) or None,
            tool_call_id=ident(self.tool_call_id),
            is_error=self.is_error or None,
            provider_state=None if state is None else ident(state.provider),
        )


_role, _content, _tool_calls, _tool_call_id, _is_error, _provider_state = setters(
    ChatMessage, "role", "content", "tool_calls", "tool_call_id", "is_error", "provider_state"
)
_new_object = object.__new__


def assistant_turn(
    content: str, tool_calls: tuple[ToolCall, ...], provider_state: ProviderState | None
) -> ChatMessage:
    """The assistant turn the loop appends every round with calls: ``ChatMessage.assistant``
    without its hop and without the checks an assistant turn's shape cannot fail (only the
    content's type is the provider's to get wrong)."""
    if type(content) is not str:
        return ChatMessage("assistant", content, tool_calls, None, False, provider_state)
    message: ChatMessage = _new_object(ChatMessage)
    _role(message, "assistant")
    _content(message, content)
    _tool_calls(message, tool_calls)
    _tool_call_id(message, None)
    _is_error(message, False)
    _provider_state(message, provider_state)
    return message


def tool_message(call_id: str, content: str, is_error: bool) -> ChatMessage:
    """The tool result the loop appends for every call: ``ChatMessage.tool_result`` without
    the checks a bounded result's content cannot fail (a call's id still must not be empty)."""
    if not call_id or type(content) is not str:
        return ChatMessage("tool", content, (), call_id, is_error, None)
    message: ChatMessage = _new_object(ChatMessage)
    _role(message, "tool")
    _content(message, content)
    _tool_calls(message, ())
    _tool_call_id(message, call_id)
    _is_error(message, is_error)
    _provider_state(message, None)
    return message


def _refuse_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python's decoder would accept them and hand a tool a NaN.
    raise ValueError(f"{name} is not JSON")


# Made once: ``json.loads`` with an option builds a new decoder on every call, which costs more
# than decoding a call's arguments. A decoder keeps no state between calls.
_STRICT = json.JSONDecoder(parse_constant=_refuse_constant)
# Its scanner, called without ``decode``'s two whitespace matches: ``(value, end)`` of the JSON
# value at an index, ``StopIteration`` when none starts there.
_SCAN: Callable[[str, int], tuple[Any, int]] = _STRICT.scan_once  # type: ignore[attr-defined]
_JSON_SPACE = " \t\n\r"  # the whitespace JSON allows around a value; no other
