"""``toolwire serve``: the inspector on a local port, opened with a fresh admin token."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from toolwire.cli.app import app
from toolwire.cli.keys import make_key
from toolwire.cli.server import DEFAULT_PORT, refuse_remote, run_server
from toolwire.cli.show import error, safe
from toolwire.errors import ToolwireError
from toolwire.privacy import PrivacyLevel

if TYPE_CHECKING:
    from toolwire.inspector import InspectorSettings


def build_settings(
    script: Path | None,
    db: str | None,
    privacy: PrivacyLevel = PrivacyLevel.METADATA,
    *,
    workspace: Path | None = None,
    key_folder: Path | None = None,
    allow_remote: bool = False,
) -> InspectorSettings:
    """Settings for a served inspector; with ``db``, runs and tool states go to the store.

    The state key comes from the environment or ``state.key`` in ``key_folder`` (default: the
    user data directory), and is created there when there is none.
    """
    from toolwire.inspector import InspectorSettings, new_token, provider_factory
    from toolwire.store import RunStore
    from toolwire.tools.defaults import default_registry
    from toolwire.workspace import load_workspace

    key = make_key(key_folder)
    store = RunStore.open(db, privacy=privacy) if db is not None else None
    return InspectorSettings(
        registry=default_registry(),
        provider_factory=provider_factory(script),
        token=new_token(),
        store=store,
        privacy_level=str(privacy) if store is not None else None,
        workspace=load_workspace(workspace) if workspace is not None else None,
        state_key=key,
        allow_remote=allow_remote,
    )


@app.command()
def serve(
    *,
    db: Annotated[str | None, typer.Option("--db", help="Audit store URL (SQLAlchemy).")] = None,
    workspace: Annotated[
        Path | None, typer.Option("--workspace", help="A workspace TOML file for the tools.")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535)] = DEFAULT_PORT,
    script: Annotated[
        Path | None, typer.Option("--script", help="A script for the scripted model.")
    ] = None,
    privacy: Annotated[
        PrivacyLevel, typer.Option(help="How much run content the store keeps.")
    ] = PrivacyLevel.METADATA,
    allow_remote: Annotated[
        bool,
        typer.Option(
            "--allow-remote",
            help="Allow binding to a non-loopback address and answering to any host name.",
        ),
    ] = False,
) -> None:
    """Start the inspector and print its URL with a fresh admin token."""
    console = Console(highlight=False)
    refuse_remote(host, allow_remote, console)
    try:
        settings = build_settings(
            script, db, privacy, workspace=workspace, allow_remote=allow_remote
        )
    except ToolwireError as exc:
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    run_server(settings, host, port, console)
