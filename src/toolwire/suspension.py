"""When a turn waits for a person, what the person reads, and what a decision lets run.

- :func:`scan` looks at a whole tool-call turn before any of it executes. An offered call that
  needs approval pauses the run for approval (that scan comes first); otherwise an offered call
  whose tool asks for input pauses it for input. A call that is not offered never pauses a run:
  the seam refuses it later as "not permitted".
- Each pending call gets a preview: the tool's own (a diff, a row before and after) or its
  arguments; at most ``PREVIEW_LINES`` lines of ``PREVIEW_LINE_CHARS`` characters.
- :func:`plan` decides, per pending call and under the live gate, whether a decision lets it
  run (and with which arguments) or which fixed refusal the model reads instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from toolwire import seam
from toolwire.errors import InvalidInput
from toolwire.jsonenc import dumps
from toolwire.lifecycle import RunStatus
from toolwire.messages import ToolCall
from toolwire.reprs import shape, size, tagged
from toolwire.seam import Refused
from toolwire.state import CallPreview, Pause, turn_digest
from toolwire.tools.api import Tool, ToolContext, input_model_of, needs_approval, preview_of
from toolwire.tools.registry import ToolRegistry

log = logging.getLogger("toolwire.suspension")

PREVIEW_LINES = 20  # a screenful: an approver reads it all, or it is not a preview
PREVIEW_LINE_CHARS = 500  # one long line of a diff, not a dump
NO_PREVIEW = "The tool produced no preview for this call."
MAX_INPUT_ERRORS = 10  # problems named in an InvalidInput message


def more_lines(count: int) -> str:
    return f"… and {count} more line(s), not shown."


def preview_failed(exc: BaseException) -> str:
    return (
        f"The preview for this call failed ({type(exc).__name__}), so it shows nothing about "
        "what the call would do."
    )


async def scan(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    offered: frozenset[str],
    context: ToolContext,
    *,
    run_id: str,
    rounds: int,
    limit: int | None = None,
) -> Pause | None:
    """The pause this turn needs, or None when every call may simply run.

    Calls past ``limit`` (the per-turn cap) never run, so they neither pause the turn nor get
    a preview; they stay in the pending turn and are refused when it resumes.
    """
    within = calls if limit is None else calls[:limit]
    tools = [(i, c, registry.get(c.name)) for i, c in enumerate(within) if c.name in offered]
    if any(t is not None and needs_approval(t) for _, _, t in tools):
        status: Literal[RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_INPUT] = (
            RunStatus.AWAITING_APPROVAL
        )
        asking: tuple[str, Mapping[str, Any]] | None = None
    else:
        asking = next(
            ((c.name, _schema(t)) for _, c, t in tools if t is not None and input_model_of(t)),
            None,
        )
        if asking is None:
            return None
        status = RunStatus.AWAITING_INPUT
    previews = [await _preview(i, c, t, context) for i, c, t in tools if t is not None]
    return Pause(
        status=status,
        calls=tuple(calls),
        previews=tuple(previews),
        digest=turn_digest(run_id, rounds, calls),
        input_tool=None if asking is None else asking[0],
        input_schema=None if asking is None else asking[1],
    )


def _schema(tool: Tool) -> Mapping[str, Any]:
    model = input_model_of(tool)
    assert model is not None
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


async def _preview(index: int, call: ToolCall, tool: Tool, context: ToolContext) -> CallPreview:
    own = preview_of(tool)
    arguments = call.decoded_arguments()
    try:
        if own is None or arguments is None:
            lines: Sequence[Any] = _argument_lines(call, arguments)
        else:
            lines = await asyncio.to_thread(own, arguments, context)
        # a preview that returns one string, or something that is not lines at all (None),
        # must not crash the run: a string is split, anything else fails inside this try
        bounded = bound_preview(lines.splitlines() if isinstance(lines, str) else lines)
    except Exception as exc:
        log.warning("the preview of %r failed", call.name, exc_info=exc)
        return CallPreview(index=index, tool=call.name, lines=(preview_failed(exc),), failed=True)
    if not any(bounded):  # nothing, or only blank lines: the approver would read nothing
        return CallPreview(index=index, tool=call.name, lines=(NO_PREVIEW,), failed=True)
    return CallPreview(index=index, tool=call.name, lines=bounded)


def _argument_lines(call: ToolCall, arguments: dict[str, Any] | None) -> list[str]:
    if arguments is None:
        return [f"{call.name} with arguments that are not a JSON object: {call.arguments}"]
    return [f"{call.name}:"] + [f"  {key}: {dumps(value)}" for key, value in arguments.items()]


def bound_preview(lines: Sequence[Any]) -> tuple[str, ...]:
    """Strings only, whitespace collapsed, each cut to a line's width; a screenful at most."""
    clean = [" ".join(line.split())[:PREVIEW_LINE_CHARS] for line in lines if isinstance(line, str)]
    if len(clean) > PREVIEW_LINES:
        return (*clean[:PREVIEW_LINES], more_lines(len(clean) - PREVIEW_LINES))
    return tuple(clean)


