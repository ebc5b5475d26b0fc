"""One turn's held values (:mod:`toolwire.policy.quarantine`): each call's handles replaced by
their values before it runs, each quarantining tool's result held after it, the labels carried
from one to the other, and the question a call of ``ask_about`` asks about a value.

The loop makes a :class:`Holding` only for a turn of a run that offers a quarantining tool or
holds a value already: any other turn takes none of this path.

Invariants:
- Handles are replaced with the values the vault held when the turn began: calls of one turn
  are planned before any of its results, so none can name a value the turn makes.
- What the model reads of a held result is the seam's text (:func:`toolwire.loop.seam.held_value`)
  or the result's JSON object with handles in place of the held fields: never the value.
- A call receiving an untrusted value has an untrusted result, classified at least as the value
  (whatever its tool declares), and a result held whole enters the context as the runtime's own
  text: it marks nothing. An identifier chosen from a listing makes a result untrusted only when
  what enters the context carries its letters (the tool echoed it).
- A choice among a listing's items is answered with a new handle to the item chosen: the item's
  text never enters the context.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from toolwire.core.messages import ChatMessage
from toolwire.core.output import Checked, OutputSchema
from toolwire.core.result import ToolResult
from toolwire.core.trust import DataClass, Integrity
from toolwire.loop.endings import Spent
from toolwire.loop.seam import (
    Invoked,
    Refused,
    answer_not_in_schema,
    bad_question,
    held_value,
    not_a_listing,
    question_not_permitted,
    refusal,
    unknown_variable,
)
from toolwire.loop.state import Progress
from toolwire.loop.turn import Job
from toolwire.policy.containment import Labels, Provenance, Source
from toolwire.policy.pricing import Cost
from toolwire.policy.quarantine import (
    ASK_ABOUT,
    QUESTION_PROMPT,
    Question,
    Unknown,
    Variable,
    Vault,
    answer_schema,
    endorsed,
    listing_items,
    question_of,
    split,
)
from toolwire.policy.trace import Held
from toolwire.tools.policy import Gate

__all__ = ["Ask", "Holding", "ready", "with_questions"]

_UNTRUSTED = Integrity.UNTRUSTED
# The model call a question makes: its messages and schema, answered and checked (the loop's
# own provider call, recorded as the round's step).
Ask = Callable[[tuple[ChatMessage, ...], OutputSchema], Awaitable[tuple[str, Checked | None]]]


class Holding:
    """One turn's vault: what its calls receive and what their results leave in it."""

    def __init__(self, vault: Vault, labels: Labels, round_: int) -> None:
        self.began = vault  # what the turn's calls may name
        self.vault = vault  # with what the turn's results made
        self.labels = labels
        self.round = round_
        self._used: dict[int, tuple[Variable, ...]] = {}  # by the job's identity
        self._asked: dict[int, tuple[Variable, Integrity, Variable | None]] = {}

    def arguments(self, job: Job) -> dict[str, Any] | Invoked | None:
        """The arguments ``job`` runs with, its handles replaced; or its refusal when one is
        not this run's."""
        arguments = job.arguments
        if not self.began.variables:
            return arguments
        if arguments is None:  # a decided call runs with the arguments its model gave
            arguments = job.call.decoded_arguments()
            if arguments is None:
                return None  # the seam refuses it
        substituted = self.began.substitute(arguments)
        if isinstance(substituted, Unknown):
            text = unknown_variable(job.call.name, substituted.handle)
            return refusal(text, Refused.UNKNOWN_VARIABLE)
        if substituted.used:
            self._used[id(job)] = substituted.used
            return substituted.arguments
        return arguments

    async def ask(self, job: Job, gate: Gate | None, ask: Ask) -> Invoked:
        """A call of ``ask_about``: one model call with no tools about a held value, its
        answer checked against the schema the call asked for."""
        question = question_of(job.arguments)
        if isinstance(question, str):
            return Invoked(ToolResult.error(bad_question(question)))
        variable = self.began.get(question.handle)
        if variable is None:
            return refusal(unknown_variable(ASK_ABOUT, question.handle), Refused.UNKNOWN_VARIABLE)
        if gate is not None and not gate.allows(variable.tool):
            return Invoked(ToolResult.error(question_not_permitted(variable.handle, variable.tool)))
        choosing = question.answer_type == "enum" and question.choices is None
        if choosing:
            items = self._listing(variable)
            if isinstance(items, str):
                return Invoked(ToolResult.error(not_a_listing(variable.handle, items)))
            question = question._replace(choices=items)
        schema = OutputSchema(
            answer_schema(question.answer_type, question.choices, question.max_chars),
            name="answer",
            strict=True,
        )
        _, checked = await ask(_question_messages(question, variable), schema)
        label = endorsed(question.answer_type, endorse_strings=self.labels.endorse_strings)
        if checked is None or checked.problem is not None:
            self._asked[id(job)] = (variable, label, None)
            problem = "no answer" if checked is None else checked.problem
            text = answer_not_in_schema(variable.handle, question.answer_type, problem or "")
            return Invoked(ToolResult.error(text))
        answer = checked.value["answer"]
        chosen = None
        if choosing or question.keep:  # the answer stays held: the model gets a handle to it
            self.vault, chosen = self.vault.held(
                answer, _UNTRUSTED if choosing else label, variable.data_class,
                tool=variable.tool, round_=variable.round, identifier=choosing,
            )  # fmt: skip
            answer = chosen.handle
            label = Integrity.TRUSTED  # what enters is a handle: the runtime's own text
        self._asked[id(job)] = (variable, label, chosen)
        return Invoked(ToolResult.text(json.dumps(answer)))

    def _listing(self, variable: Variable) -> tuple[str, ...] | str:
        """The items a question may choose among: a listing's, held from a tool that declares
        it lists identifiers (never a value some other tool held, nor an answer's)."""
        if variable.tool not in self.labels.listings or variable.identifier:
            return "it is not a listing of identifiers"
        return listing_items(variable)

    def recorded(
        self, job: Job, invoked: Invoked, integrity: Integrity | None, provenance: Provenance
    ) -> tuple[Invoked, Integrity | None, Provenance, Held]:
        """A finished call as it enters the context: its result (held, where its tool
        quarantines it), the label of what entered, the provenance after it, and what its step
        records of held values."""
        name, key, round_ = job.call.name, id(job), self.round
        asked = self._asked.pop(key, None)
        if asked is not None:
            variable, label, chosen = asked
            self.vault = self.vault.flowed((variable,), name, round_)
            if invoked.result.is_error:
                return invoked, None, provenance, Held(None, (variable.handle,), None)
            entered = provenance.entered(Source(name, round_), label, variable.data_class)
            if chosen is None:
                return invoked, label, entered, Held(None, (variable.handle,), None)
            kept = ({"handle": chosen.handle, "value": chosen.value},)
            return invoked, label, entered, Held((chosen.shown(),), (variable.handle,), kept)
        used = self._used.pop(key, ())
        if integrity is None:  # the runtime's own answer: nothing ran, nothing was received
            return invoked, None, provenance, Held(None, None, None)
        data_class = self.labels.classes.get(name, DataClass.PUBLIC)
        named: tuple[Variable, ...] = ()
        if used:
            self.vault = self.vault.flowed(used, name, round_)
            if any(v.integrity is _UNTRUSTED and not v.identifier for v in used):
                integrity = _UNTRUSTED
            named = tuple(v for v in used if v.identifier and v.integrity is _UNTRUSTED)
            data_class = max(data_class, *(v.data_class for v in used))
        fields = self.labels.quarantined.get(name)
        made: tuple[Variable, ...] = ()
        everything = not fields or invoked.result.is_error  # all of it enters, or is held
        if named and everything and _echoes(invoked.result.content, named):
            integrity = _UNTRUSTED  # the tool echoed an identifier: its words are in it
        entering: Integrity | None = integrity
        if fields is not None and not invoked.result.is_error:
            invoked, made, whole = self._hold(invoked, fields, integrity, data_class, name)
            if whole:
                entering = None  # the runtime's text: nothing someone else wrote entered
            elif named and _echoes(invoked.result.content, named):
                entering = _UNTRUSTED  # a visible field echoes an identifier
        if entering is not None:
            provenance = provenance.entered(Source(name, round_), entering, data_class)
        step = Held(
            tuple(v.shown() for v in made) or None,
            tuple(v.handle for v in used) or None,
            tuple({"handle": v.handle, "value": v.value} for v in made) or None,
        )
        return invoked, entering, provenance, step

    def _hold(
        self, invoked: Invoked, fields: tuple[str, ...], integrity: Integrity,
        data_class: DataClass, name: str,
    ) -> tuple[Invoked, tuple[Variable, ...], bool]:  # fmt: skip
        """``invoked`` with what its tool quarantines held; the variables made, and whether
        the whole result was."""
        result = invoked.result
        shown, parts = split(result.content, fields or None)
        # Held fields are the words the tool's declaration says someone else wrote: untrusted,
        # whatever the rest of the result is (its visible fields keep the tool's own label).
        label = _UNTRUSTED if fields else integrity
        made = []
        for field, value in parts:
            self.vault, variable = self.vault.held(value, label, data_class, tool=name,
                                                   round_=self.round, field=field)  # fmt: skip
            made.append(variable)
        if shown is None:  # held whole
            (variable,) = made
            content = held_value(variable.handle, variable.size, integrity.value, name)
        elif not made:
            return invoked, (), False
        else:
            content = json.dumps(shown | {v.field: v.handle for v in made if v.field})
        held = ToolResult.text(content, *result.artifacts)
        return invoked._replace(result=held), tuple(made), shown is None


