"""Queued runs from the command line: queue one, follow its stored steps, decide through the
queue.

A queued run is executed by a worker (``toolwire worker``); the command follows it in the
store, printing each step as it is stored (its stored copy, at the run's privacy level: at
``metadata`` a step shows counts and names, not what was said) and ends as ``toolwire run``
does: the answer (as stored), an error, or how to resume it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import decided, error, failed_text, plural, safe, unoffered
from toolwire.core.errors import ToolwireError

if TYPE_CHECKING:
    from toolwire.core.sealing import StateKey
    from toolwire.queue import RunQueue
    from toolwire.runs.runtime import OperatorDecision, RunOutcome, Runtime
    from toolwire.store import RunStore


def open_queue(console: Console, store: RunStore, key: StateKey | None) -> RunQueue:
    """The queue on ``store``; one error line and exit 1 when there can be none."""
    from toolwire.queue import RunQueue

    try:
        return RunQueue(store, key)
    except ToolwireError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None


class Follower:
    """Follows queued runs in the store, printing their steps on ``console`` (None: quiet)."""

    def __init__(self, console: Console | None, queue: RunQueue, runtime: Runtime) -> None:
        self.console = console
        self.queue = queue
        self.runtime = runtime
        self.steps = 0  # steps seen, over every segment followed
        self._last = 0

    def follow(self, run_id: str) -> RunOutcome:
        """Print each step of ``run_id`` as it is stored, until the run ends or waits; its
        outcome as the store has it."""
        started = time.perf_counter()
        waited = self.queue.wait(run_id, pending=self.runtime.pending, started=started,
                                 on_event=self._seen, after=self._last)  # fmt: skip
        return asyncio.run(waited)

    def decide(self, run_id: str, decision: OperatorDecision) -> RunOutcome:
        """Queue ``decision`` on the waiting queued run ``run_id`` and follow the run on."""
        checked = self.runtime.check(run_id, decision)
        self.queue.decide(checked, decision)
        self._last = max(self._last, checked.waiting.next_sequence - 1)  # shown before it waited
        if self.console is not None:
            self.console.print(Text(f"decision queued; a worker carries run {run_id} on",
                                    style="dim"))  # fmt: skip
        return self.follow(run_id)

    def _seen(self, event: Mapping[str, Any]) -> None:
        if event["type"] != "step":
            return
        self.steps += 1
        self._last = max(self._last, _number(event["step"].get("sequence")))
        if self.console is not None:
            self.console.print(stored_step_line(event["step"]), highlight=False)


def stored_step_line(step: Mapping[str, Any]) -> Text:
    """One line per stored step, like a live step's (``toolwire.cli.show.step_line``)."""
    head = Text(f"[round {_number(step.get('round'))}] ", style="dim")
    kind = step.get("kind")
    if kind == "request":
        messages = step.get("messages_sent_count", len(step.get("messages_sent") or ()))
        tools = len(step.get("tool_specs") or ())
        refusals = [r for r in step.get("refusals") or () if isinstance(r, Mapping)]
        return head + Text(f"→ request: {messages} messages, {tools} tools") + unoffered(refusals)
    if kind == "llm":
        calls = step.get("requested_tool_calls") or ()
        names = step.get("requested_tool_names") or [
            c.get("name", "?") for c in calls if isinstance(c, dict)
        ]
        what = "calls " + ", ".join(safe(str(n), 60) for n in names) if names else "answers"
        return head + Text(f"← model {what} ({_ms(step)} ms)", style="cyan")
    if kind == "tool":
        return head + _tool_text(step)
    if kind == "decision":
        verb = decided(str(step.get("decision")))
        return head + Text(f"  {verb} by {safe(str(step.get('decided_by')), 60)}", style="magenta")
    if kind == "provider_failed":
        line = failed_text(step.get("provider"), step.get("error_class"), step.get("next_provider"))
        return head + Text(line, style="yellow")
    if kind == "context_truncated":
        dropped = _number(step.get("dropped_exchanges"))
        return head + Text(f"✂ context: dropped {plural(dropped, 'old exchange')}", style="yellow")
    return head + Text(f"{safe(str(kind), 40)} step")


def _tool_text(step: Mapping[str, Any]) -> Text:
    failed = step.get("tool_is_error") is True
    status = Text("error", style="red") if failed else Text("ok", style="green")
    artifacts = step.get("tool_artifacts_count", len(step.get("tool_artifacts") or ()))
    result = step.get("tool_result")
    shown = safe(result) if isinstance(result, str) else "(result not stored)"
    return (
        Text(f"  tool {safe(str(step.get('tool_name')), 60)} ")
        + status
        + Text(f" ({_ms(step)} ms, {artifacts} artifacts): {shown}")
    )


def _ms(step: Mapping[str, Any]) -> str:
    value = step.get("duration_ms")
    return f"{value:.0f}" if isinstance(value, int | float) else "?"


def _number(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