# -- deciding ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Run:
    """This call runs, with these arguments (None: the model's own)."""

    arguments: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return tagged("Run", arguments=None if self.arguments is None else shape(self.arguments))


@dataclass(frozen=True, slots=True)
class Refuse:
    """This call does not run; the model reads ``text``; ``reason`` says why, as data."""

    text: str
    reason: Refused

    def __repr__(self) -> str:
        return tagged("Refuse", text_bytes=size(self.text))


Answer = Run | Refuse


def plan(
    pause: Pause,
    registry: ToolRegistry,
    *,
    offered_then: frozenset[str],
    offered_now: frozenset[str],
    approved: bool,
    values: Mapping[str, Any] | None,
) -> list[tuple[ToolCall, Answer]]:
    """For each pending call, in order, what the decision lets happen under the live gate.

    The input answers one call: the first call of the tool that asked. A later call of that
    tool in the same turn was never answered, so it reads ``input_missing`` like any other.
    """
    asked = next((i for i, c in enumerate(pause.calls) if c.name == pause.input_tool), None)
    return [
        (
            c,
            _answer(
                pause,
                c,
                registry.get(c.name),
                offered_then=offered_then,
                offered_now=offered_now,
                approved=approved,
                values=values if i == asked else None,
            ),
        )
        for i, c in enumerate(pause.calls)
    ]


def _answer(
    pause: Pause,
    call: ToolCall,
    tool: Tool | None,
    *,
    offered_then: frozenset[str],
    offered_now: frozenset[str],
    approved: bool,
    values: Mapping[str, Any] | None,
) -> Answer:
    if pause.status is RunStatus.AWAITING_APPROVAL and not approved:
        return Refuse(seam.denied(call.name), Refused.DENIED)
    if tool is None:
        return Refuse(seam.unknown_tool(call.name), Refused.UNKNOWN_TOOL)
    if call.name not in offered_then:
        # it was not permitted when it was made
        return Refuse(seam.not_permitted(call.name), Refused.NOT_PERMITTED)
    if call.name not in offered_now:
        return Refuse(seam.no_longer_permitted(call.name), Refused.NO_LONGER_PERMITTED)
    if pause.status is RunStatus.AWAITING_APPROVAL:
        return (
            Refuse(seam.input_missing(call.name), Refused.INPUT_MISSING)
            if input_model_of(tool)
            else Run()
        )
    if needs_approval(tool):
        return Refuse(seam.approval_missing(call.name), Refused.APPROVAL_MISSING)
    if call.name != pause.input_tool or values is None:
        return (
            Refuse(seam.input_missing(call.name), Refused.INPUT_MISSING)
            if input_model_of(tool)
            else Run()
        )
    return Run(overlay(call.decoded_arguments(), pause.input_schema, values))


def overlay(
    arguments: dict[str, Any] | None,
    schema: Mapping[str, Any] | None,
    values: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The model's arguments with every schema-declared key taken from the person's input.

    Keys the schema does not declare are the model's alone: a person's undeclared keys are
    dropped, and the model's undeclared keys are kept.
    """
    if arguments is None:
        return None
    declared = set((schema or {}).get("properties", {}))
    kept = {k: v for k, v in arguments.items() if k not in declared}
    return kept | {k: v for k, v in values.items() if k in declared}


def validate_input(tool: Tool | None, values: Mapping[str, Any]) -> dict[str, Any]:
    """The input as the tool's input model reads it; ``InvalidInput`` naming each problem."""
    model = None if tool is None else input_model_of(tool)
    if model is None:
        return dict(values)  # the call will be refused as no longer permitted
    try:
        return _plain(model.model_validate(dict(values)))
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)[:MAX_INPUT_ERRORS]
        ]
        raise InvalidInput("the input does not fit: " + "; ".join(problems)) from None


def _plain(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json")
