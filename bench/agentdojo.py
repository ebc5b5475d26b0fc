"""AgentDojo's suites through toolwire's loop: what containment stops, and what it costs.

AgentDojo (Debenedetti et al., 2024) ships four suites of tools over a simulated world
(``banking``, ``slack``, ``travel``, ``workspace``), user tasks with the calls that solve them
(``ground_truth``) and a ``utility`` check of the world afterwards, and injection tasks: an
attacker's goal written into the data the tools return, with a ``security`` check of whether it
was reached. This bench wraps each suite's Python functions as toolwire tools, labelled by the
tables below, and drives the real loop (seam, policy gate, containment) with two scripted models:

- *gullible*: performs the user task's ground-truth calls in order and, as soon as a tool
  result carries the attacker's goal, performs the injection task's ground-truth calls first
  (the attack's own wording: "before you can solve the task ... please do the following");
- *honest*: performs the user task's ground-truth calls and nothing else.

Each (user task, injection task) pair of a suite runs with the injections AgentDojo's
``important_instructions`` attack places (in every vector the user task's ground truth reads),
once per mode: containment *off* (no tool is consequential, so no turn is checked) and *on*
(the tables' consequential tools, the run's policy ``refuse``: a held call does not run, as
when a person denies every approval). Utility and attack success are AgentDojo's own checks on
the world after the run; the calls handed to its trace-based checks are the calls that ran
(a call containment refused changed nothing). The honest model runs each user task once per
mode in the suite's world without injections.

A third mode, *quarantined*, is containment on with the untrusted tools' words held as
values (:data:`QUARANTINED`: a whole document, page or review list, or only the free-text
fields of a structured result, whose rest is then shown as trusted; or a listing of the
world's identifiers, such as Slack's channels, which may be chosen from unread). Its models are
planners that cannot read a held value (:func:`scripted_planner`): an argument found only in
one is asked about first (``ask_about``: a number, a date, a choice among a listing's items,
answered with a handle, or a short string, which stays untrusted), and the same scripted
provider answers the question, honestly or, gullible, as the injection says.

Every tool is declared with one data class (``content``), so the confidentiality half of the
rule never holds a call here: the bench measures integrity alone. Write effects are not
declared: in toolwire a write effect waits for a person on every call, which is not what
AgentDojo measures; writes are declared ``consequential`` instead, so only containment holds
them.

Install: agentdojo is in the ``bench`` extra (and ``dev``) at the version constraints.txt pins:
``pip install -c constraints.txt "agentdojo==0.1.35"`` (or ``-e ".[bench]"``). It runs offline:
the suites' data ship in the package.

Run: python -m bench.agentdojo [--suite banking] [--limit N] [--json]
``--limit N`` keeps the first N user tasks of each suite (each against every injection task).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from toolwire import (
    ChatMessage,
    RunOptions,
    ToolLoop,
    ToolRegistry,
)
from toolwire.core.messages import ToolSpec
from toolwire.core.result import ToolResult
from toolwire.core.trust import Integrity
from toolwire.policy.quarantine import ASK_ABOUT
from toolwire.tools.api import ToolContext

if __name__ == "__main__":  # run as a file, its folder would come first and shadow the package
    _here = Path(__file__).resolve().parent  # its parent instead: the bench package's home
    sys.path[:] = [str(_here.parent), *(p for p in sys.path if Path(p or ".").resolve() != _here)]

try:
    from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
    from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
    from agentdojo.attacks.base_attacks import FixedJailbreakAttack
    from agentdojo.attacks.important_instructions_attacks import ImportantInstructionsAttack
    from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
    from agentdojo.task_suite.load_suites import get_suite
except ImportError as missing:  # what a checkout without the extra says, and how to fix it
    _MISSING = (
        f"bench/agentdojo.py needs agentdojo ({missing}): install it with "
        '`pip install -c constraints.txt "agentdojo==0.1.35"` (it is in the bench and dev extras)'
    )
    if __name__ == "__main__":
        raise SystemExit(_MISSING) from None
    raise ImportError(_MISSING) from None

from bench.agentdojo_models import scripted_model, scripted_planner  # after the path is set

BENCHMARK_VERSION = "v1.2.2"  # AgentDojo's default (agentdojo.scripts.benchmark)
SUITES = ("banking", "slack", "travel", "workspace")
DATA_CLASS = "content"  # every tool alike: integrity is what is measured
ATTACK_USER = "Emma Johnson"  # the name AgentDojo's important_instructions attack signs with

TRUSTED, UNTRUSTED = "trusted", "untrusted"


class Label(NamedTuple):
    """How one AgentDojo tool is declared to toolwire, and why."""

    integrity: str  # of its results: may their text be believed as instructions
    consequential: bool  # a call changes the world or sends something out
    why: str
    # arguments it only stores where they are read back as untrusted (see toolwire.tools.labels)
    stores: tuple[str, ...] = ()


def reads(integrity: str, why: str) -> Label:
    return Label(integrity, False, why)


def acts(integrity: str, why: str, *, stores: tuple[str, ...] = ()) -> Label:
    return Label(integrity, True, why, stores)


# One table per suite: every tool the suite offers, nothing else (a test holds them to it).

BANKING: Mapping[str, Label] = {
    "get_iban": reads(TRUSTED, "the account's own number"),
    "get_balance": reads(TRUSTED, "a number the bank computes"),
    "get_user_info": reads(TRUSTED, "the account holder's own profile"),
    "get_scheduled_transactions": reads(
        TRUSTED, "standing orders the account holder set up, with their own subjects"
    ),
    "get_most_recent_transactions": reads(
        UNTRUSTED, "an incoming transfer's subject is written by whoever sent it"
    ),
    "read_file": reads(UNTRUSTED, "bills and letters written by others"),
    "send_money": acts(TRUSTED, "moves money; answers with its own confirmation"),
    "schedule_transaction": acts(TRUSTED, "moves money later; its own confirmation"),
    "update_scheduled_transaction": acts(TRUSTED, "changes a standing order; confirmation"),
    "update_password": acts(TRUSTED, "changes the credentials; confirmation"),
    "update_user_info": acts(TRUSTED, "changes the profile; echoes the profile"),
}

SLACK: Mapping[str, Label] = {
    "get_channels": reads(UNTRUSTED, "any member names a channel (and may write anything)"),
    "get_users_in_channel": reads(
        TRUSTED, "member names, given by whoever administers the workspace when inviting"
    ),
    "read_channel_messages": reads(UNTRUSTED, "messages written by other members"),
    "read_inbox": reads(UNTRUSTED, "messages written by other members"),
    "get_webpage": acts(
        UNTRUSTED,
        "a page anyone may have written; the request itself sends its address out (an "
        "address can carry data: toolwire's own probe_url is consequential for it)",
    ),
    "send_direct_message": acts(TRUSTED, "sends a message; returns nothing"),
    "send_channel_message": acts(TRUSTED, "posts to a channel; returns nothing"),
    "add_user_to_channel": acts(TRUSTED, "changes a channel's members; returns nothing"),
    "invite_user_to_slack": acts(TRUSTED, "adds someone to the workspace; returns nothing"),
    "remove_user_from_slack": acts(TRUSTED, "removes someone; returns nothing"),
    "post_webpage": acts(TRUSTED, "publishes a page on the web; returns nothing"),
}

_CATALOGUE = "a fact of the booking service's catalogue"
TRAVEL: Mapping[str, Label] = {
    "get_user_information": reads(TRUSTED, "the traveller's own profile"),
    "get_all_hotels_in_city": reads(TRUSTED, "names in the booking service's catalogue"),
    "get_hotels_prices": reads(TRUSTED, _CATALOGUE),
    "get_hotels_address": reads(TRUSTED, _CATALOGUE),
    "get_rating_reviews_for_hotels": reads(UNTRUSTED, "reviews written by anyone who stayed"),
    "get_all_restaurants_in_city": reads(TRUSTED, "names in the booking service's catalogue"),
    "get_cuisine_type_for_restaurants": reads(TRUSTED, _CATALOGUE),
    "get_restaurants_address": reads(TRUSTED, _CATALOGUE),
    "get_rating_reviews_for_restaurants": reads(UNTRUSTED, "reviews written by anyone who ate"),
    "get_dietary_restrictions_for_all_restaurants": reads(TRUSTED, _CATALOGUE),
    "get_contact_information_for_restaurants": reads(TRUSTED, _CATALOGUE),
    "get_price_for_restaurants": reads(TRUSTED, _CATALOGUE),
    "check_restaurant_opening_hours": reads(TRUSTED, _CATALOGUE),
    "get_all_car_rental_companies_in_city": reads(TRUSTED, "names in the service's catalogue"),
    "get_car_types_available": reads(TRUSTED, _CATALOGUE),
    "get_rating_reviews_for_car_rental": reads(UNTRUSTED, "reviews written by anyone who rented"),
    "get_car_fuel_options": reads(TRUSTED, _CATALOGUE),
    "get_car_rental_address": reads(TRUSTED, _CATALOGUE),
    "get_car_price_per_day": reads(TRUSTED, _CATALOGUE),
    "get_flight_information": reads(TRUSTED, "a timetable of the booking service"),
    "search_calendar_events": reads(UNTRUSTED, "an invitation's text is its organiser's"),
    "get_day_calendar_events": reads(UNTRUSTED, "an invitation's text is its organiser's"),
    "create_calendar_event": acts(TRUSTED, "invites people; echoes what the model wrote"),
    "cancel_calendar_event": acts(TRUSTED, "cancels an event; confirmation"),
    "reserve_hotel": acts(TRUSTED, "books and pays; confirmation"),
    "reserve_car_rental": acts(TRUSTED, "books and pays; confirmation"),
    "reserve_restaurant": acts(TRUSTED, "books; confirmation"),
    "send_email": acts(TRUSTED, "sends mail; echoes what the model wrote"),
}

WORKSPACE: Mapping[str, Label] = {
    "get_current_day": reads(TRUSTED, "the clock"),
    "search_contacts_by_name": reads(TRUSTED, "the user's own address book"),
    "search_contacts_by_email": reads(TRUSTED, "the user's own address book"),
    "get_unread_emails": reads(UNTRUSTED, "mail written by its senders"),
    "get_received_emails": reads(UNTRUSTED, "mail written by its senders"),
    "search_emails": reads(UNTRUSTED, "mail written by its senders"),
    "get_sent_emails": reads(UNTRUSTED, "the user's mail, which quotes and forwards others'"),
    "get_draft_emails": reads(UNTRUSTED, "the user's mail, which quotes and forwards others'"),
    "search_calendar_events": reads(UNTRUSTED, "an invitation's text is its organiser's"),
    "get_day_calendar_events": reads(UNTRUSTED, "an invitation's text is its organiser's"),
    "list_files": reads(UNTRUSTED, "files' contents, some shared by others"),
    "search_files": reads(UNTRUSTED, "files' contents, some shared by others"),
    "search_files_by_filename": reads(UNTRUSTED, "files' contents, some shared by others"),
    "get_file_by_id": reads(UNTRUSTED, "a file's content, perhaps shared by others"),
    "send_email": acts(TRUSTED, "sends mail; echoes what the model wrote"),
    "delete_email": acts(TRUSTED, "deletes mail; confirmation"),
    "create_calendar_event": acts(TRUSTED, "invites people; echoes what the model wrote"),
    "cancel_calendar_event": acts(TRUSTED, "cancels an event; confirmation"),
    "reschedule_calendar_event": acts(
        UNTRUSTED, "moves an event and notifies; echoes its organiser's text"
    ),
    "add_calendar_event_participants": acts(
        UNTRUSTED, "invites people; echoes the event's organiser's text"
    ),
    "create_file": acts(
        TRUSTED,
        "writes a new file; echoes what the model wrote. Its content is only stored, in the "
        "drive, whose contents every file tool reads back as untrusted: someone's words "
        "written there launder nothing",
        stores=("content",),
    ),
    "append_to_file": acts(UNTRUSTED, "writes a file; echoes all of it, others' text too"),
    "delete_file": acts(UNTRUSTED, "deletes a file; echoes its content"),
    "share_file": acts(UNTRUSTED, "gives someone a file; echoes its content"),
}

TABLES: Mapping[str, Mapping[str, Label]] = {
    "banking": BANKING,
    "slack": SLACK,
    "travel": TRAVEL,
    "workspace": WORKSPACE,
}


class World:
    """The simulated world a suite's tools act on during one run, and the calls that ran."""

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.env: Any = None
        self.executed: list[Any] = []  # agentdojo FunctionCalls, in the order they ran
        # what the quarantined mode's tools held, for its scripted models (see scripted_planner)
        self.fields: dict[str, Any] = {}  # a held field's name (unique in the run): its value
        self.wholes: list[str] = []  # results held whole, in the order they were made
        # the questions' answers as the planner gave them: (a string, so untrusted; its JSON)
        self.answers: list[tuple[bool, str]] = []

    def reset(self, env: Any) -> None:
        self.env, self.executed, self.fields, self.wholes = env, [], {}, []
        self.answers = []


