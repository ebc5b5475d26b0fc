"""Terminal rendering of steps, tables, times and costs. Untrusted text is shown literally: no
markup, no escapes.

Every listing a person reads is a :func:`table`: a header, then one line per row, in columns
that ``awk`` and ``cut`` can split. Every time a person reads is :func:`local_time`: ISO 8601
in the local zone. Raw values (UTC text, epoch milliseconds) are for ``--json``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, assert_never

from rich.console import Console
from rich.text import Text

from toolwire.core.jsonenc import dumps
from toolwire.core.lifecycle import RunStatus
from toolwire.policy.trace import (
    ContextStep,
    DecisionStep,
    FailedStep,
    LlmStep,
    RequestStep,
    RunStep,
    ToolStep,
)
from toolwire.providers.base import Delta
from toolwire.tools.policy import workspace_note

if TYPE_CHECKING:
    from rich.status import Status

    from toolwire.core.egress import EgressAsk
    from toolwire.loop.state import Pause

# C0/C1 controls (but tab and newline) could move the cursor or recolour the terminal.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PREVIEW_CHARS = 160
# Whitespace in a preview line: made visible, as the inspector's page does (pending.js).
_WHITESPACE_RUN = re.compile("[\t \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+")
_WHITESPACE_GLYPHS = {"\t": "→", " ": "·"}
OTHER_SPACE_GLYPH = "␣"
WHITESPACE_LEGEND = (
    "whitespace shown: → tab, · space (at the start or end of a line, or two or more "
    "together), ␣ another space character"
)
CHANGED_NOTICE = (
    "what the calls marked changed were previewed on was changed after the decision, so "
    "nothing ran: decide again on their fresh previews"
)
WAITING_TEXT = "waiting for the model…"
_DECIDED = {"approve": "approved", "deny": "denied", "input": "answered",
            "elicit:accept": "a server's question answered",
            "elicit:decline": "a server's question declined",
            "elicit:cancel": "a server's question cancelled"}  # fmt: skip


def safe(text: str, limit: int | None = _PREVIEW_CHARS) -> str:
    """Untrusted text made harmless for a terminal, optionally cut to one short line."""
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if limit is not None:
        text = " ".join(text.split())
        if len(text) > limit:
            text = text[:limit] + "…"
    return text


def error(console: Console, message: str) -> None:
    """One error line on stderr, never hard-wrapped (paths and ids stay whole for copying).

    ``console`` is the command's; an error goes to stderr whatever it writes to, so that
    stdout keeps only what a script reads (``--json``, an answer)."""
    _stderr(console).print(Text(f"error: {message}", style="red"), soft_wrap=True)


def warning(console: Console, message: str) -> None:
    """One warning line on stderr, as :func:`error`."""
    _stderr(console).print(Text(f"warning: {message}", style="yellow"), soft_wrap=True)


def _stderr(console: Console) -> Console:
    return console if console.stderr else Console(stderr=True, highlight=False)


def plural(count: int, word: str) -> str:
    """``1 round``, ``2 rounds``, ``0 rounds``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def emit_json(value: object) -> None:
    """``value`` as one line of JSON on stdout, nothing else. ASCII only: a model's text stays
    data (every control character, C1 included, is a ``\\u`` escape), never a terminal escape."""
    sys.stdout.write(json.dumps(value, ensure_ascii=True, allow_nan=False) + "\n")
    sys.stdout.flush()


def step_line(step: RunStep) -> Text:
    """One line per step, as it is recorded."""
    head = Text(f"[round {step.round}] ", style="dim")
    match step:
        case RequestStep():
            line = f"→ request: {len(step.messages_sent)} messages, {len(step.tool_specs)} tools"
            return head + Text(line) + unoffered(step.refusals or ())
        case LlmStep():
            calls = step.requested_tool_calls or ()
            what = "calls " + ", ".join(safe(c.name, 60) for c in calls) if calls else "answers"
            who = f" [{safe(step.provider, 60)}]" if step.provider else ""
            return head + Text(f"← model{who} {what} ({step.duration_ms:.0f} ms)", style="cyan")
        case FailedStep():
            return head + Text(failed_text(step.provider, step.error_class, step.next_provider),
                               style="yellow")  # fmt: skip
        case DecisionStep():
            return head + Text(decision_text(step), style="magenta")
        case ToolStep():
            return head + _tool_text(step)
        case ContextStep():
            return head + Text(context_text(step), style="yellow")
        case _:
            assert_never(step)


def unoffered(refusals: Iterable[Mapping[str, str]]) -> Text:
    """What a request's line adds for the tools the run has no workspace for (said once: only
    the first request carries the gate's refusals)."""
    note = workspace_note(refusals)
    return Text("") if note is None else Text(f"; {note}", style="yellow")


