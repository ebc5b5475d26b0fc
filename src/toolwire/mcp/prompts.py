"""The workspace's prompt templates as MCP prompts, and completions of their arguments.

- ``prompts/list``: each prompt the workspace declares (:mod:`toolwire.workspace.prompts`), with
  its description and arguments; none without a workspace or a ``prompts`` section.
- ``prompts/get``: one user message, the template with the host's arguments put in. An unknown
  prompt, an unknown or missing argument or a value outside its choices is the JSON-RPC error
  ``-32602`` (invalid params), naming it.
- ``completion/complete`` for a prompt's argument: its choices that begin with what the host
  typed (any case), at most ``MAX_CHOICES``; none for an argument without choices.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolwire.workspace.prompts import (
    MAX_CHOICES,
    PromptArgumentsError,
    PromptTemplate,
    shown,
)

NO_COMPLETION = types.Completion(values=[], total=0, has_more=False)


def templates_of(workspace: Any) -> tuple[PromptTemplate, ...]:
    return tuple(getattr(workspace, "prompts", ()) or ())


def listed(workspace: Any) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[described(p) for p in templates_of(workspace)])


def described(prompt: PromptTemplate) -> types.Prompt:
    arguments = [
        types.PromptArgument(name=a.name, description=a.description or None, required=a.required)
        for a in prompt.arguments
    ]
    return types.Prompt(name=prompt.name, description=prompt.description, arguments=arguments)


def found(workspace: Any, name: str) -> PromptTemplate:
    """The prompt called ``name``; ``-32602`` naming it when there is none."""
    prompt = next((p for p in templates_of(workspace) if p.name == name), None)
    if prompt is None:
        raise MCPError(
            types.INVALID_PARAMS,
            f"Unknown prompt: {shown(name)}; prompts/list names the prompts this server has",
        )
    return prompt


def got(workspace: Any, name: str, arguments: Mapping[str, str] | None) -> types.GetPromptResult:
    prompt = found(workspace, name)
    try:
        text = prompt.render(arguments or {})
    except PromptArgumentsError as exc:
        raise MCPError(types.INVALID_PARAMS, str(exc)) from None
    message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
    return types.GetPromptResult(description=prompt.description, messages=[message])


def completed(workspace: Any, name: str, argument: str, typed: str) -> types.CompleteResult:
    """The choices of ``argument`` of prompt ``name`` that begin with ``typed``."""
    wanted = found(workspace, name).argument(argument)
    if wanted is None or wanted.choices is None:
        return types.CompleteResult(completion=NO_COMPLETION)
    return choices_completion(wanted.choices, typed)


def choices_completion(choices: tuple[str, ...] | list[str], typed: str) -> types.CompleteResult:
    start = typed.casefold()
    values = [c for c in choices if c.casefold().startswith(start)]
    first = values[:MAX_CHOICES]
    more = len(values) > MAX_CHOICES
    completion = types.Completion(values=first, total=len(values), has_more=more)
    return types.CompleteResult(completion=completion)