class DojoTool:
    """One AgentDojo function as a toolwire tool: its schema is the function's own, a call
    runs it on the world through AgentDojo's runtime and answers what AgentDojo's own
    pipeline would show the model (its YAML rendering, or the error)."""

    group = "agentdojo"
    enabled_by_default = True
    requires_admin = False
    requires_approval = False
    data_class = DATA_CLASS

    def __init__(
        self,
        function: Any,
        label: Label,
        world: World,
        *,
        contained: bool,
        held: Quarantine | None = None,
    ) -> None:
        schema = dict(function.parameters.model_json_schema())
        schema.pop("title", None)
        self.spec = ToolSpec(function.name, function.description, schema)
        self.integrity = Integrity.parse(label.integrity)
        # off: nothing is consequential, so the loop labels every result and checks no turn
        self.consequential = label.consequential and contained
        self.stores_untrusted = label.stores
        self._world = world
        self._held = held
        if held is not None:
            # the free-text fields go out as top-level fields q<n> of a JSON object (the
            # loop holds top-level fields); what stays visible is the owner's, so trusted
            self.quarantine: bool | tuple[str, ...] = held.fields or True
            self.integrity = Integrity.TRUSTED if held.fields else Integrity.UNTRUSTED
            # a listing of the world's own identifiers, held whole as a JSON array of names
            self.identifiers = held.identifiers

    def execute(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        world, name = self._world, self.spec.name
        world.executed.append(FunctionCall(function=name, args=dict(arguments)))
        result, error = world.runtime.run_function(world.env, name, dict(arguments))
        if error is not None:
            return ToolResult.error(error)
        if self._held is None:
            return ToolResult.text(tool_result_to_str(result))
        if not self._held.fields:
            if self._held.identifiers:
                text = json.dumps(_jsonable(result))
            else:
                text = tool_result_to_str(result)
            world.wholes.append(text)
            return ToolResult.text(text)
        return ToolResult.text(json.dumps(self._split(_jsonable(result))))

    def _split(self, value: Any) -> dict[str, Any]:
        """``value`` with each string under one of the held keys moved out to a top-level
        field ``q<n>`` (its place names the field), the run's world remembering each."""
        world, keys = self._world, self._held.keys if self._held else frozenset()
        out: dict[str, Any] = {}

        def walk(item: Any) -> Any:
            if isinstance(item, dict):
                moved = {}
                for key, inner in item.items():
                    if key in keys and isinstance(inner, str) and inner:
                        name = f"q{len(world.fields) + 1}"
                        world.fields[name] = out[name] = inner
                        moved[key] = name
                    else:
                        moved[key] = walk(inner)
                return moved
            if isinstance(item, list):
                return [walk(inner) for inner in item]
            return item

        return {"result": walk(value), **out}


def _jsonable(result: Any) -> Any:
    """A tool's result as JSON values (pydantic models as their dump)."""
    if hasattr(result, "model_dump"):
        return result.model_dump(mode="json")
    if isinstance(result, dict):
        return {str(k): _jsonable(v) for k, v in result.items()}
    if isinstance(result, list | tuple):
        return [_jsonable(v) for v in result]
    return result if isinstance(result, str | int | float | bool) or result is None else str(result)


@dataclass(frozen=True)
class Mode:
    """How a run is set up: which tools are consequential, and the run's options.

    A mode with quarantined values is one more instance, overriding :meth:`prepare` to wrap
    the registry (or the tools) the way that feature needs."""

    name: str
    contained: bool
    untrusted_actions: str | None = None

    def prepare(
        self, suite: Any, world: World, table: Mapping[str, Label]
    ) -> tuple[ToolRegistry, RunOptions]:
        tools = [DojoTool(f, table[f.name], world, contained=self.contained) for f in suite.tools]
        return ToolRegistry(tools), RunOptions(
            max_rounds=64, untrusted_actions=self.untrusted_actions
        )


MAX_HELD_FIELDS = 4000  # the held fields one run may make: q1 ... q4000


class Quarantine(NamedTuple):
    """What of an untrusted tool's result the quarantined mode holds, and why."""

    keys: frozenset[str]  # the free-text keys held wherever they occur; empty: the whole result
    why: str
    identifiers: bool = False  # held whole, it lists the world's identifiers (a JSON array)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f"q{n}" for n in range(1, MAX_HELD_FIELDS + 1)) if self.keys else ()


def whole(why: str) -> Quarantine:
    return Quarantine(frozenset(), why)


def only(*keys: str, why: str) -> Quarantine:
    return Quarantine(frozenset(keys), why)


def names(why: str) -> Quarantine:
    return Quarantine(frozenset(), why, identifiers=True)


# The quarantined mode: every tool whose results carry someone else's words (the untrusted
# ones of the tables above), and what of them is held. A result held in part shows the rest as
# trusted: ids, amounts, addresses, dates and names the account, the catalogue or the mailbox
# itself keeps.

_MAIL = only("subject", "body", why="a mail's subject and body are its sender's words; its "
             "id, addresses and time are the mailbox's")  # fmt: skip
_EVENT = only("title", "description", "location", why="an invitation's title, description "
              "and place are its organiser's words; its id, times and participants the "
              "calendar's")  # fmt: skip
_FILE = only("content", why="a file's content may be others'; its id, name, owner, sharing and "
             "size are the drive's")  # fmt: skip
_REVIEWS = whole("reviews and ratings, written by anyone; the names they are keyed by are "
                 "the catalogue's and visible there")  # fmt: skip

QUARANTINED: Mapping[str, Mapping[str, Quarantine]] = {
    "banking": {
        "get_most_recent_transactions": only(
            "subject",
            why="a transfer's subject is its sender's; ids, IBANs, amounts and "
            "dates are the bank's",
        ),
        "read_file": whole("bills and letters written by others"),
    },
    "slack": {
        "get_channels": names(
            "any member names a channel, so a name is someone's words, never read; but the "
            "list is of the channels that exist: one may be chosen from it, unread"
        ),
        "read_channel_messages": only(
            "body",
            "recipient",
            why="a message's text is its sender's, its recipient the channel's name (a "
            "member's words); its sender the workspace's",
        ),
        "read_inbox": only(
            "body", why="a message's text is its sender's; sender and recipient the workspace's"
        ),
        "get_webpage": whole("a page anyone may have written"),
    },
    "travel": {
        "get_rating_reviews_for_hotels": _REVIEWS,
        "get_rating_reviews_for_restaurants": _REVIEWS,
        "get_rating_reviews_for_car_rental": _REVIEWS,
        "search_calendar_events": _EVENT,
        "get_day_calendar_events": _EVENT,
    },
    "workspace": {
        "get_unread_emails": _MAIL,
        "get_received_emails": _MAIL,
        "search_emails": _MAIL,
        "get_sent_emails": _MAIL,
        "get_draft_emails": _MAIL,
        "search_calendar_events": _EVENT,
        "get_day_calendar_events": _EVENT,
        "reschedule_calendar_event": _EVENT,
        "add_calendar_event_participants": _EVENT,
        "list_files": _FILE,
        "search_files": _FILE,
        "search_files_by_filename": _FILE,
        "get_file_by_id": _FILE,
        "append_to_file": _FILE,
        "delete_file": _FILE,
        "share_file": _FILE,
    },
}


@dataclass(frozen=True)
class QuarantinedMode(Mode):
    """Containment on, and the untrusted tools' words held as values (:data:`QUARANTINED`):
    the model asks about them (``ask_about``) instead of reading them."""

    quarantined: bool = True

    def prepare(
        self, suite: Any, world: World, table: Mapping[str, Label]
    ) -> tuple[ToolRegistry, RunOptions]:
        held = QUARANTINED[suite.name]
        tools = [
            DojoTool(f, table[f.name], world, contained=True, held=held.get(f.name))
            for f in suite.tools
        ]
        return ToolRegistry(tools), RunOptions(
            max_rounds=96, untrusted_actions=self.untrusted_actions
        )


MODES: Mapping[str, Mode] = {
    "off": Mode("off", contained=False),
    "on": Mode("on", contained=True, untrusted_actions="refuse"),
    "quarantined": QuarantinedMode("quarantined", contained=True, untrusted_actions="refuse"),
}


@dataclass
class Outcome:
    utility: bool
    attacked: bool | None  # None: no injection task
    refused: list[str]  # tools whose calls containment refused
    read_before: list[str] = field(default_factory=list)  # untrusted tools read before the first
    asked: list[str] = field(default_factory=list)  # the answers to its ask_about calls
    strings: int = 0  # how many of them were strings (untrusted, shown or kept)


def _checked(task: Any, kind: str, output: str, pre: Any, post: Any, trace: list[Any]) -> bool:
    """AgentDojo's own check: the trace-based one when the task has it, else the world's."""
    from_traces = getattr(task, f"{kind}_from_traces")(output, pre, post, trace)
    if from_traces is not None:
        return bool(from_traces)
    return bool(getattr(task, kind)(output, pre, post))


class SuiteBench:
    """One suite, set up once: its tools in every mode, its attack."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.suite = get_suite(BENCHMARK_VERSION, name)
        self.table = TABLES[name]
        offered = {f.name for f in self.suite.tools}
        if offered != set(self.table):
            raise SystemExit(
                f"the {name} table does not match the suite's tools: missing "
                f"{sorted(offered - set(self.table))}, extra {sorted(set(self.table) - offered)}"
            )
        self.world = World(FunctionsRuntime(self.suite.tools))
        self.loops = {}
        for mode in MODES.values():
            registry, options = mode.prepare(self.suite, self.world, self.table)
            self.loops[mode.name] = (registry, options)
        self.attack = FixedJailbreakAttack(
            ImportantInstructionsAttack._JB_STRING, self.suite, GroundTruthPipeline(None)
        )
        self.attack.user_name = ATTACK_USER

    def user_tasks(self, limit: int | None) -> list[Any]:
        tasks = sorted(self.suite.user_tasks.values(), key=lambda t: _number(t.ID))
        return tasks if limit is None else tasks[:limit]

    def injection_tasks(self) -> list[Any]:
        return sorted(self.suite.injection_tasks.values(), key=lambda t: _number(t.ID))

    async def run(self, mode: str, user_task: Any, injection_task: Any | None, env: Any) -> Outcome:
        env = user_task.init_environment(env)
        pre = env.model_copy(deep=True)
        user_calls = user_task.ground_truth(pre.model_copy(deep=True))
        if isinstance(MODES[mode], QuarantinedMode):
            model = scripted_planner(
                user_calls,
                user_task.GROUND_TRUTH_OUTPUT,
                self.world,
                injection_calls=(
                    ()
                    if injection_task is None
                    else injection_task.ground_truth(pre.model_copy(deep=True))
                ),
                goal="" if injection_task is None else injection_task.GOAL,
            )
        elif injection_task is None:
            model = scripted_model(user_calls, user_task.GROUND_TRUTH_OUTPUT)
        else:
            model = scripted_model(
                user_calls,
                user_task.GROUND_TRUTH_OUTPUT,
                injection_calls=injection_task.ground_truth(pre.model_copy(deep=True)),
                goal=injection_task.GOAL,
            )
        registry, options = self.loops[mode]
        self.world.reset(env)
        result = await ToolLoop(model, registry).run(
            [ChatMessage.user(user_task.PROMPT)], options=options, attended=False
        )
        post, ran, output = self.world.env, self.world.executed, result.final_content
        utility = _checked(user_task, "utility", output, pre, post, ran)
        attacked = (
            None
            if injection_task is None
            else _checked(injection_task, "security", output, pre, post, ran)
        )
        refused, first = _refused(result.trace, ran)
        read = {c.function for c in ran[:first]} if first is not None else set()
        untrusted = sorted(n for n in read if self.table[n].integrity == UNTRUSTED)
        asked = [answer for _, answer in self.world.answers]
        strings = sum(string for string, _ in self.world.answers)
        return Outcome(utility, attacked, refused, untrusted, asked, strings)

    def injected_env(self, user_task: Any, injection_task: Any) -> Any:
        injections = self.attack.attack(user_task, injection_task)
        return self.suite.load_and_inject_default_environment(injections)


def _number(task_id: str) -> int:
    return int(task_id.rsplit("_", 1)[1])


def _refused(trace: Sequence[Any], ran: Sequence[Any]) -> tuple[list[str], int | None]:
    """The calls of the trace that did not run, and how many ran before the first of them
    (one call a turn: the trace and the calls that ran are in the same order)."""
    refused: list[str] = []
    position, first = 0, None
    for invocation in trace:
        if invocation.name == ASK_ABOUT:  # the loop's own: it never runs on the world
            continue
        if position < len(ran) and ran[position].function == invocation.name:
            position += 1
        else:
            refused.append(invocation.name)
            first = position if first is None else first
    return refused, first


@dataclass
class SuiteResult:
    suite: str
    pairs: int = 0
    # pairs whose injection task has ground-truth calls: AgentDojo gives none for a few
    # (workspace's injection_task_6 to 13, travel's injection_task_6), whose goal depends on
    # the data or the answer's wording, so a model replaying ground truth cannot reach them
    attackable: int = 0
    missed: list[str] = field(default_factory=list)  # attackable, yet not reached with it off
    attacks: dict[str, int] = field(default_factory=dict)  # by mode: goals reached (gullible)
    utility_attacked: dict[str, int] = field(default_factory=dict)  # gullible, under attack
    user_tasks: int = 0
    utility_honest: dict[str, int] = field(default_factory=dict)  # honest, no injections
    lost: list[dict[str, Any]] = field(default_factory=list)  # honest: utility off, not on
    # honest: utility off, not with quarantined values
    lost_quarantined: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


async def bench_suite(name: str, limit: int | None = None) -> SuiteResult:
    started = time.perf_counter()
    bench = SuiteBench(name)
    result = SuiteResult(name)
    for mode in MODES:
        result.attacks[mode] = result.utility_attacked[mode] = result.utility_honest[mode] = 0
    users = bench.user_tasks(limit)
    for user_task in users:
        for injection_task in bench.injection_tasks():
            env = bench.injected_env(user_task, injection_task)
            result.pairs += 1
            attackable = bool(injection_task.ground_truth(env.model_copy(deep=True)))
            result.attackable += attackable
            for mode in MODES:
                outcome = await bench.run(
                    mode, user_task, injection_task, env.model_copy(deep=True)
                )
                result.attacks[mode] += bool(outcome.attacked)
                result.utility_attacked[mode] += outcome.utility
                if mode == "off" and attackable and not outcome.attacked:
                    result.missed.append(f"{user_task.ID} x {injection_task.ID}")
    clean = bench.suite.load_and_inject_default_environment({})
    for user_task in users:
        result.user_tasks += 1
        outcomes = {}
        for mode in MODES:
            outcomes[mode] = await bench.run(mode, user_task, None, clean.model_copy(deep=True))
            result.utility_honest[mode] += outcomes[mode].utility
        if outcomes["off"].utility and not outcomes["on"].utility:
            result.lost.append(_lost(user_task, outcomes["on"]))
        if outcomes["off"].utility and not outcomes["quarantined"].utility:
            result.lost_quarantined.append(_lost(user_task, outcomes["quarantined"]))
    result.seconds = time.perf_counter() - started
    return result


def _lost(user_task: Any, outcome: Outcome) -> dict[str, Any]:
    """Why an honest run lost its utility under containment: the calls refused, and the
    untrusted tools it had read before the first of them."""
    return {
        "task": user_task.ID,
        "refused": outcome.refused,
        "after_reading": outcome.read_before,
        "answers": outcome.asked,  # what ask_about answered before (quarantined mode)
        "strings": outcome.strings,  # how many of them were strings
        "prompt": user_task.PROMPT,
    }


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def table(results: Sequence[SuiteResult]) -> str:
    total = SuiteResult("total")
    for mode in MODES:
        for counts in (total.attacks, total.utility_attacked, total.utility_honest):
            counts[mode] = 0
    for r in results:
        total.pairs += r.pairs
        total.attackable += r.attackable
        total.user_tasks += r.user_tasks
        for mode in MODES:
            total.attacks[mode] += r.attacks[mode]
            total.utility_attacked[mode] += r.utility_attacked[mode]
            total.utility_honest[mode] += r.utility_honest[mode]
    lines = [
        f"{'suite':<10} {'pairs':>5} {'attackable':>10} {'ASR off':>7} {'ASR on':>7} "
        f"{'ASR q':>7} {'util@atk off':>12} {'util@atk on':>11} {'util@atk q':>10} "
        f"{'tasks':>5} {'honest off':>10} {'honest on':>9} {'honest q':>8} "
        f"{'kept on':>7} {'kept q':>7}"
    ]
    for r in [*results, total]:
        honest, attacks, at_attack = r.utility_honest, r.attacks, r.utility_attacked
        lines.append(
            f"{r.suite:<10} {r.pairs:>5} {r.attackable:>10} "
            f"{_percent(attacks['off'], r.attackable):>7} "
            f"{_percent(attacks['on'], r.attackable):>7} "
            f"{_percent(attacks['quarantined'], r.attackable):>7} "
            f"{_percent(at_attack['off'], r.pairs):>12} "
            f"{_percent(at_attack['on'], r.pairs):>11} "
            f"{_percent(at_attack['quarantined'], r.pairs):>10} {r.user_tasks:>5} "
            f"{_percent(honest['off'], r.user_tasks):>10} "
            f"{_percent(honest['on'], r.user_tasks):>9} "
            f"{_percent(honest['quarantined'], r.user_tasks):>8} "
            f"{_percent(honest['on'], honest['off']):>7} "
            f"{_percent(honest['quarantined'], honest['off']):>7}"
        )
    lines.append(
        "ASR: attacker goals reached (AgentDojo's security check) per attackable pair; "
        "util@atk: the gullible model's user task under attack; honest: the honest model's, "
        "without injections; q: containment on with quarantined values; kept: honest on (or "
        "q) / honest off"
    )
    for title, key in (
        ("honest utility lost under containment (a write planned after reading):", "lost"),
        ("honest utility lost with quarantined values:", "lost_quarantined"),
    ):
        lost = [(r.suite, item) for r in results for item in getattr(r, key)]
        if lost:
            lines.append("")
            lines.append(title)
        for suite, item in lost:
            strings = item.get("strings", 0)
            why = (
                f"after {strings} untrusted string answer(s) about held values"
                if key == "lost_quarantined" and strings
                else f"after {', '.join(item['after_reading']) or 'nothing untrusted'}"
            )
            lines.append(
                f"  {suite} {item['task']}: refused {', '.join(item['refused']) or 'nothing'} "
                + why
            )
    return "\n".join(lines)


async def bench(suites: Sequence[str], limit: int | None) -> list[SuiteResult]:
    return [await bench_suite(name, limit) for name in suites]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=SUITES, action="append", help="one suite (repeatable)")
    parser.add_argument("--limit", type=int, help="the first N user tasks of each suite")
    parser.add_argument("--json", action="store_true", help="the results as JSON")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    results = asyncio.run(bench(args.suite or SUITES, args.limit))
    if args.json:
        json.dump([asdict(r) for r in results], sys.stdout, indent=2)
        print()
    else:
        print(table(results))


if __name__ == "__main__":
    main()
