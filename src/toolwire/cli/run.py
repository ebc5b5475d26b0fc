"""``toolwire run`` and ``toolwire tools``.

A run that waits for a person asks inline when a person is at the terminal; otherwise it
stays waiting in the store, and the command prints how to resume it and exits with
``WAITING_EXIT_CODE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.ask import carry_on, decision_errors, interactive
from toolwire.cli.keys import read_key
from toolwire.cli.options import (
    MaxCostOption,
    MaxTokensFieldOption,
    MaxTokensOption,
    MaxTotalTokensOption,
    NoStreamOption,
    ReasoningOption,
    parse_reasoning,
)
from toolwire.cli.outcome import report
from toolwire.cli.show import StepPrinter, error, safe
from toolwire.cli.store import DbOption, open_or_warn
from toolwire.errors import StoreError, ToolwireError
from toolwire.options import MAX_ROUNDS
from toolwire.privacy import PrivacyLevel
from toolwire.providers.presets import PROVIDER_NAMES

if TYPE_CHECKING:  # the run's own modules load when a run starts, not for --help
    from toolwire.store import RunStore
    from toolwire.tools.registry import ToolRegistry


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="What to ask the model.")],
    *,
    script: Annotated[
        Path | None,
        typer.Option("--script", help="A JSON or YAML script (needed with --provider scripted)."),
    ] = None,
    provider_name: Annotated[
        str, typer.Option("--provider", help=", ".join(PROVIDER_NAMES) + ".")
    ] = "scripted",
    model: Annotated[str | None, typer.Option(help="The model to ask (HTTP providers).")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Another server speaking the same API.")
    ] = None,
    trust_zone: Annotated[
        str | None,
        typer.Option("--trust-zone", help="Where the model runs; bounds which tools it gets."),
    ] = None,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", help="A workspace TOML file for the tools.")
    ] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="Act as an admin: admin-only tools may be offered.")
    ] = False,
    system: Annotated[str | None, typer.Option(help="A system prompt.")] = None,
    max_rounds: Annotated[int, typer.Option(min=1, max=MAX_ROUNDS)] = 5,
    tool: Annotated[
        list[str] | None, typer.Option("--tool", help="Offer only these tools (repeatable).")
    ] = None,
    db: DbOption = None,
    privacy: Annotated[
        str,
        typer.Option("--privacy", help="What the store keeps: none, metadata, redacted or full."),
    ] = PrivacyLevel.METADATA.value,
    reasoning: ReasoningOption = None,
    no_stream: NoStreamOption = False,
    max_tokens: MaxTokensOption = None,
    max_total_tokens: MaxTotalTokensOption = None,
    max_cost: MaxCostOption = None,
    max_tokens_field: MaxTokensFieldOption = None,
) -> None:
    """Run one tool loop, show each step live, then the answer; the run is recorded."""
    from toolwire.options import RunOptions
    from toolwire.providers.select import create_provider
    from toolwire.runtime import RunRequest, Runtime
    from toolwire.tools.api import ToolContext, User
    from toolwire.workspace import load_workspace

    console = Console(highlight=False)
    try:
        level = PrivacyLevel.parse(privacy)
        tools_workspace = load_workspace(workspace) if workspace is not None else None
        field = max_tokens_field or getattr(tools_workspace, "max_tokens_field", None)
        provider = create_provider(
            provider_name, model=model, base_url=base_url, script=script, trust_zone=trust_zone,
            max_tokens_field=field,
        )  # fmt: skip
        options = RunOptions(
            max_rounds=max_rounds,
            allowed_tools=tool,
            reasoning=parse_reasoning(reasoning),
            stream=not no_stream,
            max_tokens=max_tokens,
            max_total_tokens=max_total_tokens,
            max_cost=max_cost,
        )
        context = ToolContext(
            user=User("cli", is_admin=True) if admin else None,
            workspace=tools_workspace,
        )
    except ToolwireError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    key = read_key(console)
    store = open_or_warn(console, db, level)
    runtime = Runtime(registry_for(console, store), recorder=store, state_key=key)
    request = RunRequest.of(
        prompt, system=system, provider=provider, model=model, options=options, context=context
    )
    printer = StepPrinter(console)
    try:
        outcome = runtime.run_sync(request, observers=[printer], deltas=[printer.delta])
        if outcome.status.waiting and interactive():
            with decision_errors(console):
                outcome = carry_on(console, runtime, outcome, printer)
    finally:
        if store is not None:
            store.close()
    report(console, outcome, recorded=store is not None, db=db, printer=printer)


def registry_for(console: Console, store: RunStore | None) -> ToolRegistry:
    """The default registry with the store's enable/disable overrides, when there is a store."""
    from toolwire.tools.defaults import default_registry

    registry = default_registry()
    if store is not None:
        try:
            registry.availability = store.load_availability()
        except StoreError as exc:
            console.print(Text(f"warning: {safe(str(exc), None)}", style="yellow"))
    return registry


@app.command("tools")
def list_tools(db: DbOption = None) -> None:
    """List the registered tools with their group and state (overrides from the store)."""
    console = Console(highlight=False)
    store = open_or_warn(console, db, PrivacyLevel.METADATA)
    registry = registry_for(console, store)
    if store is not None:
        store.close()
    table = Table("tool", "group", "state", "why")
    for state in registry.states():
        why = (
            "group disabled"
            if not state.group_enabled
            else "overridden"
            if state.overridden
            else "default"
        )
        table.add_row(
            Text(safe(state.name, 80)),
            Text(safe(state.group, 40)),
            Text("enabled" if state.enabled else "disabled"),
            Text(why + (", admin only" if state.requires_admin else "")),
        )
    console.print(table)
