"""``toolwire run`` and ``toolwire tools``.

A run that waits for a person asks inline when a person is at the terminal; otherwise it
stays waiting in the store, and the command prints how to resume it and exits with
``WAITING_EXIT_CODE``.
"""

from __future__ import annotations

import difflib
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.ask import carry_on, decision_errors, interactive, resumer
from toolwire.cli.keys import read_key
from toolwire.cli.options import (
    ApiVersionOption,
    AuthOption,
    BaseUrlOption,
    ContextWindowOption,
    DeploymentOption,
    FallbackOption,
    MaxConcurrencyOption,
    MaxCostOption,
    MaxEgressBytesOption,
    MaxRemoteCallsOption,
    MaxTokensFieldOption,
    MaxTokensOption,
    MaxTotalTokensOption,
    ModelOption,
    NoStreamOption,
    OnEgressLimitOption,
    OutputSchemaOption,
    PrivacyOption,
    ProjectOption,
    ProviderOption,
    ReasoningOption,
    RunRegionOption,
    ToolChoiceOption,
    TrustZoneOption,
    load_output_schema,
    parse_reasoning,
)
from toolwire.cli.outcome import Output, report
from toolwire.cli.show import StepPrinter, emit_json, error, safe, table, warning
from toolwire.cli.store import DbOption, open_or_warn
from toolwire.core.errors import ConfigError, StoreError, ToolwireError
from toolwire.policy.options import DEFAULT_MAX_CONCURRENCY, DEFAULT_MAX_REMOTE_CALLS, MAX_ROUNDS
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import TOOL_CHOICE_MODES
from toolwire.providers.presets import parse_fallback

WORKSPACE_FILE = "workspace.toml"  # the name a workspace folder (the demo's) gives it
# `toolwire tools` shows a description's first sentence, cut here to keep a row on a line.
TOOL_DESCRIPTION_CHARS = 72

