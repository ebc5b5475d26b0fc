"""When a turn waits for a person, what the person reads, and what a decision lets run.

- :func:`scan` looks at a whole tool-call turn before any of it executes. An offered call that
  needs approval, or that the run's containment holds (:mod:`toolwire.policy.containment`: its
  preview says why), pauses the run for approval (that scan comes first); otherwise an offered
  call whose tool asks for input pauses it for input. A call that is not offered never pauses a run:
  the seam refuses it later as "not permitted".
- Each pending call gets a preview: the tool's own (a diff, a row before and after) or its
  arguments; at most ``PREVIEW_LINES`` lines of ``PREVIEW_LINE_CHARS`` characters. Whitespace
  is kept exactly (an indentation moved out of a block is a change an approver must see);
  a control, format or separator character is replaced by a visible stand-in, so a line shows
  what it holds and nothing moves the cursor or reorders the text; a cut line ends in "…".
  With it goes the digest of what it was computed on (:mod:`toolwire.loop.basis`).
- :func:`plan` decides, per pending call and under the live gate, whether a decision lets it
  run (and with which arguments) or which fixed refusal the model reads instead; then
  :func:`stale_answers` and :func:`preview_again` apply what :func:`toolwire.loop.basis.recheck`
  found: a preview that no longer holds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from toolwire.core.errors import InvalidInput, RunNotWaiting
from toolwire.core.jsonenc import dumps
from toolwire.core.lifecycle import RunStatus
from toolwire.core.messages import ToolCall
from toolwire.core.reprs import shape, size, tagged
from toolwire.loop import seam
from toolwire.loop.basis import Stale, digest_basis
from toolwire.loop.seam import Refused
from toolwire.loop.state import CallPreview, Contained, Pause, turn_digest
from toolwire.policy.quarantine import ASK_ABOUT, EMPTY_VAULT, Vault
from toolwire.tools.api import Tool, ToolContext, input_model_of, needs_approval, preview_of
from toolwire.tools.registry import ToolRegistry

log = logging.getLogger("toolwire.suspension")

PREVIEW_LINES = 20  # a screenful: an approver reads it all, or it is not a preview
PREVIEW_LINE_CHARS = 500  # one long line of a diff, not a dump
CUT = "…"  # ends a line cut at PREVIEW_LINE_CHARS: what follows it is not shown
NO_PREVIEW = "The tool produced no preview for this call."
MAX_INPUT_ERRORS = 10  # problems named in an InvalidInput message
EGRESS_NOT_CALLS = (
    "this run waits for approval to send its next request past an egress limit, not on tool "
    "calls: approve or deny it as a whole (its pause's ``egress`` says what it would send)"
)


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
    held: Mapping[int, str] | None = None,
    contained: Sequence[Contained] = (),
    vault: Vault = EMPTY_VAULT,
) -> Pause | None:
    """The pause this turn needs, or None when every call may simply run.

    Calls past ``limit`` (the per-turn cap) never run, so they neither pause the turn nor get
    a preview; they stay in the pending turn and are refused when it resumes. ``held``: the
    calls (by index) the run's containment holds for approval, and why; ``contained``: those it
    refused, which neither pause the turn nor get a preview, and are refused when it resumes.
    ``vault``: the values the run holds; a preview is computed on the values a call's handles
    name, what it would run with (see :mod:`toolwire.policy.quarantine`).
    """
    within = calls if limit is None else calls[:limit]
    out = {c.at for c in contained}
    tools = [(i, c, registry.get(c.name)) for i, c in enumerate(within)
             if c.name in offered and i not in out]  # fmt: skip
    held = held or {}
    if held or any(t is not None and needs_approval(t) for _, _, t in tools):
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
    previews = [await _preview(i, c, t, context, held.get(i), vault) for i, c, t in tools
                if t is not None]  # fmt: skip
    return Pause(
        status=status,
        calls=tuple(calls),
        previews=tuple(previews),
        digest=turn_digest(run_id, rounds, calls, previews),
        input_tool=None if asking is None else asking[0],
        input_schema=None if asking is None else asking[1],
        refused=tuple(contained),
    )


def _schema(tool: Tool) -> Mapping[str, Any]:
    model = input_model_of(tool)
    assert model is not None
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


async def _preview(  # noqa: PLR0917 (the preview's facts, in order)
    index: int,
    call: ToolCall,
    tool: Tool,
    context: ToolContext,
    held: str | None = None,
    vault: Vault = EMPTY_VAULT,
) -> CallPreview:
    arguments = vault.arguments_of(call)
    basis = await digest_basis(tool, arguments, context)  # first: see toolwire.loop.basis
    lines, failed = await _lines(call, preview_of(tool), arguments, context)
    return CallPreview(index=index, tool=call.name, lines=lines, failed=failed, basis=basis,
                       held=held)  # fmt: skip


async def _lines(
    call: ToolCall,
    own: Callable[[Mapping[str, Any], ToolContext], Sequence[str]] | None,
    arguments: dict[str, Any] | None,
    context: ToolContext,
) -> tuple[tuple[str, ...], bool]:
    """The preview's bounded lines, and whether it failed (then one line says so)."""
    try:
        if own is None or arguments is None:
            lines: Sequence[Any] = _argument_lines(call, arguments)
        else:
            lines = await asyncio.to_thread(own, arguments, context)
        # a preview that returns one string, or something that is not lines at all (None),
        # must not crash the run: a string is split, anything else fails inside this try
        bounded = bound_preview([lines] if isinstance(lines, str) else lines)
    except Exception as exc:
        log.warning("the preview of %r failed", call.name, exc_info=exc)
        return (preview_failed(exc),), True
    if not any(line.strip() for line in bounded):  # the approver would read nothing
        return (NO_PREVIEW,), True
    return bounded, False