def _letters(text: str) -> str:
    """Letters and digits only, case folded: the same words through quoting, escaping and
    line folding (a tool's YAML or JSON may wrap or escape what it echoes)."""
    return "".join(c for c in text.casefold() if c.isalnum())


def _echoes(content: str, named: Sequence[Variable]) -> bool:
    """Whether ``content`` carries the words of one of the ``named`` identifiers (one with no
    letters or digits is taken to: nothing shows it is absent)."""
    plain = _letters(content)
    return any(not (word := _letters(str(v.value))) or word in plain for v in named)


def _question_messages(question: Question, variable: Variable) -> tuple[ChatMessage, ...]:
    value = variable.value if isinstance(variable.value, str) else json.dumps(variable.value)
    shape = {"bool": "true or false", "number": "a number",
             "date": "a calendar date written YYYY-MM-DD",
             "enum": "exactly one of: " + json.dumps(list(question.choices or ())),
             "string": f"a string of at most {question.max_chars} characters"}  # fmt: skip
    return (
        ChatMessage.system(QUESTION_PROMPT),
        ChatMessage.user(
            f"Question: {question.question}\nThe answer is {shape[question.answer_type]}.\n\n"
            f"Data:\n<<<\n{value}\n>>>"
        ),
    )


async def ready(invoked: Invoked) -> Invoked:
    """A call's answer, settled before it ran (a refusal), as what to await for it."""
    return invoked


def with_questions(at: Progress, asked: Sequence[Spent]) -> Spent:
    """What a round spent (``at``) and what each of its questions' model calls spent (each
    its own, from nothing)."""
    cost = at.cost
    for spent in asked:
        cost = Cost(cost.usd + spent.cost.usd, cost.complete and spent.cost.complete,
                    cost.estimated or spent.cost.estimated)  # fmt: skip
    return Spent(at.rounds, sum((a.usage for a in asked), at.usage), cost, at.tally)
