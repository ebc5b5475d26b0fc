"""The tool loop: a resumable function over a frozen :class:`~toolwire.loop.state.RunState`.

Layers, each with one concern: ``run`` (offer tools, build the first state) and ``resume``
(apply a person's decision to a paused turn) -> ``advance`` (the round cap and synthesis) ->
one provider call -> pause the whole turn, or run its calls (as jobs, :mod:`toolwire.loop.jobs`;
run by :mod:`toolwire.loop.calls` and :mod:`toolwire.loop.turn`: concurrently, recorded in the
model's order) -> the seam (:mod:`toolwire.loop.seam`).

Invariants:
- The only tool output appended to the conversation is the bounded ``ToolResult.content``,
  through ``ChatMessage.tool_result``. Artifacts go to the trace only.
- A turn that needs a person pauses before any of its calls executes; the result then carries
  the paused state, and nothing of that turn has run.
- Resuming re-checks the gate for every pending call, and what each approved call's preview was
  computed on (:mod:`toolwire.loop.basis`): when that changed, nothing of the turn runs and it waits
  again on fresh previews, or the call fails, as its tool declares. The round cap counts over
  every segment.
- Every request is first fitted to the model's context window (:mod:`toolwire.loop.window`): old
  exchanges leave the conversation whole, or the run ends ``context_full`` without the call.
- A loop with a :class:`Checkpoint` (a queued run's worker) hands it every call of a turn to
  wrap and the state after every completed round; without one, nothing of that runs.
- What a segment may call, and its tools' traits, are worked out once when it starts
  (:mod:`toolwire.loop.offer`); where a synchronous call runs follows the seam's one rule
  (:func:`toolwire.loop.seam.may_block_loop`): ``exclusive`` says whether the run's event loop
  runs nothing else (by default, whether the segment's task is the loop's only one).
- A round makes one new state, when its calls are done (or when it ends the run).
- Every call's result is labelled as it enters the conversation, and the state's provenance
  says what entered (:mod:`toolwire.policy.containment`); a turn of a run that offers a
  consequential tool is checked against it before any of its calls runs: a held call pauses
  the turn for approval, a refused one is answered with the seam's text and never runs.
- A segment offering a quarantining tool, or of a run holding values, runs every turn through
  :mod:`toolwire.loop.holding` (handles replaced before a call, results held after it, questions
  asked); any other run's calls take none of that path.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from toolwire.core import egress
from toolwire.core.egress import EgressLimit
from toolwire.core.lifecycle import TerminationReason
from toolwire.core.messages import ChatMessage, ToolCall, ToolSpec, assistant_turn, tool_message
from toolwire.core.output import Checked, OutputSchema
from toolwire.core.trust import TrustZone
from toolwire.loop import remote_calls
from toolwire.loop.basis import recheck
from toolwire.loop.calls import Checkpoint, recorded, run_calls
from toolwire.loop.contain import held_in_turn
from toolwire.loop.egress_pause import decided as egress_decided
from toolwire.loop.egress_pause import stopped_or_waiting
from toolwire.loop.endings import (
    Ending,
    LoopResult,
    Spent,
    answered,
    ask_again,
    check_answer,
    continuation,
    ending,
    result_of,
)
from toolwire.loop.fitting import fitted_to
from toolwire.loop.holding import with_questions
from toolwire.loop.jobs import check_choice, decided_jobs, refused_jobs, round_choice, turn_jobs
from toolwire.loop.live import LiveTurn, live_turn, with_sampled
from toolwire.loop.metering import measure, measured
from toolwire.loop.offer import Offer
from toolwire.loop.seam import Invoked, Seam, sole_task
from toolwire.loop.state import Contained, Progress, RunState
from toolwire.loop.suspension import (
    Answer,
    plan,
    preview_again,
    running,
    scan,
    stale_answers,
)
from toolwire.loop.turn import Job
from toolwire.loop.window import (
    Window,
    calibrated,
    estimated_usage,
    spec_tokens,
    window_for,
)
from toolwire.policy.charter import Charter, ProviderRef, in_scope, run_zone, submit
from toolwire.policy.containment import (
    Labels,
    overrides_of,
    policy_of,
    quarantine_by,
)
from toolwire.policy.options import DEFAULT_MAX_ROUNDS, MAX_ROUNDS, RunOptions
from toolwire.policy.pricing import cost_of, model_of, pricing_family
from toolwire.policy.privacy import PrivacyLevel
from toolwire.policy.trace import RunTrace, ToolInvocation
from toolwire.providers.base import (
    CompletionRequest,
    CompletionResponse,
    Provider,
    ToolChoice,
    checked_provider,
    new_request,
    session_of,
)
from toolwire.providers.fallback import chain_of
from toolwire.tools.api import ToolContext
from toolwire.tools.policy import ToolPolicy
from toolwire.tools.registry import ToolRegistry

__all__ = ["DEFAULT_MAX_ROUNDS", "MAX_ROUNDS", "Checkpoint", "LoopResult", "RunOptions",
           "TerminationReason", "ToolLoop"]  # fmt: skip

log = logging.getLogger("toolwire.loop")
_clock = time.perf_counter
_new = tuple.__new__  # a NamedTuple from its fields in order, without its ``__new__``'s frame
_NO_NAMES: frozenset[str] = frozenset()
_FREE: tuple[None, None] = (None, None)  # a turn the run's containment neither holds nor refuses


class ToolLoop:
    """Runs a conversation against a provider, executing tool calls through the seam."""

    def __init__(
        self,
        provider: Provider,
        registry: ToolRegistry,
        *,
        policy: ToolPolicy | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        self.provider = checked_provider(provider)
        # A provider that tries several (a fallback chain) reports each failed attempt.
        self._chained = getattr(provider, "reports_failures", False) is True
        self.registry = registry
        self.policy = policy or ToolPolicy(registry)
        self.seam = Seam(registry)
        self.checkpoint = checkpoint

    def run_sync(
        self,
        messages: Sequence[ChatMessage],
        *,
        context: ToolContext | None = None,
        options: RunOptions | None = None,
        trace: RunTrace | None = None,
    ) -> LoopResult:
        """Blocking facade over :meth:`run`, for scripts and the command line: the run has
        its event loop to itself, and no person is taken to be there to approve a call the
        run's containment holds (it is refused, unless ``options`` ask for approval)."""
        return asyncio.run(self.run(messages, context=context, options=options, trace=trace,
                                    exclusive=True, attended=False))  # fmt: skip

    async def run(
        self,
        messages: Sequence[ChatMessage],
        *,
        context: ToolContext | None = None,
        options: RunOptions | None = None,
        trace: RunTrace | None = None,
        run_id: str = "",
        charter: Charter | None = None,
        exclusive: bool | None = None,
        attended: bool = True,
    ) -> LoopResult:
        """Run ``messages`` to an end. ``charter`` goes with the run's state (the runtime's
        run has one; a bare loop's is made from ``context`` and ``options``). ``exclusive``:
        whether the event loop runs nothing but this run (None: whether this task is its only
        one; see :func:`toolwire.loop.seam.may_block_loop`). ``attended``: whether a person can
        decide on a call the run's containment holds (else it is refused: see
        :func:`toolwire.policy.containment.policy_of`)."""
        exclusive = sole_task() if exclusive is None else exclusive
        context = context or ToolContext()
        options = options or RunOptions()
        if options.fallback:  # the run's provider and its fallback, as one chain
            chained = ToolLoop(chain_of(self.provider, options.fallback), self.registry,
                               policy=self.policy, checkpoint=self.checkpoint)  # fmt: skip
            return await chained.run(messages, context=context,
                                     options=replace(options, fallback=()), trace=trace,
                                     run_id=run_id, charter=charter,
                                     exclusive=exclusive)  # fmt: skip
        trace = trace if trace is not None else RunTrace(keeps=False)  # nobody can read it
        offered, refusals = self._offered(options, context)
        check_choice(options.tool_choice, offered)
        charter = charter or self._bare_charter(context, options)
        context = context.in_zone(charter.trust_zone)  # what its tools may show is the run's
        state = RunState(messages=tuple(messages), options=options, offered=offered,
                         charter=charter)  # fmt: skip
        if options.dry_run:
            trace.record_request(1, state.messages, self._names(offered), refusals)
            return result_of(state, "", False, TerminationReason.DRY_RUN, iterations=0)
        offer = self._offer(offered, options, context, exclusive, attended=attended)
        return await self._advance(state, offer, context=context, trace=trace,
                                   refusals=refusals, run_id=run_id)  # fmt: skip

    async def resume(
        self,
        state: RunState,
        *,
        approved: bool = False,
        values: Mapping[str, Any] | None = None,
        context: ToolContext | None = None,
        trace: RunTrace | None = None,
        run_id: str = "",
        exclusive: bool | None = None,
    ) -> LoopResult:
        """Apply a decision to ``state``'s paused turn under the live gate, then go on."""
        exclusive = sole_task() if exclusive is None else exclusive
        pause = state.pause
        if pause is None:
            raise ValueError("this run state is not paused")
        context = context or ToolContext(user=state.user)
        if state.charter is not None:
            context = context.in_zone(state.charter.trust_zone)
        trace = trace if trace is not None else RunTrace(keeps=False)  # nobody can read it
        offered, _ = self._offered(state.options, context)
        if state.charter is not None:  # this process may hold more MCP servers than the run's
            offered = in_scope(state.charter, offered, self.registry)
        if pause.egress is not None:  # not a turn: the request an egress limit held
            going = egress_decided(state, approved=approved)
            if isinstance(going, LoopResult):
                return going
            going = going._replace(offered=offered)
            offer = self._offer(offered, going.options, context, exclusive,
                                holds=bool(going.vault.variables))  # fmt: skip
            measure(trace, offer, going, context, self.seam.knows)  # with the raised allowance
            return await self._advance(going, offer, context=context, trace=trace, run_id=run_id)
        answers = plan(pause, self.registry, offered_then=state.offered, offered_now=offered,
                       approved=approved, values=values)  # fmt: skip
        checked = await self._recheck(state, answers, context, run_id)
        if isinstance(checked, LoopResult):
            return checked
        state = state._replace(pause=None, offered=offered, invocations=())
        offer = self._offer(offered, state.options, context, exclusive,
                            holds=bool(state.vault.variables))  # fmt: skip
        measure(trace, offer, state, context, self.seam.knows)  # its refusals are the runtime's
        jobs = decided_jobs(checked, state.options.max_calls_per_turn, offer, self.registry)
        state = await self._run_jobs(state, trace, state.rounds, jobs, context, offer=offer,
                                     run_id=run_id)  # fmt: skip
        return await self._advance(state, offer, context=context, trace=trace, run_id=run_id)

    async def call(
        self,
        call: ToolCall,
        *,
        offered: frozenset[str],
        context: ToolContext,
        trace: RunTrace,
        options: RunOptions | None = None,
        hold: bool = False,
        run_id: str = "",
        charter: Charter | None = None,
        exclusive: bool | None = None,
    ) -> LoopResult:
        """One call through the seam with no model: a direct call, recorded as round 0.

        With ``hold``, an offered call that needs a person is not executed: the result carries
        the paused state, as a model's turn would (see :mod:`toolwire.runs.held`).
        """
        exclusive = sole_task() if exclusive is None else exclusive
        options = options or RunOptions()
        context = context.in_zone(charter.trust_zone if charter else self._zone(options))
        if hold:
            pause = await scan(self.registry, (call,), offered, context, run_id=run_id, rounds=0)
            if pause is not None:
                charter = charter or self._bare_charter(context, options)
                held = RunState(messages=(), options=options, offered=offered, pause=pause,
                                charter=charter)  # fmt: skip
                return result_of(held, "", False, TerminationReason.SUSPENDED, held)
        started = time.perf_counter()
        invoked = await self.seam.invoke(call, offered, context, inline=exclusive)
        tool = self.registry.get(call.name) if call.name in offered else None
        labels = Labels.of(
            () if tool is None else (tool,), overrides=overrides_of(context.workspace)
        )
        integrity = labels.integrity(call.name, refused=invoked.refused is not None)
        _, invocation = recorded(trace, self.seam, 0, (time.perf_counter() - started) * 1000, call,
                                       invoked, arguments=None, started=started,
                                       integrity=integrity)  # fmt: skip
        state = RunState(messages=(), options=options, offered=offered,
                         invocations=(invocation,))  # fmt: skip
        ran = call.name in offered and call.name in self.registry
        reason = TerminationReason.COMPLETED if ran else TerminationReason.NOT_PERMITTED
        return result_of(state, invoked.result.content, False, reason)

    async def resume_call(
        self,
        state: RunState,
        *,
        approved: bool = False,
        values: Mapping[str, Any] | None = None,
        context: ToolContext,
        trace: RunTrace,
        exclusive: bool | None = None,
    ) -> LoopResult:
        """Apply a decision to a held direct call under the live gate, run it, and end: a
        direct call has no model to go on with."""
        exclusive = sole_task() if exclusive is None else exclusive
        pause = state.pause
        if pause is None:
            raise ValueError("this run state is not paused")
        offered, _ = self._offered(state.options, context)
        if state.charter is not None:  # this process may hold more MCP servers than the run's
            offered = in_scope(state.charter, offered, self.registry)
        answers = plan(pause, self.registry, offered_then=state.offered, offered_now=offered,
                       approved=approved, values=values)  # fmt: skip
        checked = await self._recheck(state, answers, context, "")
        if isinstance(checked, LoopResult):
            return checked
        # A direct call has no run to hold a value for: its caller gets the result as it is.
        offer = replace(self._offer(offered, state.options, context, exclusive), vaulting=False,
                        asks=False)  # fmt: skip
        jobs = decided_jobs(checked, state.options.max_calls_per_turn, offer, self.registry)
        state = state._replace(pause=None, offered=offered, invocations=())
        state = await self._run_jobs(state, trace, 0, jobs, context, offer=offer)
        content = state.invocations[-1].result if state.invocations else ""
        return result_of(state, content, False, TerminationReason.COMPLETED)

    async def _recheck(
        self,
        state: RunState,
        answers: list[tuple[ToolCall, Answer]],
        context: ToolContext,
        run_id: str,
    ) -> list[tuple[ToolCall, Answer]] | LoopResult:
        """``answers`` once what each call about to run was previewed on still holds (a call
        whose tool fails on a stale preview refused); or the turn waiting again on fresh
        previews, nothing of it run (see :mod:`toolwire.loop.basis`)."""
        pause = state.pause
        assert pause is not None
        about_to_run = running(answers, state.options.max_calls_per_turn)
        stale = await recheck(pause, about_to_run, self.registry, context, state.vault)
        if stale.wait:
            again = await preview_again(pause, stale.wait, self.registry, context,
                                        run_id=run_id, rounds=state.rounds,
                                        vault=state.vault)  # fmt: skip
            paused = state._replace(pause=again, invocations=())
            return result_of(paused, "", False, TerminationReason.SUSPENDED, paused)
        return stale_answers(answers, stale) if stale.fail else answers

    async def advance(
        self,
        state: RunState,
        *,
        context: ToolContext,
        trace: RunTrace,
        refusals: Sequence[Mapping[str, str]] = (),
        run_id: str = "",
        exclusive: bool | None = None,
    ) -> LoopResult:
        """Take rounds from ``state`` until an answer, a pause, a budget or the round cap."""
        exclusive = sole_task() if exclusive is None else exclusive
        offer = self._offer(state.offered, state.options, context, exclusive,
                            holds=bool(state.vault.variables))  # fmt: skip
        return await self._advance(state, offer, context=context, trace=trace,
                                   refusals=refusals, run_id=run_id)  # fmt: skip

    async def _advance(
        self,
        state: RunState,
        offer: Offer,
        *,
        context: ToolContext,
        trace: RunTrace,
        refusals: Sequence[Mapping[str, str]] = (),
        run_id: str = "",
    ) -> LoopResult:
        if trace.egress is None:
            measure(trace, offer, state, context, self.seam.knows)
        try:
            return await self._rounds(state, offer, context=context, trace=trace,
                                      refusals=refusals, run_id=run_id)  # fmt: skip
        except EgressLimit as over:  # nothing of the request went out
            log.info("run %s: %s", run_id or "-", over)
            return stopped_or_waiting(over, run_id)

    async def _rounds(  # noqa: PLR0912, PLR0915 (one loop of rounds: its parts are a round's)
        self,
        state: RunState,
        offer: Offer,
        *,
        context: ToolContext,
        trace: RunTrace,
        refusals: Sequence[Mapping[str, str]] = (),
        run_id: str = "",
    ) -> LoopResult:
        async with session_of(self.provider):
            if not state.offered:
                return await self._plain(state, trace, refusals)
            options, specs, names, labels, gate, alone = (state.options, offer.specs,
                offer.spec_names, offer.labels, offer.gate, offer.inline_alone)  # fmt: skip
            window = window_for(options, self.provider, specs)
            price = self._price()
            budgeted = options.max_total_tokens is not None or options.max_cost is not None
            first_choice, later_choice = options.tool_choice, round_choice(options.tool_choice, 2)
            # A turn of one call goes straight to the seam when nothing wraps or counts it.
            direct = (
                self.checkpoint is None
                and not offer.remote
                and not offer.vaulting
                and options.max_calls_per_turn
            )
            output, forced = options.output_schema, False
            keeps, provider, start = trace.keeps, self.provider, self.seam.start
            ledger = trace.egress  # set for the segment (see :meth:`_advance`), or None
            while state.rounds < options.max_rounds:
                round_ = state.rounds + 1
                if window is not None:
                    fitted = fitted_to(state, trace, round_, window)
                    if isinstance(fitted, LoopResult):
                        return fitted
                    state = fitted
                choice = first_choice if round_ == 1 else later_choice
                if keeps:
                    trace.record_request(
                        round_, state.messages, names, refusals if round_ == 1 else (),
                        tool_choice=None if choice == "auto" else choice,
                    )  # fmt: skip
                # what ``_complete`` does, without a coroutine of its own: every round has one
                request = self._request(state, trace, round_, specs, choice, output, forced)
                if ledger is None:
                    started = _clock()
                    response = await provider.complete(request)
                    elapsed_ms, sent = (_clock() - started) * 1000, None
                else:  # a run whose egress is counted
                    response, elapsed_ms, sent = await measured(provider, self._chained, ledger,
                                                                state, request,
                                                                      trace, round_)  # fmt: skip
                response, spent, checked = self._spent(state, trace, round_, specs, response,
                                                       elapsed_ms, True, price, output,
                                                       sent)  # fmt: skip
                calls = response.tool_calls
                ended = None if calls else ending(response)
                if ended is not None:
                    if checked is None or checked.problem is None or forced:
                        return answered(spent.of(state), response, ended, output, checked)
                    forced = True  # asked again, once, to answer in the schema
                    state = spent.of(state, ask_again(response, checked))
                    continue
                if budgeted and spent.over_budget(options):  # before this turn's calls
                    return result_of(spent.of(state), "", True, TerminationReason.BUDGET_EXHAUSTED,
                                     response=response)  # fmt: skip
                if not calls:
                    state = spent.of(state, continuation(response))
                    continue
                assistant = assistant_turn(response.content, calls, response.provider_state)
                held, contained = held_in_turn(calls, state, labels) if labels.sinks else _FREE
                if offer.pausing or held:  # only such a tool, or a held call, can pause
                    paused = await self._scan(calls, state, spent, assistant, context,
                                              run_id=run_id, held=held,
                                              contained=contained)  # fmt: skip
                    if paused is not None:
                        return result_of(paused, "", False, TerminationReason.SUSPENDED, paused)
                # the seam at once: no turn, no coroutine to spare
                if direct and len(calls) == 1 and not contained:
                    call = calls[0]
                    arguments = call.decoded_arguments()
                    started = _clock()
                    invoked = start(call, state.offered, context, arguments, gate,
                                    inline=call.name in alone)  # fmt: skip
                    if not isinstance(invoked, Invoked):
                        invoked = await invoked
                    state = self._one_call(state, trace, round_, call, invoked, arguments=arguments,
                                           started=started, spent=spent, assistant=assistant,
                                           labels=labels)  # fmt: skip
                    continue
                jobs = turn_jobs(calls, options.max_calls_per_turn, offer, self.registry)
                state = await self._run_jobs(state, trace, round_, refused_jobs(jobs, contained),
                                             context, offer=offer, spent=spent,
                                             assistant=assistant, run_id=run_id)  # fmt: skip
            return await self._synthesise(state, trace, specs, window)

    def _one_call(
        self,
        state: RunState,
        trace: RunTrace,
        round_: int,
        call: ToolCall,
        invoked: Invoked,
        *,
        arguments: dict[str, Any] | None,
        started: float,
        spent: Spent,
        assistant: ChatMessage,
        labels: Labels,
    ) -> RunState:
        """The round's new state after a turn of one call, made with no checkpoint to wrap it
        and no remote budget to spend: what :meth:`_run_jobs` does for it, without the turn's
        machinery (most turns)."""
        # the label of what entered the context; None for a call the runtime answered itself
        integrity = None if invoked.refused is not None else labels.labelled.get(call.name)
        if trace.keeps or trace.egress is not None:
            elapsed_ms = (_clock() - started) * 1000
            message, invocation = recorded(trace, self.seam, round_, elapsed_ms, call, invoked,
                                                 arguments=arguments, started=started,
                                                 integrity=integrity)  # fmt: skip
        else:  # what ``recorded`` makes, with nothing to record or count: most runs given no trace
            result = invoked.result
            message = tool_message(call.id, result.content, result.is_error)
            given = call.arguments if arguments is None else arguments
            invocation = _new(ToolInvocation, (call.name, given, result.content, result.is_error,
                                               result.artifacts, call.id))  # fmt: skip
        entered = labels.entered(state.provenance, round_, call.name, integrity)
        # One copy of each, made by concatenation: the conversation grows every round.
        return state.after_round(state.messages + (assistant, message),  # noqa: RUF005
                                 state.invocations + (invocation,), spent,  # noqa: RUF005
                                 state.remote_calls, entered)  # fmt: skip

    async def _scan(
        self,
        calls: Sequence[ToolCall],
        state: RunState,
        spent: Spent,
        assistant: ChatMessage,
        context: ToolContext,
        *,
        run_id: str,
        held: dict[int, str] | None,
        contained: list[Contained] | None,
    ) -> RunState | None:
        """The run paused on this turn (``spent`` and the model's ``assistant`` turn with it),
        if the turn waits for a person (see :func:`toolwire.loop.suspension.scan`); None when
        it may run."""
        pause = await scan(self.registry, calls, state.offered, context, run_id=run_id,
                           rounds=spent.rounds, limit=state.options.max_calls_per_turn,
                           held=held, contained=contained or (),
                           vault=state.vault)  # fmt: skip
        return None if pause is None else spent.of(state, (assistant,))._replace(pause=pause)

    async def _synthesise(
        self, state: RunState, trace: RunTrace, specs: tuple[ToolSpec, ...], window: Window | None
    ) -> LoopResult:
        """At the round cap: one more call in which no tool may be called.

        The tools are still sent, with the choice "none": an API may refuse a history holding
        tool calls when a request defines no tools.
        """
        round_ = state.rounds + 1
        fitted = fitted_to(state, trace, round_, window)
        if isinstance(fitted, LoopResult):
            return fitted
        state = fitted
        trace.record_request(round_, state.messages, tuple(s.name for s in specs),
                             tool_choice="none")  # fmt: skip
        output = state.options.output_schema
        final, spent, checked = await self._complete(state, trace, round_, specs, choice="none",
                                                     count=False, output=output)  # fmt: skip
        ended = ending(final)
        cut = ended is not None and ended.truncated  # cut twice: by the output cap as well
        if checked is not None and checked.problem is not None and not cut:
            return result_of(spent.of(state), final.content, True,
                             TerminationReason.OUTPUT_INVALID, response=final)  # fmt: skip
        reason = ended.reason if cut and ended is not None else TerminationReason.MAX_ITERATIONS
        shaped = None if checked is None or cut else output
        value = None if shaped is None or checked is None else shaped.parse(checked.value)
        return result_of(spent.of(state), final.content, True, reason, response=final,
                         output=value)  # fmt: skip

    async def _plain(
        self, state: RunState, trace: RunTrace, refusals: Sequence[Mapping[str, str]]
    ) -> LoopResult:
        """No tool may be offered: one call. A history with tool calls (a resumed run whose
        tools were all disabled meanwhile) still sends their definitions, with choice "none"."""
        round_ = state.rounds + 1
        specs = tuple(self.registry.specs({c.name for m in state.messages for c in m.tool_calls}))
        choice: ToolChoice = "none" if specs else "auto"
        fitted = fitted_to(state, trace, round_, window_for(state.options, self.provider, specs))
        if isinstance(fitted, LoopResult):
            return fitted
        state = fitted
        trace.record_request(round_, state.messages, (), refusals,
                             tool_choice="none" if specs else None)  # fmt: skip
        output = state.options.output_schema
        response, spent, checked = await self._complete(state, trace, round_, specs,
                                                        choice=choice, output=output)  # fmt: skip
        ended = ending(response) or Ending(TerminationReason.COMPLETED, False)
        if (
            checked is not None
            and checked.problem is not None
            and state.rounds + 1 < (state.options.max_rounds)
        ):  # asked again, once, to answer in the schema
            state = spent.of(state, ask_again(response, checked))
            trace.record_request(round_ + 1, state.messages, (), tool_choice=None)
            response, spent, checked = await self._complete(state, trace, round_ + 1, specs,
                                                            choice=choice, forced=True,
                                                            output=output)  # fmt: skip
            ended = ending(response) or Ending(TerminationReason.COMPLETED, False)
        return answered(spent.of(state), response, ended, output, checked)

    async def _complete(
        self,
        state: RunState,
        trace: RunTrace,
        round_: int,
        specs: tuple[ToolSpec, ...],
        *,
        choice: ToolChoice = "auto",
        count: bool = True,
        price: tuple[str | None, str | None] | None = None,
        forced: bool = False,
        output: OutputSchema | None,
    ) -> tuple[CompletionResponse, Spent, Checked | None]:
        """One provider call, recorded; what the run has spent once it is made, and a final
        answer checked against the run's output schema (None: no schema, or no final answer).
        ``price``: the provider's pricing family and model (:meth:`_price`), when the caller has
        them; ``forced``: the run asks again for an answer in the schema; ``output``: the run's
        output schema (None: any answer)."""
        request = self._request(state, trace, round_, specs, choice, output, forced)
        ledger = trace.egress
        if ledger is None:
            started = _clock()
            response = await self.provider.complete(request)
            elapsed_ms, sent = (_clock() - started) * 1000, None
        else:
            response, elapsed_ms, sent = await measured(self.provider, self._chained, ledger,
                                                        state, request, trace,
                                                              round_)  # fmt: skip
        return self._spent(state, trace, round_, specs, response, elapsed_ms, count, price,
                           output, sent)  # fmt: skip

    def _request(  # noqa: PLR0917 (the loop's own call, in the order it has them)
        self,
        state: RunState,
        trace: RunTrace,
        round_: int,
        specs: tuple[ToolSpec, ...],
        choice: ToolChoice,
        output: OutputSchema | None,
        forced: bool,
    ) -> CompletionRequest:
        """The request of round ``round_`` (see :meth:`_complete`)."""
        options = state.options
        failures = trace.failure_sink(round_) if self._chained and trace.keeps else None
        return new_request(state.messages, specs, choice, options.temperature,
                           options.max_tokens, options.reasoning, options.capture_raw,
                           options.stream, trace.delta_sink(round_),
                           state.dropped_turns, output, forced, failures)  # fmt: skip

    def _spent(  # noqa: PLR0917 (the loop's own call, in the order it has them)
        self,
        state: RunState,
        trace: RunTrace,
        round_: int,
        specs: tuple[ToolSpec, ...],
        response: CompletionResponse,
        elapsed_ms: float,
        count: bool,
        price: tuple[str | None, str | None] | None,
        output: OutputSchema | None,
        sent: egress.Sent | None,
    ) -> tuple[CompletionResponse, Spent, Checked | None]:
        """The provider's answer to round ``round_``'s request, which took ``elapsed_ms`` and
        carried ``sent`` of tool output: recorded, with what the run has spent and the answer
        checked (see :meth:`_complete`)."""
        if not response.usage.known:  # budgets count an estimate; the step says it is one
            turn = ChatMessage.assistant(response.content, response.tool_calls)
            tools = sum(spec_tokens(s) for s in specs)
            response = replace(response, usage=estimated_usage(response.usage, state.messages,
                                                               turn, tools))  # fmt: skip
        usage, calls = response.usage, response.tool_calls
        family, model = price or self._price()
        if response.provider is not None:  # a chain's answer is priced as its provider's
            family, model = self._price_of(response.provider, family, model)
        cost = None if family is None else cost_of(family, response.model or model, usage)
        checked = None if output is None or calls else check_answer(output, response)
        if trace.keeps:
            knows = self.seam.knows
            known = frozenset([c.name for c in calls if knows(c.name)]) if calls else _NO_NAMES
            trace.record_llm(round_, elapsed_ms, response, cost, registered=known,
                             checked=checked, egress=sent)  # fmt: skip
        tally = state.tally
        spent = _new(Spent, (round_ if count else state.rounds, state.usage + usage,
                             state.cost.add(cost, estimated=not usage.known),
                             tally if tally is None else calibrated(tally, usage)))  # fmt: skip
        return response, spent, checked

    def _price(self) -> tuple[str | None, str | None]:
        """What prices this loop's calls: the provider's pricing family and model."""
        return pricing_family(self.provider), model_of(self.provider)

    def _price_of(
        self, name: str, family: str | None, model: str | None
    ) -> tuple[str | None, str | None]:
        """The pricing family and model of the chain's provider ``name``, when it has one."""
        member = getattr(self.provider, "member", None)
        answered = member(name) if callable(member) else None
        if answered is None:
            return family, model
        return pricing_family(answered), model_of(answered)

    async def _run_jobs(
        self,
        state: RunState,
        trace: RunTrace,
        round_: int,
        jobs: Sequence[Job],
        context: ToolContext,
        *,
        offer: Offer,
        spent: Spent | None = None,
        assistant: ChatMessage | None = None,
        run_id: str = "",
    ) -> RunState:
        """Run one turn's calls (see :mod:`toolwire.loop.turn`) and append their results: the
        one new state of the round (``spent`` and the model's ``assistant`` turn with it).
        ``run_id``: the run's, for what a remote call's server asks while it is called."""
        remote_spent = state.remote_calls
        if offer.remote:
            limit = state.options.max_remote_calls
            jobs, remote_spent = remote_calls.spend(jobs, self.registry, state.offered,
                                                    spent=remote_spent, limit=limit)  # fmt: skip
        messages = [*state.messages, assistant] if assistant is not None else list(state.messages)
        invocations = list(state.invocations)
        checkpoint = self.checkpoint
        turn = run_calls(jobs, trace, round_, state, context=context, offer=offer,
                         messages=messages, invocations=invocations, seam=self.seam,
                         checkpoint=checkpoint, complete=self._complete)  # fmt: skip
        at: Progress = state if spent is None else spent
        if offer.remote:  # a remote tool's server may ask the run something while it is called
            live = LiveTurn(run_id=run_id or context.run_id or "", round=round_, trace=trace,
                            provider=self.provider, charter=state.charter,
                            context=context)  # fmt: skip
            with live_turn(live):
                entered, vault, asked = await turn
            at = with_sampled(at, live.sampled)
        else:
            entered, vault, asked = await turn
        if asked:  # questions about held values: their model calls are the round's too
            at = with_questions(at, asked)
        state = state.after_round(tuple(messages), tuple(invocations), at, remote_spent, entered,
                                  vault=vault)  # fmt: skip
        if checkpoint is not None:
            await checkpoint.round_done(state)
        return state

    def _zone(self, options: RunOptions, context: ToolContext | None = None) -> TrustZone:
        """The zone the gate offers tools for: the run's provider's (a chain's least trusted),
        never more trusted than the zone its context carries (a carried-on segment's is its
        charter's: a segment served by fewer providers than the run may reach offers no more)."""
        zone = run_zone(options.trust_zone, self.provider)
        sealed = None if context is None else context.trust_zone
        return zone if sealed is None else TrustZone.least_trusted([zone, sealed])

    def _offer(
        self,
        offered: frozenset[str],
        options: RunOptions,
        context: ToolContext,
        exclusive: bool,
        *,
        attended: bool = True,
        holds: bool = False,
    ) -> Offer:
        """``holds``: the run holds values already (see :mod:`toolwire.policy.quarantine`)."""
        zone = self._zone(options, context)
        gate = self.policy.gate(context=context, grant=options.grant, zone=zone)
        workspace = context.workspace
        policy = policy_of(options.untrusted_policy, workspace, attended=attended)
        quarantine, endorse_strings = quarantine_by(workspace)
        return Offer.of(self.registry, offered, gate, exclusive=exclusive,
                        overrides=overrides_of(workspace), policy=policy, quarantine=quarantine,
                        endorse_strings=endorse_strings, holds=holds,
                        attended=attended)  # fmt: skip

    def _offered(
        self, options: RunOptions, context: ToolContext
    ) -> tuple[frozenset[str], list[dict[str, str]]]:
        offered, refused = self.policy.offered(
            options.allowed_tools,
            context=context,
            grant=options.grant,
            zone=self._zone(options, context),
        )
        for decision in refused:
            log.info("tool %r not offered: %s", decision.name, decision.reason)
        return frozenset(offered), [d.to_dict() for d in refused]

    def _bare_charter(self, context: ToolContext, options: RunOptions) -> Charter:
        """The charter of a run given to the loop without one (no runtime): its context's
        user and workspace, this loop's provider, the default level."""
        return submit(provider=ProviderRef.of(self.provider, None, options), options=options,
                      privacy=PrivacyLevel.METADATA, user=context.user,
                      workspace=context.workspace)  # fmt: skip

    def _names(self, offered: frozenset[str]) -> tuple[str, ...]:
        return tuple(n for n in self.registry.names() if n in offered)
