"""Serving toolwire's tools to MCP hosts: listed by the gate, called through the seam, content only.

- Listed: the tools the gate offers a run in the host's trust zone (``external_global`` unless
  told otherwise) for the server's user, an admin only with ``--admin``: the enabled built-ins
  and plug-ins ``toolwire tools`` shows, each with its name, description, input schema, a
  title, and the hints its traits give (:func:`hints`). Tool states are read from the store
  again for every request, so a tool disabled in the inspector is gone at once, and a
  connected host is told so (``listChanged``, see :mod:`toolwire.mcp.hosts`).
- Called: every call is a one-step run (``Runtime.call``), recorded in the store with its
  artifacts, so the inspector shows it. The host gets one text block, the bounded content,
  with ``isError`` when the tool ran and failed: never ``structuredContent``, never an
  artifact. A call of a tool that is not listed runs nothing and is no run: it is the
  protocol error the MCP specification gives for an unknown tool, ``-32602`` (invalid
  params), naming the tool.
- A call that needs an operator is held (see :mod:`toolwire.runs.held`): it waits in the store until
  someone decides it in the inspector (or ``toolwire runs approve``), at most
  ``decision_seconds``. A host that cancels its request cancels the run. While it waits, a
  host that asked for progress hears so every ``PROGRESS_SECONDS`` (many hosts give up on a
  silent request), with the run's id to find it by. Over streamable HTTP the call's event
  stream is then ended, and the host comes back for the answer with ``Last-Event-ID`` (see
  :mod:`toolwire.mcp.events`).
- Read: the resources of :mod:`toolwire.mcp.resources` (this server's runs, the workspace's
  documents) and the prompts of :mod:`toolwire.mcp.prompts` (the workspace's templates), with
  completions of a prompt's choices and of run ids.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from toolwire.core.messages import ToolCall
from toolwire.core.trust import TrustZone
from toolwire.loop import seam
from toolwire.mcp import prompts, resources
from toolwire.mcp.hosts import Hosts
from toolwire.mcp.resources import DOCUMENT_TOOL, DOCUMENTS, RUN_TEMPLATE, RUNS, Resources, Runs
from toolwire.policy.containment import quarantine_by
from toolwire.policy.options import RunOptions
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.held import CallAnswer, answer_of
from toolwire.runs.runtime import Runtime
from toolwire.tools.api import (
    Effect,
    Tool,
    ToolContext,
    input_model_of,
    needs_approval,
    reaches_outside,
    title_of,
)
from toolwire.tools.labels import quarantine_of
from toolwire.tools.policy import Grant
from toolwire.tools.registry import Availability
from toolwire.workspace.prompts import shown

log = logging.getLogger("toolwire.mcp")

SERVER_NAME = "toolwire"
CALLER = "an MCP host"  # how a call's run names who made it
DEFAULT_DECISION_SECONDS = 300.0  # a person has time to look; a host's own limit may be lower
STOP_SECONDS = 10.0  # how long a cancelled call may take to settle its run
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # how hosts and terminals stop a server
PROGRESS_SECONDS = 10.0  # well inside the request timeouts hosts use (often 60 s)
NAME_SHOWN_CHARS = 80  # of a host's tool name, in the error: longer than any tool's name
INSTRUCTIONS = (
    "toolwire's tools. A call that writes waits for an operator's approval in the toolwire "
    "inspector; its answer comes once it is decided."
)


Report = Callable[[float, str], Awaitable[None]]  # progress so far, and what it is
Recorded = Callable[[str, bool], Awaitable[None]]  # a call's run id, and whether it waits


def waiting_message(run_id: str) -> str:
    return f"waiting for an operator's decision on run {run_id} in the toolwire inspector"


class Availabilities(Protocol):
    """Where tool states are kept (the run store)."""

    def load_availability(self) -> Availability: ...


@dataclass(kw_only=True)
class ServedTools:
    """The tools one ``toolwire mcp`` serves, and how a host's call of one is answered.

    ``holds`` says whether a call that needs an operator can wait for one: only with a store
    (and a state key) that an inspector shares.
    """

    runtime: Runtime
    context: ToolContext
    zone: TrustZone = TrustZone.EXTERNAL_GLOBAL
    states: Availabilities | None = None
    holds: bool = False
    decision_seconds: float = DEFAULT_DECISION_SECONDS
    privacy: PrivacyLevel = PrivacyLevel.METADATA  # what log messages to hosts may carry
    runs: Runs | None = None  # where this server's runs are read back (resources)
    hosts: Hosts = field(init=False, repr=False)  # the connected ones
    resources: Resources = field(init=False, repr=False)
    _in_flight: dict[asyncio.Future[CallAnswer], list[str]] = field(
        default_factory=dict, init=False, repr=False
    )  # each call's task and the run it started

    async def listed(self) -> list[Tool]:
        """The tools the gate offers the host, in registry order."""
        await self._refresh()
        registry = self.runtime.registry
        return [t for t in (registry.get(n) for n in self._offered()) if t is not None]

    def __post_init__(self) -> None:
        self.hosts = Hosts(self.offered_names, self.privacy)
        self.resources = Resources(runs=self.runs, context=self.context, zone=self.zone,
                                   privacy=self.privacy, known=self._known)  # fmt: skip

    def _known(self, name: str) -> bool:
        return self.runtime.registry.get(name) is not None

    async def documents(self) -> bool:
        """Whether the host may read the workspace's documents: the gate offers the tool."""
        return DOCUMENT_TOOL in await self.offered_names()

    async def read(self, uri: str) -> types.ReadResourceResult:
        """The resource at ``uri``; ``-32602`` for one this server does not have."""
        if uri.startswith(RUNS) and self.runs is not None:
            return await self.resources.run(uri)
        if uri.startswith(DOCUMENTS) and await self.documents():
            path = resources.document_path(uri)
            answer = await self.answer(DOCUMENT_TOOL, {"path": path})
            if answer.is_error:
                said = f"{shown(uri, resources.URI_SHOWN_CHARS)}: {answer.content}"
                raise MCPError(types.INVALID_PARAMS, said)
            return resources.document_contents(uri, answer.content)
        raise resources.not_found(uri)

    async def complete(self, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref, argument = params.ref, params.argument
        if isinstance(ref, types.PromptReference):
            return prompts.completed(self.context.workspace, ref.name, argument.name,
                                     argument.value)  # fmt: skip
        if ref.uri == RUN_TEMPLATE and argument.name == "run_id" and self.runs is not None:
            ids = await asyncio.to_thread(self.resources.run_ids, argument.value)
            return prompts.choices_completion(ids, argument.value)
        if ref.uri.startswith((RUNS, DOCUMENTS)):
            return types.CompleteResult(completion=prompts.NO_COMPLETION)
        raise resources.not_found(ref.uri)

    async def offered_names(self) -> list[str]:
        """The names of the tools the gate offers the host now, as ``tools/list`` names them."""
        return [t.spec.name for t in await self.listed()]

    async def refusal(self, name: str) -> str | None:
        """Why a call of ``name`` is no call of a listed tool, or None when it is one."""
        if name in await self.offered_names():
            return None
        shown = name if len(name) <= NAME_SHOWN_CHARS else name[:NAME_SHOWN_CHARS] + "…"
        if self.runtime.registry.get(name) is None:
            return f'Unknown tool: "{shown}"; tools/list names the tools this server has'
        return f'Tool "{shown}" is not offered to this session; tools/list names the ones it is'

    async def answer(
        self,
        name: str,
        arguments: Mapping[str, Any],
        report: Report | None = None,
        recorded: Recorded | None = None,
    ) -> CallAnswer:
        """The host's answer to one call. A cancel of the host's request cancels its run;
        ``report`` hears how long a held call has waited, ``recorded`` of the call's run once
        it ran or waits."""
        runs: list[str] = []
        work = asyncio.ensure_future(self._answer(name, arguments, runs, report, recorded))
        self._in_flight[work] = runs
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            with anyio.CancelScope(shield=True):
                await self._stop(work, runs)
            raise
        finally:
            self._in_flight.pop(work, None)

    async def stop(self) -> None:
        """Cancel every call in flight and its run (the server is stopping)."""
        for work, runs in list(self._in_flight.items()):
            await self._stop(work, runs)

    async def _answer(
        self,
        name: str,
        arguments: Mapping[str, Any],
        runs: list[str],
        report: Report | None,
        recorded: Recorded | None,
    ) -> CallAnswer:
        try:
            return await self._call(name, arguments, runs, report, recorded)
        except Exception:  # the SDK would send the exception's message to the host
            log.exception("the call of %r failed outside its run", name)
            return CallAnswer.error(seam.tool_failed(name))

    async def _call(
        self,
        name: str,
        arguments: Mapping[str, Any],
        runs: list[str],
        report: Report | None,
        recorded: Recorded | None,
    ) -> CallAnswer:
        await self._refresh()
        offered = frozenset(self._offered())
        tool = self.runtime.registry.get(name)
        if tool is not None and name in offered and needs_person(tool) and not self.holds:
            return CallAnswer.error(seam.nobody_to_decide(name))
        call = ToolCall.of(f"mcp_{uuid.uuid4().hex[:12]}", name, arguments)
        outcome = await self.runtime.call(
            call, context=self.context, offered=offered, options=RunOptions(trust_zone=self.zone),
            hold=self.holds, caller=CALLER, on_start=runs.append,
        )  # fmt: skip
        if recorded is not None:
            try:
                await recorded(outcome.run_id, outcome.status.waiting)
            except Exception:
                log.debug("a host could not be told of a call's run", exc_info=True)
        if not outcome.status.waiting:
            return answer_of(outcome, name)
        waiting = self.runtime.await_answer(
            outcome.run_id, name, decision_seconds=self.decision_seconds
        )
        if report is None:
            return await waiting
        return await _reported(waiting, report, waiting_message(outcome.run_id))

    async def _stop(self, work: asyncio.Future[CallAnswer], runs: list[str]) -> None:
        """Cancel the call's run (running here, or waiting in the store) and let it settle."""
        for run_id in runs:
            await asyncio.to_thread(self.runtime.cancel_anywhere, run_id)
        with contextlib.suppress(Exception, asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(work, STOP_SECONDS)

    async def _refresh(self) -> None:
        """The tool states as the store has them now; the last ones when it cannot be read."""
        if self.states is None:
            return
        try:
            availability = await asyncio.to_thread(self.states.load_availability)
        except Exception:
            log.warning("the tool states could not be read; the last ones apply", exc_info=True)
            return
        self.runtime.registry.availability = availability

    def _offered(self) -> list[str]:
        """What the gate offers, but a tool whose output a run would hold from its model: the
        host's model reads whatever a call returns, and there is no run to hold it in."""
        offered, _ = self.runtime.policy.offered(
            None, context=self.context, grant=Grant(), zone=self.zone
        )
        held, _ = quarantine_by(self.context.workspace)
        registry = self.runtime.registry
        return [n for n in offered
                if (t := registry.get(n)) is None or quarantine_of(t, held) is None]  # fmt: skip


async def _reported(work: Awaitable[CallAnswer], report: Report, message: str) -> CallAnswer:
    """``work``'s answer; meanwhile ``report`` hears, at once and every ``PROGRESS_SECONDS``,
    how long it has waited. A report that fails is only logged: the answer matters more."""
    task = asyncio.ensure_future(work)
    waited = 0.0
    try:
        while True:
            try:
                await report(waited, message)
            except Exception:
                log.debug("a progress report failed", exc_info=True)
            done, _ = await asyncio.wait({task}, timeout=PROGRESS_SECONDS)
            if done:
                return task.result()
            waited += PROGRESS_SECONDS
    finally:
        task.cancel()  # nothing once it is done; an orphan never outlives its caller


def needs_person(tool: Tool) -> bool:
    """Whether a call of ``tool`` waits for an operator's approval or input."""
    return needs_approval(tool) or input_model_of(tool) is not None


def hints(tool: Tool) -> types.ToolAnnotations:
    """What the tool's traits say to a host: its title, what its effect does (an effect that
    cannot be read is the riskiest), and whether a call reaches outside the workspace."""
    try:
        effect = Effect(getattr(tool, "effect", Effect.READ_ONLY))
    except ValueError:
        effect = Effect.NON_IDEMPOTENT_WRITE
    title, outside = title_of(tool), reaches_outside(tool)
    if not effect.writes:
        return types.ToolAnnotations(title=title, read_only_hint=True, open_world_hint=outside)
    return types.ToolAnnotations(
        title=title,
        read_only_hint=False,
        destructive_hint=True,  # a write may overwrite: nothing in the effect says it cannot
        idempotent_hint=effect is Effect.IDEMPOTENT_WRITE,
        open_world_hint=outside,
    )


def described(tool: Tool) -> types.Tool:
    spec = tool.spec
    return types.Tool(
        name=spec.name,
        title=title_of(tool),
        description=spec.description,
        input_schema=dict(spec.parameters),
        annotations=hints(tool),
    )


def text_result(answer: CallAnswer) -> types.CallToolResult:
    """The only shape a call's answer leaves in: one text block and the error flag."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=answer.content)], is_error=answer.is_error
    )


def build_server(tools: ServedTools, version: str = "") -> Server[Any]:
    """The MCP server for ``tools``: ``tools/list`` and ``tools/call``, with ``listChanged``,
    ``logging/setLevel`` for the log messages of :mod:`toolwire.mcp.hosts`, resources,
    resource templates, prompts and ``completion/complete``."""
    hosts = tools.hosts

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        listed = await tools.listed()
        hosts.listed(ctx, [t.spec.name for t in listed])
        return types.ListToolsResult(tools=[described(t) for t in listed])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        polled = False

        async def report(waited: float, message: str) -> None:
            nonlocal polled
            await ctx.session.report_progress(waited, message=message)  # no-op unless asked
            if not polled and ctx.close_sse_stream is not None:
                polled = True  # held: the host comes back for the answer (Last-Event-ID)
                await ctx.close_sse_stream()

        name, arguments = params.name, params.arguments or {}
        record = {"event": "tools/call", "tool_name": name,
                  "registered": tools.runtime.registry.get(name) is not None}  # fmt: skip
        refusal = await tools.refusal(name)
        if refusal is not None:
            await hosts.log(ctx, "warning", {**record, "outcome": "refused"})
            raise MCPError(types.INVALID_PARAMS, refusal)

        async def recorded(run_id: str, waiting: bool) -> None:
            outcome = "waiting" if waiting else "ran"
            await hosts.log(ctx, "info" if waiting else "debug",
                            {**record, "outcome": outcome, "run_id": run_id})  # fmt: skip

        await hosts.log(ctx, "debug", {**record, "outcome": "started"})
        answer = await tools.answer(name, arguments, report, recorded)
        outcome = "error" if answer.is_error else "completed"
        await hosts.log(ctx, "warning" if answer.is_error else "info", {
            **record, "outcome": outcome, "tool_arguments": dict(arguments),
            "tool_result": answer.content,
        })  # fmt: skip
        return text_result(answer)

    async def set_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        hosts.of(ctx).level = params.level
        return types.EmptyResult()

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return await tools.resources.listed()

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return tools.resources.templates(await tools.documents())

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await tools.read(params.uri)

    async def list_prompts(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return prompts.listed(tools.context.workspace)

    async def get_prompt(
        ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return prompts.got(tools.context.workspace, params.name, params.arguments)

    async def complete(
        ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        return await tools.complete(params)

    async def joined(ctx: ServerRequestContext[Any], params: types.NotificationParams) -> None:
        hosts.of(ctx)

    server = _Server(
        SERVER_NAME,
        version=version,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )
    # Registered as handlers, not through ``on_set_logging_level``, which warns that the
    # 2026-07-28 protocol drops logging: the handshake versions hosts speak still have it.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    server.add_notification_handler("notifications/initialized", types.NotificationParams, joined)
    return server


class _Server(Server[Any]):
    """The SDK's server, declaring ``tools.listChanged`` on every transport (the streamable
    HTTP manager asks for the default options)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


async def serve_stdio(server: Server[Any], tools: ServedTools) -> None:
    """Serve one host over stdin and stdout until it closes stdin, or a signal stops it.

    A host that closes stdin has its calls in flight cancelled by the SDK. On a signal the
    calls in flight (and their runs) are cancelled first, then the signal takes its default
    course: a held call's run is never left waiting for a caller that is gone."""
    from mcp.server.stdio import stdio_server

    async with anyio.create_task_group() as group:
        group.start_soon(_stop_on_signal, tools)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        await tools.hosts.close()
        group.cancel_scope.cancel()


async def _stop_on_signal(tools: ServedTools) -> None:
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async for number in signals:
            await tools.stop()
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
            return