if TYPE_CHECKING:  # the run's own modules load when a run starts, not for --help
    from collections.abc import Sequence

    from toolwire.runs.runtime import RunRequest, Runtime
    from toolwire.store import RunStore
    from toolwire.tools.registry import ToolRegistry, ToolState
    from toolwire.workspace.config import Workspace


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="What to ask the model.")],
    *,
    script: Annotated[
        Path | None,
        typer.Option("--script", help="A JSON or YAML script (needed with --provider scripted)."),
    ] = None,
    provider_name: ProviderOption = "scripted",
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    region: RunRegionOption = None,
    trust_zone: TrustZoneOption = None,
    deployment: DeploymentOption = None,
    api_version: ApiVersionOption = None,
    project: ProjectOption = None,
    auth: AuthOption = None,
    fallback: FallbackOption = None,
    tool_choice: ToolChoiceOption = "auto",
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            help="A workspace TOML file for the tools, or a folder "
            "holding workspace.toml (the demo's).",
        ),
    ] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="Act as an admin: admin-only tools may be offered.")
    ] = False,
    system: Annotated[str | None, typer.Option(help="A system prompt.")] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="What to call the run (the agent's name in its traces); "
                     "by default the workspace's name."),
    ] = None,
    max_rounds: Annotated[int, typer.Option(min=1, max=MAX_ROUNDS)] = 5,
    tool: Annotated[
        list[str] | None, typer.Option("--tool", help="Offer only these tools (repeatable).")
    ] = None,
    no_tools: Annotated[bool, typer.Option("--no-tools", help="Offer the model no tools.")] = False,
    db: DbOption = None,
    privacy: PrivacyOption = PrivacyLevel.METADATA.value,
    reasoning: ReasoningOption = None,
    no_stream: NoStreamOption = False,
    max_tokens: MaxTokensOption = None,
    max_total_tokens: MaxTotalTokensOption = None,
    max_cost: MaxCostOption = None,
    max_egress_bytes: MaxEgressBytesOption = None,
    on_egress_limit: OnEgressLimitOption = None,
    max_tokens_field: MaxTokensFieldOption = None,
    context_window: ContextWindowOption = None,
    output_schema: OutputSchemaOption = None,
    max_concurrency: MaxConcurrencyOption = None,
    max_remote_calls: MaxRemoteCallsOption = DEFAULT_MAX_REMOTE_CALLS,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the outcome as one JSON object, no steps.")
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="Print only the answer (with --json: nothing)."),
    ] = False,
    queue: Annotated[
        bool,
        typer.Option("--queue", help="Queue the run for a worker (toolwire worker) and follow "
                     "its stored steps here; needs a PostgreSQL --db."),
    ] = False,
    no_store: Annotated[
        bool,
        typer.Option("--no-store", help="Record nothing: run without the store (a run that "
                     "waits for a person then cannot be resumed later)."),
    ] = False,
) -> None:  # fmt: skip
    """Run one tool loop, show each step live, then the answer; the run is recorded.

    A store that cannot record the run (locked, read-only, full) stops it before it starts,
    with exit status 1, unless ``--no-store`` says to record nothing."""
    from toolwire.core.trust import UntrustedActions
    from toolwire.policy.options import RunOptions
    from toolwire.providers.cloud import CloudSettings
    from toolwire.providers.select import create_provider
    from toolwire.runs.runtime import RunRequest, Runtime
    from toolwire.tools.api import ToolContext, User

    output = output_mode(as_json=as_json, quiet=quiet)
    # What a person reads: stdout for the plain command, stderr when stdout is for a script.
    console = Console(highlight=False, stderr=output is not Output.HUMAN)
    try:
        level = PrivacyLevel.parse(privacy)
        run_name = None if name is None else checked_name(name)
        tools_workspace = open_workspace(workspace)
        field = max_tokens_field or getattr(tools_workspace, "max_tokens_field", None)
        cloud = CloudSettings(deployment=deployment, api_version=api_version, project=project,
                              region=region or getattr(tools_workspace, "region", None),
                              auth=auth)  # fmt: skip
        provider = create_provider(
            provider_name, model=model, base_url=base_url, script=script, trust_zone=trust_zone,
            max_tokens_field=field, region=region, cloud=cloud,
        )  # fmt: skip
        if fallback is None:  # the workspace's chain, unless --fallback names one
            fallback = ",".join(getattr(tools_workspace, "fallback", ())) or None
        chain = [
            create_provider(name, model=named or model, script=script, max_tokens_field=field)
            for name, named in parse_fallback(fallback)
        ]
        options = RunOptions(
            fallback=chain,
            max_rounds=max_rounds,
            allowed_tools=[] if no_tools else tool,
            reasoning=parse_reasoning(reasoning),
            stream=not no_stream,
            max_tokens=max_tokens,
            max_total_tokens=max_total_tokens,
            max_cost=max_cost,
            max_egress_bytes=max_egress_bytes,
            # likewise an egress limit that would ask: nobody can approve, so the run stops
            on_egress_limit="stop" if no_store and not interactive() else on_egress_limit,
            context_window=context_window,
            max_concurrency=max_concurrency or DEFAULT_MAX_CONCURRENCY,
            max_remote_calls=max_remote_calls,
            tool_choice=tool_choice,
            output=None if output_schema is None else load_output_schema(output_schema),
            name=run_name,
            # A call the run's containment holds waits for a person, at the terminal or later
            # (toolwire runs approve); a run nobody can resume (--no-store, no terminal) refuses.
            untrusted_actions=UntrustedActions.REFUSE if no_store and not interactive() else None,
        )
        context = ToolContext(
            user=User("cli", is_admin=True) if admin else None,
            workspace=tools_workspace,
        )
        if no_store and (queue or db):
            raise ConfigError(
                f"--no-store records nothing: it cannot go with {'--queue' if queue else '--db'}"
            )
    except ToolwireError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    key = read_key(console)
    store = None if no_store else open_or_warn(console, db, level)
    registry = registry_for(console, store, tools_workspace, requested=options.allowed_tools)
    named = [] if tool_choice in TOOL_CHOICE_MODES else [tool_choice]
    unknown = unknown_tool(registry, [*(tool or []), *named])
    if unknown is not None:
        if store is not None:
            store.close()
        error(console, unknown)
        raise typer.Exit(1)
    runtime = Runtime(registry, recorder=store, state_key=key, must_record=store is not None)
    request = RunRequest.of(
        prompt, system=system, provider=provider, model=model, options=options, context=context
    )
    if queue:
        run_queued(console, store, runtime, request, output=output, db=db)
        return
    run_here(console, store, runtime, request, output=output, db=db)


