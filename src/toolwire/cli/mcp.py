"""``toolwire mcp``: serve the tools to MCP hosts over stdio, or streamable HTTP with ``--http``.

On stdio, stdout is the protocol channel: everything a person reads (the store line, warnings,
errors, the log) goes to stderr. Everything that can fail is checked before serving starts
(the trust zone, the workspace, the port, the token, the state key, a store that was asked
for), each as one error line. Calls are recorded in the store every command uses (or the one
in ``--data-dir``, as for the demo), and a call that needs an operator waits there for a
decision (see :mod:`toolwire.runs.held`): the state key is read, or created, where ``toolwire
serve`` and ``demo`` keep theirs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.keys import make_key
from toolwire.cli.options import ZONES, PrivacyOption, checked_by
from toolwire.cli.run import open_workspace, registry_for
from toolwire.cli.serve import check_port
from toolwire.cli.server import refuse_remote, remote_warning
from toolwire.cli.show import error, safe
from toolwire.cli.store import DataDirOption, DbOption, notices, open_store
from toolwire.core.errors import ToolwireError
from toolwire.core.loopback import is_loopback
from toolwire.core.trust import TrustZone
from toolwire.core.version import installed_version
from toolwire.policy.privacy import PrivacyLevel

if TYPE_CHECKING:
    from mcp.server import Server

    from toolwire.core.sealing import StateKey
    from toolwire.mcp.serve import ServedTools
    from toolwire.store import RunStore
    from toolwire.workspace.config import Workspace

DEFAULT_MCP_PORT = 8766  # beside the inspector's 8765
MAX_DECISION_SECONDS = 86_400  # a day: a call held longer is forgotten, not waited on


@app.command("mcp")
def mcp(
    *,
    workspace: Annotated[
        Path | None,
        typer.Option("--workspace", help="A workspace TOML file for the tools, or a folder "
                     "holding workspace.toml (the demo's)."),
    ] = None,
    trust_zone: Annotated[
        str | None,
        typer.Option("--trust-zone", metavar="ZONE", callback=checked_by(TrustZone.parse,
                     "--trust-zone"), help=f"Where the host's model runs ({ZONES}); bounds "
                     "which tools are served (default: external_global)."),
    ] = None,
    admin: Annotated[
        bool, typer.Option("--admin", help="Serve admin-only tools too.")
    ] = False,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP with a token, not stdio.")
    ] = False,
    host: Annotated[str, typer.Option(help="Interface to bind (with --http).")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=1, max=65535, help="Port (with --http).")
    ] = DEFAULT_MCP_PORT,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote", help="Allow a non-loopback --host.")
    ] = False,
    approval_timeout: Annotated[
        float,
        typer.Option("--approval-timeout", min=1, max=MAX_DECISION_SECONDS, help="Seconds a "
                     "call that needs an operator waits for a decision."),
    ] = 300,
    db: DbOption = None,
    data_dir: DataDirOption = None,
    privacy: PrivacyOption = PrivacyLevel.METADATA.value,
) -> None:  # fmt: skip
    """Serve the enabled tools to MCP hosts: content only, every call recorded."""
    from toolwire.store.engine import choose_store

    console = notices()
    if http:
        refuse_remote(host, allow_remote, console)
        check_port(host, port)
    store: RunStore | None = None
    try:
        token, made = _token() if http else ("", False)
        tools_workspace = open_workspace(workspace)
        key = make_key(data_dir)
        level = PrivacyLevel.parse(privacy)
        store = open_store(choose_store(db, folder=data_dir), level, announce=True)
        served = _served(store, tools_workspace, key, zone=trust_zone, admin=admin,
                         decision_seconds=approval_timeout, privacy=level)  # fmt: skip
    except ToolwireError as exc:
        if store is not None:
            store.close()
        error(console, safe(str(exc), None))
        raise typer.Exit(1) from None
    try:
        _serve(served, http=http, host=host, port=port, token=token, show_token=made)
    except KeyboardInterrupt:
        pass
    except Exception as exc:  # one line, never a traceback: the host reads stderr as a log
        error(console, f"the MCP server stopped: {type(exc).__name__}: {safe(str(exc), 200)}")
        raise typer.Exit(1) from None
    finally:
        if store is not None:
            store.close()


def _token() -> tuple[str, bool]:
    from toolwire.mcp.serve_http import token_from

    return token_from()


def _served(
    store: RunStore | None,
    workspace: Workspace | None,
    key: StateKey,
    *,
    zone: str | None,
    admin: bool,
    decision_seconds: float,
    privacy: PrivacyLevel,
) -> ServedTools:
    from toolwire.core.trust import TrustZone
    from toolwire.mcp.serve import ServedTools
    from toolwire.runs.runtime import Runtime
    from toolwire.tools.api import ToolContext, User

    runtime = Runtime(registry_for(notices(), store), recorder=store, state_key=key)
    if store is None:
        notices().print(Text("warning: without a store, calls that need an operator are "
                             "refused", style="yellow"), soft_wrap=True)  # fmt: skip
    return ServedTools(
        runtime=runtime,
        context=ToolContext(user=User("mcp", is_admin=admin), workspace=workspace),
        zone=TrustZone.parse(zone),
        states=store,
        holds=store is not None,
        decision_seconds=decision_seconds,
        privacy=privacy,
        runs=store,
    )


def _serve(
    served: ServedTools, *, http: bool, host: str, port: int, token: str, show_token: bool
) -> None:
    import anyio

    from toolwire.mcp.serve import build_server, serve_stdio

    server = build_server(served, installed_version())
    if not http:
        anyio.run(serve_stdio, server, served)
        return
    _serve_http(server, host, port, token, show_token)


def _serve_http(server: Server[Any], host: str, port: int, token: str, show_token: bool) -> None:
    import uvicorn

    from toolwire.cli.server import SHUTDOWN_SECONDS, bind
    from toolwire.mcp.serve_http import TOKEN_VARIABLE, endpoint_url, http_app

    console = notices()
    if not is_loopback(host):
        console.print(Text(remote_warning(safe(host, 80)), style="yellow"), soft_wrap=True)
    listener = bind(host, port)
    console.print(Text(f"toolwire mcp: serving {endpoint_url(host, port)}"), soft_wrap=True)
    if show_token:
        console.print(Text(f"token (send Authorization: Bearer <token>): {token}"),
                      soft_wrap=True)  # fmt: skip
    else:
        console.print(Text(f"token: the one in ${TOKEN_VARIABLE}"), soft_wrap=True)
    config = uvicorn.Config(
        http_app(server, token, host), log_level="warning",
        timeout_graceful_shutdown=SHUTDOWN_SECONDS,  # then calls in flight are cancelled
    )  # fmt: skip
    uvicorn.Server(config).run(sockets=[listener])
