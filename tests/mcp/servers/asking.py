"""An MCP server over stdio whose tools ask during their call: a person (elicitation) or the
client's model (sampling), in the protocol's multi-round form (a call answered with the
question; the client calls again with the answer). Each tool answers with what it was told,
as JSON text.

``sign_up`` asks for a name (required), a plan (a choice, default "free") and an age (a whole
number, at least 0); its message is ``MESSAGE`` in the environment when set. ``odd_form``
asks with a nested object, which is not a flat form. ``summarise`` asks the client's model
to summarise ``text``; ``summarise_with_tools`` asks with a tool offered.
"""

from __future__ import annotations

import json
import os

from mcp import types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import InputRequiredResult

app = MCPServer("asking")
SIGN_UP = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "maxLength": 40},
        "plan": {
            "type": "string",
            "enum": ["free", "pro"],
            "enumNames": ["Free", "Pro"],
            "default": "free",
        },
        "age": {"type": "integer", "minimum": 0},
    },
    "required": ["name"],
}
ODD = {"type": "object", "properties": {"address": {"type": "object", "properties": {}}}}


def _asked(ctx: Context, request: types.InputRequest) -> types.InputResponse | InputRequiredResult:
    """The client's answer to ``request``, once it gave one; until then, the question (the
    protocol's multi-round form: the call ends asking, and the client calls again answered)."""
    responses = ctx.input_responses
    if responses and "asked" in responses:
        return responses["asked"]
    return InputRequiredResult(input_requests={"asked": request})


@app.tool()
async def sign_up(ctx: Context) -> str | InputRequiredResult:
    """Sign up, asking the person for their details."""
    message = os.environ.get("MESSAGE", "Who are you?")
    params = types.ElicitRequestFormParams(message=message, requested_schema=SIGN_UP)
    answer = _asked(ctx, types.ElicitRequest(params=params))
    if isinstance(answer, InputRequiredResult):
        return answer
    assert isinstance(answer, types.ElicitResult)
    return json.dumps({"action": answer.action, "content": answer.content})


@app.tool()
async def odd_form(ctx: Context) -> str | InputRequiredResult:
    """Ask with a form that is not flat."""
    params = types.ElicitRequestFormParams(message="Where?", requested_schema=ODD)
    answer = _asked(ctx, types.ElicitRequest(params=params))
    if isinstance(answer, InputRequiredResult):
        return answer
    assert isinstance(answer, types.ElicitResult)
    return json.dumps({"action": answer.action})


def _sample(ctx: Context, text: str, tools: list[types.Tool] | None) -> str | InputRequiredResult:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))
    params = types.CreateMessageRequestParams(
        messages=[message], max_tokens=5000, system_prompt="Summarise.", tools=tools
    )
    made = _asked(ctx, types.CreateMessageRequest(params=params))
    if isinstance(made, InputRequiredResult):
        return made
    assert isinstance(made, types.CreateMessageResult)
    content = made.content
    said = content.text if isinstance(content, types.TextContent) else repr(content)
    return json.dumps({"text": said, "model": made.model, "stop": made.stop_reason})


@app.tool()
async def summarise(text: str, ctx: Context) -> str | InputRequiredResult:
    """Summarise ``text`` with the client's model."""
    return _sample(ctx, text, None)


@app.tool()
async def summarise_with_tools(text: str, ctx: Context) -> str | InputRequiredResult:
    """Summarise ``text`` with the client's model, offering it a tool."""
    tool = types.Tool(name="lookup", input_schema={"type": "object", "properties": {}})
    return _sample(ctx, text, [tool])


@app.tool()
async def capabilities(ctx: Context) -> str:
    """What the client declared."""
    caps = ctx.client_capabilities
    return json.dumps(
        {
            "sampling": caps is not None and caps.sampling is not None,
            "elicitation": caps is not None and caps.elicitation is not None,
        }
    )


if __name__ == "__main__":
    app.run()