def _argument_lines(call: ToolCall, arguments: dict[str, Any] | None) -> list[str]:
    if arguments is None:
        return [f"{call.name} with arguments that are not a JSON object: {call.arguments}"]
    # not indented: whitespace is shown, and a made-up indentation would read as the data's
    return [f"{call.name}:"] + [f"{key}: {dumps(value)}" for key, value in arguments.items()]


def bound_preview(lines: Sequence[Any]) -> tuple[str, ...]:
    """Strings only, a newline inside one starting a line of its own; every other character
    kept but the unsafe ones (see the module); each line cut to ``PREVIEW_LINE_CHARS``; a
    screenful at most."""
    clean = [_bound_line(part) for line in lines if isinstance(line, str)
             for part in _split(line)]  # fmt: skip
    if len(clean) > PREVIEW_LINES:
        return (*clean[:PREVIEW_LINES], more_lines(len(clean) - PREVIEW_LINES))
    return tuple(clean)


# Controls but tab, lone surrogates, and the characters that are invisible or move text
# around: soft hyphen, bidirectional marks and overrides, zero widths, separators, the BOM.
_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff]"
)


def _split(text: str) -> list[str]:
    """``text``'s lines: split at each newline only, so a carriage return stays (and shows)."""
    parts = text.split("\n")
    return parts[:-1] if len(parts) > 1 and parts[-1] == "" else parts


def _bound_line(line: str) -> str:
    line = line[: PREVIEW_LINE_CHARS + 1]  # a stand-in is never shorter than what it replaces
    if _UNSAFE.search(line):
        line = _UNSAFE.sub(_stand_in, line)
    if len(line) <= PREVIEW_LINE_CHARS:
        return line
    return line[: PREVIEW_LINE_CHARS - len(CUT)] + CUT


def _stand_in(match: re.Match[str]) -> str:
    """A C0 control as its control picture (U+240D for a carriage return), DEL as U+2421, a lone
    surrogate as U+FFFD, anything else as its code point: ``⟨U+202E⟩``."""
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    return f"⟨U+{code:04X}⟩"


# -- deciding ------------------------------------------------------------------------------


def running(answers: Sequence[tuple[ToolCall, Answer]], limit: int) -> list[int]:
    """The indices of the calls a decision lets run (within the turn's call limit)."""
    return [i for i, (_, answer) in enumerate(answers[:limit]) if isinstance(answer, Run)]


def stale_answers(
    answers: Sequence[tuple[ToolCall, Answer]], stale: Stale
) -> list[tuple[ToolCall, Answer]]:
    """``answers`` with each call whose tool fails on a stale preview refused instead."""
    failing = set(stale.fail)
    return [
        (c, Refuse(seam.preview_changed(c.name), Refused.PREVIEW_CHANGED) if i in failing else a)
        for i, (c, a) in enumerate(answers)
    ]


async def preview_again(
    pause: Pause,
    changed: Sequence[int],
    registry: ToolRegistry,
    context: ToolContext,
    *,
    run_id: str,
    rounds: int,
    vault: Vault = EMPTY_VAULT,
) -> Pause:
    """``pause`` waiting again, the calls at ``changed`` named in it, and a new digest, so no
    earlier decision applies. Every preview is made afresh (with its basis) but those of a
    queued run's recovered calls that did not change: one already done, or a write of unknown
    outcome, keeps the words that say so."""
    kept = {r.call_id for r in pause.recorded} | set(pause.rerun)
    fresh = []
    for shown in pause.previews:
        call = pause.calls[shown.index]
        tool = registry.get(call.name)
        if tool is not None and (shown.index in changed or call.id not in kept):
            fresh.append(await _preview(shown.index, call, tool, context, shown.held, vault))
        else:
            fresh.append(shown)
    return dataclasses.replace(
        pause,
        previews=tuple(fresh),
        digest=turn_digest(run_id, rounds, pause.calls, fresh),
        changed=tuple(pause.calls[i].id for i in changed),
    )


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
    if pause.egress is not None:
        raise RunNotWaiting(EGRESS_NOT_CALLS)
    asked = next((i for i, c in enumerate(pause.calls) if c.name == pause.input_tool), None)
    contained = {c.at: Refuse(c.text, Refused(c.reason)) for c in pause.refused}
    return [
        (
            c,
            contained.get(i)
            or _answer(
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
        # the loop's own question about a held value (toolwire.loop.holding) runs as approved
        return Run() if call.name == ASK_ABOUT else Refuse(seam.unknown_tool(call.name),
                                                           Refused.UNKNOWN_TOOL)  # fmt: skip
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
