"""``toolwire demo``: the inspector on the demo shop, offline by default.

The demo workspace (a shop database with planted secrets, source files, a log) is created in
the user data directory on first use and reused afterwards. The model is a scripted replay
unless ``--provider`` names a real one. Runs are kept in the store every command uses (see
:mod:`toolwire.cli.store`); with ``--data-dir``, the demo, its store (``runs.db``) and its
state key all live in that folder instead.

Everything that can fail without writing is checked first (the port, the provider and its
key, a store named with ``--db`` or ``$TOOLWIRE_DB``), so a failed start leaves nothing behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.keys import data_dir as user_data_dir
from toolwire.cli.keys import make_key
from toolwire.cli.options import (
    BaseUrlOption,
    ContextWindowOption,
    MaxConcurrencyOption,
    MaxCostOption,
    MaxTokensOption,
    MaxTotalTokensOption,
    ModelOption,
    NoStreamOption,
    PrivacyOption,
    ProviderOption,
    ReasoningOption,
    RegionOption,
    ToolChoiceOption,
    TrustZoneOption,
    form_reasoning,
)
from toolwire.cli.serve import check_port, check_tool_choice
from toolwire.cli.server import DEFAULT_PORT, refuse_remote, run_server
from toolwire.cli.show import error, safe
from toolwire.cli.store import DbOption, notices, open_store
from toolwire.core.errors import ToolwireError
from toolwire.policy.privacy import PrivacyLevel

if TYPE_CHECKING:
    from toolwire.store import RunStore

REPLAY_LABEL = "Demo replay: a scripted model answers; no provider is called, nothing leaves"


@app.command()
def demo(
    *,
    provider: ProviderOption = "scripted",
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    region: RegionOption = None,
    trust_zone: TrustZoneOption = None,
    tool_choice: ToolChoiceOption = "auto",
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Where the demo, its runs (runs.db) and its state key live."),
    ] = None,
    db: DbOption = None,
    privacy: PrivacyOption = PrivacyLevel.METADATA.value,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = DEFAULT_PORT,
    allow_remote: Annotated[bool, typer.Option("--allow-remote")] = False,
    reasoning: ReasoningOption = None,
    no_stream: NoStreamOption = False,
    max_tokens: MaxTokensOption = None,
    max_total_tokens: MaxTotalTokensOption = None,
    max_cost: MaxCostOption = None,
    context_window: ContextWindowOption = None,
    max_concurrency: MaxConcurrencyOption = None,
) -> None:
    """Open the inspector on the demo workspace, with an offline scripted model by default.

    The run options given here fill the page's run form."""
    from toolwire.demo import SCRIPT_PATH, prepare_demo
    from toolwire.inspector import InspectorSettings, RunDefaults, provider_factory
    from toolwire.store.engine import choose_store
    from toolwire.tools.defaults import default_registry

    console = Console(highlight=False)
    level = PrivacyLevel.parse(privacy)
    refuse_remote(host, allow_remote, console)
    check_port(host, port)
    folder = data_dir or user_data_dir()
    choice = choose_store(db, folder=data_dir)
    in_demo_folder = choice.origin == "--data-dir"  # its folder is made by prepare_demo
    store: RunStore | None = None
    registry = default_registry()
    try:
        check_tool_choice(registry, tool_choice)
        factory = provider_factory(SCRIPT_PATH, base_url=base_url, trust_zone=trust_zone,
                                   region=region)  # fmt: skip
        factory(provider, model)  # a missing key or model fails now, not at the first run
        if not in_demo_folder:
            store = open_store(choice, level, announce=True)
        shop = prepare_demo(folder)
        if in_demo_folder:
            store = open_store(choice, level, announce=True)
        key = make_key(folder)
    except ToolwireError as exc:
        if store is not None:
            store.close()
        error(notices(), safe(str(exc), None))
        raise typer.Exit(1) from None
    settings = InspectorSettings(
        registry=registry,
        provider_factory=factory,
        store=store,
        privacy_level=str(level) if store is not None else None,
        workspace=shop.workspace,
        replay_label=REPLAY_LABEL,
        state_key=key,
        allow_remote=allow_remote,
        defaults=RunDefaults(
            prompt=shop.prompt,
            provider=provider,
            model=model or "",
            reasoning=form_reasoning(reasoning),
            stream=not no_stream,
            max_tokens=max_tokens,
            max_total_tokens=max_total_tokens,
            max_cost=max_cost,
            context_window=context_window,
            max_concurrency=max_concurrency,
            tool_choice=tool_choice,
            base_url=base_url,
        ),
    )
    console.print(Text(f"Demo workspace: {shop.root}"))
    if provider == "scripted":
        console.print(Text(REPLAY_LABEL, style="yellow"))
    run_server(settings, host, port, console)
