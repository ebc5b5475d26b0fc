"""A multi-round tool conversation every wire-shape test encodes: two system messages, a user
turn, an assistant turn with two calls (one with arguments that are not JSON), their results
(one an error), a second assistant turn with an empty-argument call, and its result."""

from __future__ import annotations

from toolwire import ChatMessage, CompletionRequest, ToolCall, ToolSpec

WEATHER_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}
BAD_ARGUMENTS = '{"a": 2, "b": '
ADD_ERROR = 'Error: arguments for tool "add" must be a JSON object; the text sent was not one.'

TOOLS = (
    ToolSpec("weather", "Current weather for a city.", WEATHER_SCHEMA),
    ToolSpec("add", "Add two integers.", ADD_SCHEMA),
)

MESSAGES = (
    ChatMessage.system("You are terse."),
    ChatMessage.system("Answer in English."),
    ChatMessage.user("Weather in Oslo, and 2+2?"),
    ChatMessage.assistant(
        "Checking.",
        [
            ToolCall("call_a", "weather", '{"city": "Oslo"}'),
            ToolCall("call_b", "add", BAD_ARGUMENTS),
        ],
    ),
    ChatMessage.tool_result("call_a", 'Oslo: 3°C, "rain"'),
    ChatMessage.tool_result("call_b", ADD_ERROR, is_error=True),
    ChatMessage.assistant("", [ToolCall("call_c", "clock", "")]),
    ChatMessage.tool_result("call_c", '{"time": "12:00"}'),
    ChatMessage.user("Thanks."),
)

REQUEST = CompletionRequest(messages=MESSAGES, tools=TOOLS, temperature=0.2, max_tokens=512)
PLAIN = CompletionRequest(messages=(ChatMessage.user("Hello"),))