def checked_name(name: str) -> str:
    """``--name``'s value, or ``ConfigError`` saying what a name must be."""
    from toolwire.core.text import check_name

    try:
        return check_name(name, "--name")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def run_here(
    console: Console,
    store: RunStore | None,
    runtime: Runtime,
    request: RunRequest,
    *,
    output: Output,
    db: str | None,
) -> None:
    """Run ``request`` in this process, steps shown live, and report how it ended; a store
    that cannot begin the run stops it before it starts (exit 1)."""
    printer = StepPrinter(console, spinner=True)
    observers = [printer] if output is Output.HUMAN else []
    deltas = [printer.delta] if output is Output.HUMAN else []
    asking: AbstractContextManager[None] = nullcontext()
    if interactive():  # a server's question is asked at this terminal
        from toolwire.cli.questions import terminal_answerer
        from toolwire.mcp.asks import attending

        asking = attending(terminal_answerer(console))
    try:
        with asking:
            outcome = runtime.run_sync(request, observers=observers, deltas=deltas)
    except StoreError as exc:
        printer.finish()
        assert store is not None  # only a store that must record raises
        where = store_location(store)
        store.close()
        error(console, f"{safe(where, None)}: {safe(str(exc), None)}; nothing ran "
              "(--no-store runs without recording)")  # fmt: skip
        raise typer.Exit(1) from None
    try:
        if outcome.status.waiting and interactive():
            with decision_errors(console):
                outcome = carry_on(console, outcome, resumer(runtime, printer))
    finally:
        printer.finish()
        stored_in = None if store is None else store_location(store)
        if store is not None:
            store.close()
    report(console, outcome, recorded=store is not None, db=db, printer=printer,
           output=output, stored_in=stored_in)  # fmt: skip


def run_queued(
    console: Console,
    store: RunStore | None,
    runtime: Runtime,
    request: RunRequest,
    *,
    output: Output,
    db: str | None,
) -> None:
    """Queue ``request`` for a worker and follow it until it ends or waits."""
    from toolwire.cli.queued import Follower, open_queue
    from toolwire.queue.engine import NOT_POSTGRES

    if store is None:
        error(console, NOT_POSTGRES)
        raise typer.Exit(1)
    try:
        queue = open_queue(console, store, runtime.state_key)
        follower = Follower(console if output is Output.HUMAN else None, queue, runtime)
        with decision_errors(console):
            run_id = queue.submit(request)
            if output is Output.HUMAN:
                console.print(Text(f"run {run_id} queued for a worker", style="dim"))
            outcome = follower.follow(run_id)
            if outcome.status.waiting and interactive():
                outcome = carry_on(console, outcome, follower.decide)
        stored_in = store_location(store)
    finally:
        store.close()
    report(console, outcome, recorded=True, db=db, output=output, stored_in=stored_in,
           steps=follower.steps)  # fmt: skip


def output_mode(*, as_json: bool, quiet: bool) -> Output:
    if as_json:
        return Output.SILENT if quiet else Output.JSON
    return Output.QUIET if quiet else Output.HUMAN


def open_workspace(path: Path | None) -> Workspace | None:
    """The workspace ``--workspace`` names: a TOML file, or a folder holding ``workspace.toml``
    (the demo's); None when the option was not given."""
    from toolwire.workspace.config import load_workspace

    if path is None:
        return None
    if path.is_dir():
        if not (path / WORKSPACE_FILE).is_file():
            raise ConfigError(f"{path} is a folder without a {WORKSPACE_FILE}")
        path = path / WORKSPACE_FILE
    return load_workspace(path)


