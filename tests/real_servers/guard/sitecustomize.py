"""Loaded by the real servers' interpreters (their PYTHONPATH): no connection but loopback.

Every attempt to resolve or reach another host is refused and written, one line each, to the
file TOOLWIRE_EGRESS_LOG names, so a test can show that a server never reached out (LiteLLM,
left to itself, fetches its cost map and sends telemetry).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from typing import Any

_LOG = os.environ.get("TOOLWIRE_EGRESS_LOG")
_LOCAL_NAMES = {"localhost", "", None}


def _local(host: Any) -> bool:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    if host in _LOCAL_NAMES or host == "0.0.0.0":
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(what: str) -> None:
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as log:
            log.write(what + "\n")


_getaddrinfo = socket.getaddrinfo
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if not _local(host):
        _refuse(f"resolve {host!r}")
        raise socket.gaierror(socket.EAI_NONAME, "egress refused in tests")
    return _getaddrinfo(host, *args, **kwargs)


def _guarded(real: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _local(address[0]):
            _refuse(f"connect {address!r}")
            raise OSError("egress refused in tests")
        return real(self, address)

    return connect


if _LOG:
    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = _guarded(_connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded(_connect_ex)  # type: ignore[method-assign]
