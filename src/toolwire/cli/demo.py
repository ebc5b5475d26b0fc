"""``toolwire demo``: the inspector on the demo shop, offline by default.

The demo workspace (a shop database with planted secrets, source files, a log) is created in
the user data directory on first use and reused afterwards. The model is a scripted replay
unless ``--provider`` names a real one; runs are kept in the default audit store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import platformdirs
import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.keys import make_key
from toolwire.cli.options import (
    MaxCostOption,
    MaxTokensOption,
    MaxTotalTokensOption,
    NoStreamOption,
    ReasoningOption,
    form_reasoning,
)
from toolwire.cli.server import DEFAULT_PORT, refuse_remote, run_server
from toolwire.cli.show import error, safe
from toolwire.errors import ToolwireError
from toolwire.privacy import PrivacyLevel
from toolwire.providers.presets import PROVIDER_NAMES

REPLAY_LABEL = "Demo replay: a scripted model answers; no provider is called, nothing leaves"


@app.command()
def demo(
    *,
    provider: Annotated[
        str, typer.Option(help=f"Model provider: {', '.join(PROVIDER_NAMES)}.")
    ] = "scripted",
    model: Annotated[str | None, typer.Option(help="Model name for a real provider.")] = None,
    base_url: Annotated[str | None, typer.Option(help="API base URL (OpenAI-compatible).")] = None,
    trust_zone: Annotated[
        str | None, typer.Option(help="Where the provider runs; bounds which tools it gets.")
    ] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Where the demo and its runs live.")] = None,
    db: Annotated[str | None, typer.Option("--db", help="Audit store URL (SQLAlchemy).")] = None,
    privacy: Annotated[PrivacyLevel, typer.Option()] = PrivacyLevel.METADATA,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = DEFAULT_PORT,
    allow_remote: Annotated[bool, typer.Option("--allow-remote")] = False,
    reasoning: ReasoningOption = None,
    no_stream: NoStreamOption = False,
    max_tokens: MaxTokensOption = None,
    max_total_tokens: MaxTotalTokensOption = None,
    max_cost: MaxCostOption = None,
) -> None:
    """Open the inspector on the demo workspace, with an offline scripted model by default.

    The run options given here fill the page's run form."""
    from toolwire.demo import prepare_demo
    from toolwire.inspector import InspectorSettings, RunDefaults, provider_factory
    from toolwire.store import RunStore
    from toolwire.tools.defaults import default_registry

    console = Console(highlight=False)
    refuse_remote(host, allow_remote, console)
    folder = data_dir or Path(platformdirs.user_data_dir("toolwire"))
    try:
        shop = prepare_demo(folder)
        factory = provider_factory(shop.script_path, base_url=base_url, trust_zone=trust_zone)
        factory(provider, model)  # a missing key or model fails now, not at the first run
        store = RunStore.open(db or str(folder / "runs.sqlite"), privacy=privacy)
        key = make_key(folder)
    except ToolwireError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    settings = InspectorSettings(
        registry=default_registry(),
        provider_factory=factory,
        store=store,
        privacy_level=str(privacy),
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
        ),
    )
    console.print(Text(f"Demo workspace: {shop.root}"))
    if provider == "scripted":
        console.print(Text(REPLAY_LABEL, style="yellow"))
    run_server(settings, host, port, console)
