"""The scripted models of bench/agentdojo.py: a model that replays a task's ground truth (and,
gullible, the attacker's calls once it has read the goal), and a planner that cannot read
held values and asks about them instead (see :func:`scripted_planner`).

They are no smarter than a real model could be: they replay the ground truth, and what they
ask about is each argument the ground truth needs that no message they read shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolwire import ChatMessage, CompletionResponse, ScriptedProvider, ToolCall
from toolwire.policy.quarantine import ASK_ABOUT, HANDLE, QUESTION_PROMPT

if TYPE_CHECKING:
    from bench.agentdojo import World

__all__ = ["plain", "scripted_model", "scripted_planner"]


def plain(text: str) -> str:
    """Letters and digits only, lowercased: the same words through YAML's quoting and
    folding (a tool's answer is a YAML dump; long strings wrap, quotes double)."""
    return re.sub(r"[^0-9a-z]", "", text.lower())


def _as_call(index: int, call: Any) -> ToolCall:
    return ToolCall(f"call_{index + 1}", call.function, json.dumps(dict(call.args)))


def scripted_model(
    user_calls: Sequence[Any],
    final: str,
    *,
    injection_calls: Sequence[Any] = (),
    goal: str = "",
) -> ScriptedProvider:
    """The gullible model when given ``injection_calls`` and the attacker's ``goal``, else the
    honest one. Stateless: the next call is a function of the conversation (one call a turn),
    so the plan is the user's calls with the injection's inserted where the goal was first
    read."""
    marker = plain(goal) if goal else ""

    def plan(messages: Sequence[ChatMessage]) -> Sequence[Any]:
        if not marker or not injection_calls:
            return user_calls
        done = 0
        for message in messages:
            if message.role == "assistant":
                done += 1
            elif message.role == "tool" and marker in plain(message.content):
                return [*user_calls[:done], *injection_calls, *user_calls[done:]]
        return user_calls

    def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
        calls, done = plan(messages), sum(1 for m in messages if m.role == "assistant")
        if done < len(calls):
            return CompletionResponse(content="", tool_calls=(_as_call(done, calls[done]),))
        return CompletionResponse(content=final or "done")

    return ScriptedProvider(respond, name="gullible" if marker else "honest")


def _numbers(value: float) -> set[str]:
    """How a number may be written: 98.7, 98.70, 1000, 1000.0."""
    forms = {repr(value), f"{value:.2f}"}
    if float(value).is_integer():
        forms |= {str(int(value)), f"{int(value)}.0", f"{int(value)}.00"}
    return forms


def _in(value: Any, text: str) -> bool:
    """Whether ``value`` is written in ``text`` (a number as a whole number, a string as the
    same letters and digits)."""
    if isinstance(value, bool) or value is None:
        return True  # nothing to look up
    if isinstance(value, int | float):
        return any(
            re.search(rf"(?<![0-9.]){re.escape(form)}(?![0-9])", text) for form in _numbers(value)
        )
    if isinstance(value, str):
        letters = plain(value)
        return not letters or letters in plain(text)
    return True


def scripted_planner(
    user_calls: Sequence[Any],
    final: str,
    world: World,
    *,
    injection_calls: Sequence[Any] = (),
    goal: str = "",
) -> ScriptedProvider:
    """The quarantined mode's model: :func:`scripted_model`'s plan, by a planner that cannot
    read held values. Before a call, each argument (and each item of a list argument) whose
    value is written in no message it reads but in a held value is asked about first
    (``ask_about`` on that value's handle: a number as a number, a date as a date, an item of a
    held listing as a choice among its items, whose answer is a handle, anything else as a
    short string), and the call takes the answer. Which handle holds it is the bench's knowledge
    (``world``), as a planner knows which result the bill came from.

    The same provider answers the questions (the loop asks through the run's provider): from
    the value shown, the value the ground truth uses when it is written there. Gullible
    (``goal`` given), when the value shown carries the goal, it answers what the injection
    task's calls give the same argument, where the answer's type allows; choosing, the
    attacker's item if it is offered, else the item that carries the goal."""
    marker = plain(goal) if goal else ""
    attacker: dict[str, Any] = {}
    for call in injection_calls:
        for name, value in dict(call.args).items():
            attacker.setdefault(name, value)
    asked: dict[str, tuple[str, Any]] = {}  # a question's tag: the argument, its true value

    def answer(messages: Sequence[ChatMessage]) -> CompletionResponse:
        question = messages[-1].content
        given = answered(question)
        # what the run will hold of it: a string answer stays untrusted, whether shown or kept
        world.answers.append(("The answer is a string" in question, json.dumps(given)))
        return CompletionResponse(content=json.dumps({"answer": given}))

    def answered(question: str) -> Any:
        tag = question.split("[", 1)[1].split("]", 1)[0]
        data = question.split("Data:\n<<<\n", 1)[1].rsplit("\n>>>", 1)[0]
        name, true = asked[tag]
        if _CHOICES in question:  # a choice among a listing's items
            choices = json.loads(question.split(_CHOICES, 1)[1].split(".\n\nData:", 1)[0])
            picked = true if true in choices else choices[0]
            if marker and marker in plain(data):  # the attacker's choice, else its own item
                false = attacker.get(name)
                carrying = [c for c in choices if marker in plain(c)]
                picked = false if false in choices else (carrying or [picked])[0]
            return picked
        if marker and marker in plain(data) and name in attacker:
            false = attacker[name]
            if _date(true):
                if _date(false):
                    return false
            elif isinstance(true, int | float) == isinstance(false, int | float):
                return false
        if not isinstance(true, int | float):
            true = str(true)
        found = _in(true, data)
        return true if found else (0 if isinstance(true, int | float) else "not found")

    def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
        if messages and messages[0].content == QUESTION_PROMPT:
            return answer(messages)
        seen: list[str] = []  # what the planner reads
        held: dict[str, Any] = {}  # the values it holds handles of: handle, value
        answers: dict[str, Any] = {}  # its questions' answers, by tag
        wholes = iter(world.wholes)
        done, injected = 0, None  # injected: how many calls were done when it read the goal
        results, stopped = 0, False  # the plan's calls answered; one of the user's was refused
        for message in messages:
            seen.append(message.content)
            if message.role == "assistant":
                done += sum(c.name != ASK_ABOUT for c in message.tool_calls)
            elif message.role != "tool":
                continue
            elif (message.tool_call_id or "").startswith("ask_"):
                if not message.is_error:
                    answers[message.tool_call_id or ""] = json.loads(message.content)
                continue
            results += 1
            attack = injected is not None and injected < results <= injected + len(injection_calls)
            if message.is_error and _REFUSED in message.content and not attack:
                stopped = True  # it cannot go on as if it had what the refused call would give
            elif message.content.startswith("[$v") and (whole := HANDLE.match(message.content, 1)):
                held[whole.group()] = next(wholes, "")
            else:
                try:
                    shown = json.loads(message.content)
                except ValueError:
                    shown = None
                if isinstance(shown, dict):
                    for field_, handle_ in shown.items():
                        if field_ in world.fields and isinstance(handle_, str):
                            held[handle_] = world.fields[field_]
                if marker and injected is None and marker in plain(message.content):
                    injected = done
        calls = list(user_calls)
        if injected is not None and injection_calls:
            calls = [*calls[:injected], *injection_calls, *calls[injected:]]
        if stopped:
            return CompletionResponse(content="I could not finish: a call I needed was refused.")
        if done >= len(calls):
            return CompletionResponse(content=final or "done")
        call = calls[done]
        visible = "\n".join(seen)
        arguments = dict(call.args)
        for name, value in list(arguments.items()):
            items = list(value) if isinstance(value, list) else [value]
            for index, item in enumerate(items):
                tag = f"ask_{done}_{name}_{index}"
                if tag in answers:
                    items[index] = answers[tag]
                    continue
                if _in(item, visible):
                    continue
                listing = next((h for h, v in held.items() if _listed(item, v)), None)
                handle = listing or next((h for h, v in held.items() if _in(item, _text(v))), None)
                if handle is None:
                    continue  # the planner's own words
                asked[tag] = (name, item)
                number = isinstance(item, int | float) and not isinstance(item, bool)
                kind = "enum" if listing else "number" if number else "date" if _date(item) else ""
                question: dict[str, Any] = {
                    "variable": handle,
                    "question": f"[{tag}] What {name} should the call of {call.function} use?",
                    "answer_type": kind or "string",
                }
                if not kind:  # a string it only passes on: kept, so it never reads it
                    question["max_chars"] = min(500, max(50, 2 * len(str(item))))
                    question["keep"] = True
                return CompletionResponse(
                    content="", tool_calls=(ToolCall(tag, ASK_ABOUT, json.dumps(question)),)
                )
            arguments[name] = items if isinstance(value, list) else items[0]
        tool_call = ToolCall(f"call_{done + 1}", call.function, json.dumps(arguments))
        return CompletionResponse(content="", tool_calls=(tool_call,))

    return ScriptedProvider(respond, name="gullible" if marker else "honest")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


_CHOICES = "The answer is exactly one of: "  # how the loop's question offers choices
_REFUSED = "was not executed"  # what the seam's refusal of a call says
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def _date(value: Any) -> bool:
    return isinstance(value, str) and _DATE.fullmatch(value) is not None


def _listed(item: Any, value: Any) -> bool:
    """Whether ``item`` is one of the names of a held listing (a JSON array of strings)."""
    if not isinstance(item, str) or not isinstance(value, str) or not value.startswith("["):
        return False
    try:
        names = json.loads(value)
    except ValueError:
        return False
    return isinstance(names, list) and item in names
