"""Serving the inspector from the command line: bind, print the URL with its token, serve.

The token is printed once, in the URL's fragment (never sent to the server in a request line,
never logged by it); the page moves it to session storage. Binding to anything but loopback
exposes runs and tools to the network, so it needs ``--allow-remote``, and is served over plain
HTTP, so a warning says the token travels in clear. The socket is bound
before the URL is printed, so a busy port is an error, never a dead link.
"""

from __future__ import annotations

import dataclasses
import socket
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.show import error, safe
from toolwire.core.loopback import is_loopback

if TYPE_CHECKING:
    from toolwire.inspector import InspectorSettings

DEFAULT_PORT = 8765
# On Ctrl-C, open streams get this long to finish before the server stops them; then every
# running run is cancelled and settled (see ``inspector.stream.RunTasks``).
SHUTDOWN_SECONDS = 2


def inspector_url(host: str, port: int, token: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/#token={token}"


def refuse_remote(host: str, allow_remote: bool, console: Console) -> None:
    if not is_loopback(host) and not allow_remote:
        error(console, f"{safe(host, 80)} is not a loopback address; pass --allow-remote")
        raise typer.Exit(2)


def remote_warning(host: str) -> str:
    return (
        f"warning: serving on {host} over plain HTTP: the admin token, prompts and tool results "
        "cross the network unencrypted; put the inspector behind HTTPS (a TLS reverse proxy) "
        "or reach it through an SSH tunnel"
    )


def run_server(settings: InspectorSettings, host: str, port: int, console: Console) -> None:
    """Bind first (so a busy port is an error, not a dead URL), print the URL, serve.

    Binding beyond loopback was allowed with ``--allow-remote``: the server then answers to
    any ``Host`` name, and a warning says that plain HTTP carries the token in clear.
    """
    import uvicorn

    from toolwire.inspector import create_app

    if not is_loopback(host):
        settings = dataclasses.replace(settings, allow_remote=True)
    if settings.allow_remote:
        console.print(Text(remote_warning(safe(host, 80)), style="yellow"), soft_wrap=True)

    try:
        listener = bind(host, port)
    except OSError as exc:
        why = exc.strerror or str(exc)
        where = f"{safe(host, 80)}:{port}"
        error(console, f"cannot listen on {where}: {why}; choose another --port")
        raise typer.Exit(1) from None
    console.print(Text("toolwire inspector: open this URL (it holds your admin token):"))
    console.print(Text(inspector_url(host, port, settings.token), style="bold"), soft_wrap=True)
    config = uvicorn.Config(
        create_app(settings), log_level="warning", timeout_graceful_shutdown=SHUTDOWN_SECONDS
    )
    uvicorn.Server(config).run(sockets=[listener])


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except OSError:
        listener.close()
        raise
    return listener