def _tool_text(step: ToolStep) -> Text:
    status = Text("error", style="red") if step.tool_is_error else Text("ok", style="green")
    count = len(step.tool_artifacts or ())
    return (
        Text(f"  tool {safe(step.tool_name, 60)} ")
        + status
        + Text(f" ({step.duration_ms:.1f} ms, {count} artifacts): {safe(step.tool_result)}")
    )


def failed_text(provider: object, error_class: object, next_provider: object) -> str:
    """A failed attempt of a fallback chain: who failed, how, and who is asked next."""
    then = f"; trying {safe(str(next_provider), 60)}" if next_provider else ""
    return f"✗ provider {safe(str(provider), 60)} failed ({safe(str(error_class), 40)}){then}"


def context_text(step: ContextStep) -> str:
    """What left the conversation to fit the model's window, and the tokens before and after."""
    return (
        f"✂ context: dropped {plural(step.dropped_exchanges, 'old exchange')} "
        f"({plural(step.dropped_messages, 'message')}), about {step.tokens_before:,} → "
        f"{step.tokens_after:,} tokens of a {step.context_window:,}-token window"
    )


def decision_text(step: DecisionStep) -> str:
    """A person's decision: who and which, with the reason; never the input's values."""
    text = f"  {decided(step.decision)} by {safe(step.decided_by, 60)}"
    if step.decision_reason:
        text += f": {safe(step.decision_reason)}"
    return text


def decided(decision: str) -> str:
    """What a person did to a paused turn, as a verb (``approved``); an unknown one as it is."""
    return _DECIDED.get(decision, safe(decision, 20))


def pause_lines(pause: Pause) -> list[Text]:
    """A waiting run's pending turn: each call with its preview, whitespace made visible (with a
    legend when any is), and the input it asks for."""
    if pause.egress is not None:
        return egress_lines(pause.digest, pause.egress)
    what = "approval" if pause.status is RunStatus.AWAITING_APPROVAL else "input"
    lines = [Text(f"waiting for {what} · turn {pause.digest}")]
    ids = set(pause.changed)
    changed = {i for i, call in enumerate(pause.calls) if call.id in ids}
    if changed:
        lines.append(Text(f"  {CHANGED_NOTICE}", style="yellow"))
    marked = False
    for preview in pause.previews:
        mark = " (changed)" if preview.index in changed else ""
        lines.append(Text(f"  call {preview.index + 1}: {safe(preview.tool, 60)}{mark}",
                          style="bold"))  # fmt: skip
        if preview.held is not None:  # why the run's containment holds it for a person
            lines.append(Text(f"    held: {safe(preview.held, None)}", style="yellow"))
        for line in preview.lines:
            shown, visible = preview_line(line)
            lines.append(Text("    ") + shown)
            marked = marked or visible
    for refused in pause.refused:  # refused by the run's containment: never run, whatever
        name = pause.calls[refused.at].name if refused.at < len(pause.calls) else "?"
        said = f"(refused: {safe(refused.reason, 40)}; it does not run)"
        lines.append(Text(f"  call {refused.at + 1}: {safe(name, 60)} {said}", style="yellow"))
    if marked:
        lines.append(Text(f"  {WHITESPACE_LEGEND}", style="dim"))
    if pause.input_tool is not None:
        schema = dumps(dict(pause.input_schema or {}))
        lines.append(Text(f"  input for {safe(pause.input_tool, 60)}: {safe(schema, None)}"))
    return lines


def egress_lines(digest: str, ask: EgressAsk) -> list[Text]:
    """A run waiting for approval to pass an egress limit: where its next request would go,
    and, per limit, the bytes sent so far, this request's and the limit (counts only)."""
    lines = [Text(f"waiting for approval · egress limit · turn {digest}")]
    first = ask.crossed[0]
    lines.append(Text(f"  the next request to {safe(ask.provider, 60)} would send "
                      f"{first.request} bytes of tool output", style="bold"))  # fmt: skip
    for limit in ask.crossed:
        whose = "the run's" if limit.scope == "run" else "the workspace's"
        lines.append(Text(f"  {whose} limit: {limit.limit} bytes, {limit.counted} sent so far",
                          style="yellow"))  # fmt: skip
    lines.append(Text("  approving sends it, and the run may send one more limit's worth "
                      "before it asks again; denying ends the run"))  # fmt: skip
    return lines