def unknown_tool(registry: ToolRegistry, names: list[str]) -> str | None:
    """What is wrong with the first ``--tool`` that names no registered tool, if one does."""
    for name in names:
        if name in registry:
            continue
        near = difflib.get_close_matches(name, registry.names(), n=3, cutoff=0.6)
        hint = f"did you mean {', '.join(near)}?" if near else "see them with: toolwire tools"
        return f"no tool is named {safe(name, 60)!r}; {hint}"
    return None


def store_location(store: RunStore) -> str:
    """Where the store keeps runs: the SQLite file, or the database URL without its password."""
    from toolwire.store.engine import shown

    if store.url.get_backend_name() == "sqlite" and store.url.database:
        return str(Path(store.url.database).resolve())
    return shown(store.url)


def registry_for(
    console: Console,
    store: RunStore | None,
    workspace: Workspace | None = None,
    *,
    requested: Sequence[str] | None = None,
    every_server: bool = False,
) -> ToolRegistry:
    """The default registry with the store's enable/disable overrides, when there is a store,
    and the tools of the workspace's MCP servers: every server's for a listing, only those a
    run could be offered for a run (``requested``: the tools it asks for; None: every enabled
    one). A server that cannot be listed is a warning; its tools are not offered."""
    from toolwire.tools.defaults import default_registry

    registry = default_registry()
    if store is not None:
        try:
            registry.availability = store.load_availability()
        except StoreError as exc:
            warning(console, safe(str(exc), None))
    if workspace is not None and workspace.mcp_servers:
        from toolwire.mcp.remote import add_remote_tools, may_offer

        availability = registry.availability
        problems = add_remote_tools(
            registry, workspace,
            only=None if every_server else lambda s: may_offer(s, availability, requested),
        )  # fmt: skip
        for problem in problems:
            warning(console, safe(problem, None))
    return registry


@app.command("tools")
def list_tools(
    db: DbOption = None,
    workspace: Annotated[
        Path | None,
        typer.Option("--workspace", help="A workspace TOML file: its MCP servers' tools too."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the tools as a JSON array.")
    ] = False,
) -> None:
    """List the registered tools: group, state (overrides from the store), data class and what
    each does."""
    console = Console(highlight=False, stderr=as_json)
    try:
        tools_workspace = open_workspace(workspace)
    except ToolwireError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    store = open_or_warn(console, db, PrivacyLevel.METADATA)
    registry = registry_for(console, store, tools_workspace, every_server=True)
    if store is not None:
        store.close()
    states = registry.states()
    classes = {tool.spec.name: tool.data_class for tool in registry}
    if as_json:
        emit_json([_tool_json(state, classes[state.name]) for state in states])
        return
    servers = any(state.server is not None for state in states)
    columns = ["tool", "group", *(["server"] if servers else []), "state", "why", "data_class",
               "description"]  # fmt: skip
    table(console, columns, [_tool_row(state, classes[state.name], servers) for state in states])


def _tool_row(state: ToolState, data_class: str, servers: bool) -> list[str]:
    return [
        safe(state.name, 80),
        safe(state.group, 40),
        *([safe(state.server or "-", 40)] if servers else []),
        "enabled" if state.enabled else "disabled",
        _why(state) + (", admin only" if state.requires_admin else ""),
        safe(data_class, 40),
        safe(state.description.split(". ")[0].strip(), TOOL_DESCRIPTION_CHARS),
    ]


def _why(state: ToolState) -> str:
    if not state.group_enabled:
        return "group disabled"
    return "overridden" if state.overridden else "default"


def _tool_json(state: ToolState, data_class: str) -> dict[str, object]:
    return {
        "name": state.name,
        "group": state.group,
        "enabled": state.enabled,
        "why": _why(state),
        "admin_only": state.requires_admin,
        "server": state.server,
        "data_class": data_class,
        "description": state.description,
    }
