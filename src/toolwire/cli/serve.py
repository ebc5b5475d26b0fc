"""``toolwire serve``: the inspector on a local port, opened with a fresh admin token.

Runs started on the page are kept in the store every command uses (see
:mod:`toolwire.cli.store`). The port is checked before anything is written: a busy port leaves
no store and no key file behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from toolwire.cli.app import app
from toolwire.cli.keys import make_key
from toolwire.cli.options import (
    BaseUrlOption,
    ModelOption,
    PrivacyOption,
    ProviderOption,
    RegionOption,
    ToolChoiceOption,
    TrustZoneOption,
)
from toolwire.cli.run import registry_for, unknown_tool
from toolwire.cli.server import DEFAULT_PORT, bind, refuse_remote, run_server
from toolwire.cli.show import error, safe
from toolwire.cli.store import DbOption, notices, open_store
from toolwire.core.errors import ConfigError, ToolwireError
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import TOOL_CHOICE_MODES

if TYPE_CHECKING:
    from toolwire.inspector import InspectorSettings
    from toolwire.store import RunStore
    from toolwire.tools.registry import ToolRegistry


def check_port(host: str, port: int) -> None:
    """Exit 1 when ``host:port`` cannot be bound, before the command writes anything.

    The socket is closed again; ``run_server`` binds its own, so a port taken in between is
    still its clear error, only later.
    """
    try:
        bind(host, port).close()
    except OSError as exc:
        why = exc.strerror or str(exc)
        error(notices(), f"cannot listen on {safe(host, 80)}:{port}: {why}; choose another --port")
        raise typer.Exit(1) from None


def build_settings(
    script: Path | None,
    store: RunStore | None,
    privacy: PrivacyLevel = PrivacyLevel.METADATA,
    *,
    workspace: Path | None = None,
    key_folder: Path | None = None,
    allow_remote: bool = False,
    queue_runs: bool = False,
    served: Served | None = None,
) -> InspectorSettings:
    """Settings for a served inspector; with ``store``, runs and tool states go to it. The
    workspace's MCP servers are listed now, so the Tools page shows their tools; a server that
    cannot be listed is a warning.

    The state key comes from the environment or ``state.key`` in ``key_folder`` (default: the
    user data directory), and is created there when there is none. ``served`` is the provider
    the run form starts with (``--provider`` and the rest); its model and key are checked now,
    and a tool choice naming a tool must name one of the registry's (as ``run`` checks it).
    """
    from toolwire.inspector import InspectorSettings, RunDefaults, new_token, provider_factory
    from toolwire.workspace.config import load_workspace

    tools_workspace = load_workspace(workspace) if workspace is not None else None
    # The store's tool states are the inspector's to load: only the workspace's servers here.
    registry = registry_for(notices(), None, tools_workspace, every_server=True)
    served = served or Served()
    check_tool_choice(registry, served.tool_choice)
    factory = provider_factory(script, base_url=served.base_url, trust_zone=served.trust_zone,
                               region=served.region)  # fmt: skip
    if served.provider != "scripted":
        factory(served.provider, served.model)  # a missing key or model fails now
    key = make_key(key_folder)
    return InspectorSettings(
        registry=registry,
        provider_factory=factory,
        defaults=RunDefaults(
            provider=served.provider,
            model=served.model or "",
            tool_choice=served.tool_choice,
            base_url=served.base_url,
        ),
        token=new_token(),
        store=store,
        privacy_level=str(privacy) if store is not None else None,
        workspace=tools_workspace,
        state_key=key,
        allow_remote=allow_remote,
        queue_runs=queue_runs,
    )


def check_tool_choice(registry: ToolRegistry, choice: str) -> None:
    """A ``--tool-choice`` naming a tool must name one of ``registry``'s: a ``ConfigError``
    before serving, as ``run`` refuses it before running (a mode is always fine)."""
    if choice not in TOOL_CHOICE_MODES:
        unknown = unknown_tool(registry, [choice])
        if unknown is not None:
            raise ConfigError(f"--tool-choice: {unknown}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Served:
    """The provider options ``serve`` was given (the same as ``run``'s and ``demo``'s)."""

    provider: str = "scripted"
    model: str | None = None
    base_url: str | None = None
    trust_zone: str | None = None
    tool_choice: str = "auto"
    region: str | None = None


@app.command()
def serve(
    *,
    db: DbOption = None,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", help="A workspace TOML file for the tools.")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = DEFAULT_PORT,
    script: Annotated[
        Path | None, typer.Option("--script", help="A script for the scripted model.")
    ] = None,
    provider: ProviderOption = "scripted",
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    region: RegionOption = None,
    trust_zone: TrustZoneOption = None,
    tool_choice: ToolChoiceOption = "auto",
    privacy: PrivacyOption = PrivacyLevel.METADATA.value,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Allow binding to a non-loopback address and answering to any host name.",
        ),
    ] = False,
    queue: Annotated[
        bool,
        typer.Option("--queue", help="Queue runs started here for workers (toolwire worker); "
                     "needs a PostgreSQL --db."),
    ] = False,
) -> None:  # fmt: skip
    """Start the inspector and print its URL with a fresh admin token."""
    from toolwire.store.engine import choose_store

    console = Console(highlight=False)
    refuse_remote(host, allow_remote, console)
    check_port(host, port)
    level = PrivacyLevel.parse(privacy)
    store = open_store(choose_store(db), level, announce=True)
    try:
        settings = build_settings(
            script, store, level, workspace=workspace, allow_remote=allow_remote,
            queue_runs=queue, served=Served(provider=provider, model=model, base_url=base_url,
                                            trust_zone=trust_zone, tool_choice=tool_choice,
                                            region=region),
        )  # fmt: skip
        if queue:
            from toolwire.inspector.queued import queue_of

            queue_of(settings)  # a SQLite store or no key: refused before the URL is printed
    except ToolwireError as exc:
        if store is not None:
            store.close()
        error(notices(), safe(str(exc), None))
        raise typer.Exit(1) from None
    run_server(settings, host, port, console)