def preview_line(line: str) -> tuple[Text, bool]:
    """One preview line with its whitespace visible, and whether any was marked: every run of
    whitespace but a single space with more text after it (tab →, space ·, another ␣)."""
    text = Text()
    marked = False
    at = 0
    for run in _WHITESPACE_RUN.finditer(line):
        if run.group() == " " and run.end() < len(line):
            continue
        text.append(safe(line[at : run.start()], None))
        glyphs = "".join(_WHITESPACE_GLYPHS.get(c, OTHER_SPACE_GLYPH) for c in run.group())
        text.append(glyphs, style="dim")
        at, marked = run.end(), True
    text.append(safe(line[at:], None))
    return text, marked


def dollars(usd: float) -> str:
    """US dollars: four decimals, or as many as a tiny amount needs (``$0.000045``)."""
    if usd == 0 or usd >= 0.01:
        return f"${usd:.4f}"
    return "$" + f"{usd:.8f}".rstrip("0")


_NO_COST = ("unknown", "not recorded")


def cost_value(usd: float | None, complete: bool | None, estimated: bool = False) -> str:
    """A run's cost where a label already says it is one (``cost: unknown``): exact, a floor,
    ``unknown``, or ``not recorded``; priced from estimated tokens, it says so."""
    if usd is None:
        return _NO_COST[1]
    if complete:
        shown = dollars(usd)
    elif usd > 0:
        shown = f"at least {dollars(usd)}"
    else:
        return _NO_COST[0]
    return f"{shown} (estimated)" if estimated else shown


def cost_text(usd: float | None, complete: bool | None, estimated: bool = False) -> str:
    """A run's cost in a sentence: as :func:`cost_value`, ``cost unknown`` when it is not
    known."""
    value = cost_value(usd, complete, estimated)
    return f"cost {value}" if value in _NO_COST else value


def local_time(value: str | float | None, *, precise: bool = False) -> str:
    """A stored time (ISO 8601 text, UTC when it names no zone, or milliseconds since the
    epoch) as ISO 8601 in the local zone, to the second (``precise``: the millisecond); ``-``
    when there is none, and an unreadable text as it is."""
    if value is None or value == "":
        return "-"
    try:
        if isinstance(value, str):
            moment = datetime.fromisoformat(value)
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        else:
            moment = datetime.fromtimestamp(value / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return safe(str(value), 60)
    return moment.astimezone().isoformat(timespec="milliseconds" if precise else "seconds")


def table(console: Console, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """Print ``rows`` under a header of ``columns`` (upper-cased), each column as wide as its
    widest cell and two spaces apart: no box and no wrapping, so a line is one row. Cells
    must already be safe (:func:`safe`)."""
    lines = [[column.upper() for column in columns], *([*row] for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    for number, line in enumerate(lines):
        text = "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True))
        console.print(Text(text.rstrip(), style="bold" if number == 0 else ""), soft_wrap=True)


def tokens_text(total: int, known: bool) -> str:
    """A run's tokens as a person reads them: the count, or "tokens unknown" with the estimate
    its budgets counted when a provider did not report them all."""
    return plural(total, "token") if known else f"tokens unknown (about {total} estimated)"


class StepPrinter:
    """A trace observer printing one line per step, and a delta observer printing a streamed
    answer as it arrives (thinking dimmed, on lines of its own, never in the answer)."""

    def __init__(self, console: Console, *, spinner: bool = False) -> None:
        self.console = console
        self.streamed: dict[int, str] = {}  # the answer text streamed per round
        self._open: str | None = None  # the kind of the line being streamed, if one is open
        # While a request waits for the model's first word, on a terminal only.
        self._spinner = spinner and console.is_terminal
        self._status: Status | None = None

    def __call__(self, step: RunStep) -> None:
        self._quiet()
        self._close()
        self.console.print(step_line(step), highlight=False)
        if self._spinner and isinstance(step, RequestStep):
            self._status = self.console.status(WAITING_TEXT)
            self._status.start()

    def delta(self, round: int, delta: Delta) -> None:
        self._quiet()
        if delta.kind != self._open:
            self._close()
            label = "  thinking: " if delta.kind == "thinking" else ""
            self.console.print(Text(label, style="dim"), end="")
            self._open = delta.kind
        style = "dim" if delta.kind == "thinking" else ""
        self.console.print(Text(safe(delta.text, None), style=style), end="", soft_wrap=True)
        if delta.kind == "content":
            self.streamed[round] = self.streamed.get(round, "") + delta.text

    def was_streamed(self, answer: str) -> bool:
        """Whether ``answer`` was already printed whole as it streamed."""
        return bool(answer) and answer in self.streamed.values()

    def finish(self) -> None:
        """Stop the spinner, if one turns (a run that ends without a step after its request)."""
        self._quiet()

    def _quiet(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _close(self) -> None:
        if self._open is not None:
            self.console.print()
            self._open = None
