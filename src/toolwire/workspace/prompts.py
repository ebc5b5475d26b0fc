"""The prompt templates a workspace declares, which ``toolwire mcp`` offers hosts as prompts.

One table per prompt under ``prompts``: a ``description``, a ``template`` whose ``{name}``
placeholders each name one of its ``arguments`` (``{{`` and ``}}`` are literal braces), and the
arguments, each with a ``description``, ``required`` (default false) and, optionally,
``choices``: the only values it takes, which hosts are offered as completions::

    [prompts.review_order]
    description = "Review one order"
    template = "Look at order {order_id} and report anything unusual, {style}."

    [prompts.review_order.arguments.order_id]
    description = "The order's id"
    required = true

    [prompts.review_order.arguments.style]
    description = "How to answer"
    choices = ["briefly", "in detail"]

Everything is checked when the workspace is loaded (a placeholder no argument declares, a
format spec, a bad name): :class:`ConfigError` naming the prompt. A host's arguments are
checked when it asks (:meth:`PromptTemplate.render`): an unknown argument, a missing required
one or a value outside the choices is :class:`PromptArgumentsError`, naming it. Values are put
in as given, never read as format strings: a value's braces stay braces.

This module imports no part of the MCP SDK: loading a workspace stays cheap.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from toolwire.core.errors import ConfigError, ToolwireError
from toolwire.core.reprs import count, ident, size, tagged

NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
MAX_TEMPLATE_CHARS = 20_000  # an instruction, not a document
MAX_DESCRIPTION_CHARS = 1_000
MAX_CHOICES = 100  # what one completion answer may carry
MAX_VALUE_CHARS = 10_000  # one argument's value from a host
SHOWN_CHARS = 40  # of a host's argument name or value, in an error


class PromptArgumentsError(ToolwireError):
    """A host's arguments do not fit the prompt; the message names what is wrong."""


class PromptArgumentSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    description: str = Field("", max_length=MAX_DESCRIPTION_CHARS)
    required: bool = False
    choices: list[str] | None = Field(None, min_length=1, max_length=MAX_CHOICES)


class PromptSettings(BaseModel):
    """One ``[prompts.<name>]`` table as written; checked further by :func:`prompt_templates`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    description: str = Field(min_length=1, max_length=MAX_DESCRIPTION_CHARS)
    template: str = Field(min_length=1, max_length=MAX_TEMPLATE_CHARS)
    arguments: dict[str, PromptArgumentSettings] = {}


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False
    choices: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return tagged("PromptArgument", name=ident(self.name), required=self.required,
                      choices=count(self.choices))  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class PromptTemplate:
    """One prompt, validated: its parts are the template's literal text and placeholders."""

    name: str
    description: str
    template: str
    arguments: tuple[PromptArgument, ...] = ()

    def __repr__(self) -> str:  # names and counts: never the template's words
        return tagged("PromptTemplate", name=ident(self.name), arguments=count(self.arguments),
                      template_bytes=size(self.template))  # fmt: skip

    def argument(self, name: str) -> PromptArgument | None:
        return next((a for a in self.arguments if a.name == name), None)

    def render(self, given: Mapping[str, str]) -> str:
        """The template with ``given`` put in (an optional argument not given: empty)."""
        for name in given:
            if self.argument(name) is None:
                known = ", ".join(a.name for a in self.arguments) or "none"
                raise PromptArgumentsError(
                    f"prompt {self.name} has no argument {shown(name)} (its arguments: {known})"
                )
        for argument in self.arguments:
            value = given.get(argument.name)
            if value is None:
                if argument.required:
                    raise PromptArgumentsError(
                        f"prompt {self.name} needs the argument {argument.name}"
                    )
                continue
            if len(value) > MAX_VALUE_CHARS:
                raise PromptArgumentsError(
                    f"argument {argument.name} of prompt {self.name} is longer than "
                    f"{MAX_VALUE_CHARS} characters"
                )
            if argument.choices is not None and value not in argument.choices:
                raise PromptArgumentsError(
                    f"argument {argument.name} of prompt {self.name} is one of "
                    f"{', '.join(argument.choices)}, not {shown(value)}"
                )
        parts: list[str] = []
        for literal, field, _, _ in string.Formatter().parse(self.template):
            parts.append(literal)
            if field is not None:
                parts.append(given.get(field, ""))
        return "".join(parts)


def prompt_templates(
    settings: Mapping[str, PromptSettings], source: str
) -> tuple[PromptTemplate, ...]:
    """The workspace's prompts, in the order the file lists them; ``ConfigError`` naming the
    first problem."""
    found: list[PromptTemplate] = []
    for name, prompt in settings.items():
        where = f"{source}: prompts.{name}"
        if not NAME.fullmatch(name):
            raise ConfigError(f"{where}: a prompt's name is a letter, then letters, digits, _ or -")
        arguments = []
        for argument, values in prompt.arguments.items():
            if not NAME.fullmatch(argument):
                raise ConfigError(f"{where}: argument {argument!r} is not a plain name")
            choices = None if values.choices is None else tuple(values.choices)
            arguments.append(PromptArgument(name=argument, description=values.description,
                                            required=values.required, choices=choices))  # fmt: skip
        declared = {a.name for a in arguments}
        try:
            parsed = list(string.Formatter().parse(prompt.template))
        except ValueError as exc:
            braces = "write {{ and }} for braces"
            raise ConfigError(f"{where}: template: {exc} ({braces})") from None
        for _, field, spec, conversion in parsed:
            if field is None:
                continue
            if spec or conversion:
                raise ConfigError(f"{where}: template: {{{field}}} takes no format or conversion")
            if field not in declared:
                raise ConfigError(f"{where}: template: {{{field}}} is not one of its arguments")
        found.append(PromptTemplate(
            name=name, description=prompt.description, template=prompt.template,
            arguments=tuple(arguments),
        ))  # fmt: skip
    return tuple(found)


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """A host's word in an error: quoted, cut after ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "…")
