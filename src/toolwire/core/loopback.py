"""Which ``Host`` and ``Origin`` a server bound to loopback answers: DNS rebinding refused.

A page of another site can reach a loopback server under a name of its own that resolves to
loopback (DNS rebinding); its requests then carry that name in ``Host`` and the page's origin
in ``Origin``. So a server bound to loopback (``toolwire serve``, ``toolwire mcp --http``)
answers a request only when:

- its ``Host`` names the server by a loopback name (``LOOPBACK_NAMES``) or by the loopback
  address the connection arrived at (``127.0.0.2`` for a server bound there: any of
  ``127.0.0.0/8`` and ``::1``), with the port it arrived at (the scheme's default when none is
  written), case-insensitively; and
- its ``Origin``, when it has one, is ``http://`` or ``https://`` such a host and port.

A request with no ``Host`` is refused. The rule is one function each (:func:`allowed_host`,
:func:`allowed_origin`), so the inspector and the MCP endpoint cannot drift apart.
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Sequence
from typing import Any

LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
DEFAULT_PORTS = {"http": 80, "https": 443}
Server = Sequence[Any] | None  # an ASGI scope's ``server``: (address, port), None on a socket file


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or a name) is loopback: ``localhost`` or an address of
    ``127.0.0.0/8`` or ``::1``, brackets allowed."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def allowed_host(host: str, server: Server, scheme: str = "http") -> bool:
    """Whether a request's ``Host`` header value names this server (see the module)."""
    name, port = _split(host.strip().lower())
    return bool(name) and _names_this_server(name, port, server, scheme)


def allowed_origin(origin: str, server: Server) -> bool:
    """Whether a request's ``Origin`` header value is a loopback origin of this server."""
    try:
        parts = urllib.parse.urlsplit(origin.strip().lower())
        port = parts.port
    except ValueError:
        return False
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path:
        return False
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return _names_this_server(name, "" if port is None else str(port), server, parts.scheme)


def _names_this_server(name: str, port: str, server: Server, scheme: str) -> bool:
    arrived = _arrived_at(server)
    if name not in LOOPBACK_NAMES and (arrived is None or name != arrived):
        return False
    if server is None:
        return True  # a socket file: there is no port to name
    default = DEFAULT_PORTS.get(scheme, 80)
    return (port or str(default)) == str(server[1] or default)


def _arrived_at(server: Server) -> str | None:
    """The loopback address the connection arrived at, as a ``Host`` writes it."""
    if server is None or not isinstance(server[0], str) or not is_loopback(server[0]):
        return None
    address = server[0].lower()
    return f"[{address}]" if ":" in address else address


def _split(host: str) -> tuple[str, str]:
    """``("[::1]", "8765")`` from ``[::1]:8765``; the port is empty when none is given."""
    if host.endswith("]") or ":" not in host:
        return host, ""
    name, _, port = host.rpartition(":")
    return name, port
