"""The hosts connected to one ``toolwire mcp``, and what each hears without asking.

- ``notifications/tools/list_changed``: while a host is connected, the tools the gate offers
  are read again every ``WATCH_SECONDS`` (tool states live in the store, where the inspector's
  Tools page writes them). A host whose last ``tools/list`` no longer matches is told once;
  its next ``tools/list`` shows the change.
- ``notifications/message``: a host that sets a level with ``logging/setLevel`` hears of each
  call at or above it (``debug``: it started, and its run ran, with the run's id; ``info``: its
  run waits for an operator, and it completed; ``warning``: it was refused or failed), as the
  server's privacy level allows (:func:`logged`): at ``none`` and ``metadata`` the tool's name
  (a name the gate does not know only as a digest), the outcome, the run's id, counts and
  lengths, never arguments or results. A host that sets no level hears nothing.

Both follow the handshake protocol versions (2025-11-25 and before), which hosts speak today.
A host that is gone is dropped the first time a notification to it fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.session import ServerSession
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolwire.policy.privacy import TOOL_CONTENT, PrivacyLevel, filter_step

log = logging.getLogger("toolwire.mcp")

WATCH_SECONDS = 1.0  # an operator's switch reaches hosts within a second; one store read
LOGGER = "toolwire"  # the logger name hosts show beside each message
LEVELS: tuple[types.LoggingLevel, ...] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
)  # fmt: skip
_STATE = "toolwire.host"  # where a connection keeps its host


@dataclass(eq=False)
class Host:
    """One connected host: how to reach it, the level it asked for, what it was last listed."""

    session: ServerSession
    level: types.LoggingLevel | None = None
    listed: tuple[str, ...] | None = None
    told: bool = False  # of a change since its last listing

    def hears(self, level: types.LoggingLevel) -> bool:
        return self.level is not None and LEVELS.index(level) >= LEVELS.index(self.level)


Offered = Callable[[], Awaitable[list[str]]]


class Hosts:
    """Every host connected to this server, and the watch that tells them of changes."""

    def __init__(self, offered: Offered, privacy: PrivacyLevel = PrivacyLevel.METADATA) -> None:
        self.offered = offered
        self.privacy = privacy
        self._hosts: list[Host] = []
        self._watch: asyncio.Task[None] | None = None

    def of(self, ctx: ServerRequestContext[Any]) -> Host:
        """The host behind a request or notification; a new one joins and is watched for.
        A request of the 2026-07-28 protocol is its own connection: its host joins nothing."""
        if ctx.session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return Host(session=ctx.session)
        # The SDK keeps per-connection state on the connection, which its handlers reach only
        # through the session; the host is kept there, and dropped when the connection closes.
        connection = ctx.session._connection
        host = connection.state.get(_STATE)
        if isinstance(host, Host):
            return host
        host = Host(session=ctx.session)
        connection.state[_STATE] = host
        connection.exit_stack.callback(self._leave, host)
        self._hosts.append(host)
        if self._watch is None:
            self._watch = asyncio.ensure_future(self._watching())
        return host

    def listed(self, ctx: ServerRequestContext[Any], names: list[str]) -> None:
        host = self.of(ctx)
        host.listed, host.told = tuple(names), False

    async def log(
        self, ctx: ServerRequestContext[Any], level: types.LoggingLevel, record: Mapping[str, Any]
    ) -> None:
        """``record`` as the privacy level allows, to the host of ``ctx`` if it hears ``level``;
        beside the request's answer (on its stream, over HTTP)."""
        host = self.of(ctx)
        if host.hears(level):
            await self._send(host, _message(level, logged(record, self.privacy)), ctx.request_id)

    async def check(self) -> None:
        """Tell every host whose listing is out of date, once."""
        names = tuple(await self.offered())
        for host in list(self._hosts):
            if host.listed is None or host.told or host.listed == names:
                continue
            host.told = True
            await self._send(host, types.ToolListChangedNotification())
            if host.hears("info"):
                record = {"event": "tools/list_changed", "tools_count": len(names)}
                await self._send(host, _message("info", record))

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch

    async def _watching(self) -> None:
        while self._hosts:
            await asyncio.sleep(WATCH_SECONDS)
            try:
                await self.check()
            except Exception:
                log.warning("the tool states could not be watched", exc_info=True)
        self._watch = None

    async def _send(
        self, host: Host, notification: types.ServerNotification, related: Any = None
    ) -> None:
        try:
            await host.session.send_notification(notification, related_request_id=related)
        except Exception:
            log.debug("a host could not be told; it is dropped", exc_info=True)
            self._leave(host)

    def _leave(self, host: Host) -> None:
        with contextlib.suppress(ValueError):
            self._hosts.remove(host)


def logged(record: Mapping[str, Any], privacy: PrivacyLevel) -> dict[str, Any]:
    """What a log message may carry of ``record`` at ``privacy``: the store's rule for a tool
    step (a name the gate offers is metadata; arguments and result are content)."""
    registered = frozenset([record["tool_name"]]) if record.get("registered") else frozenset()
    return filter_step(record, privacy, TOOL_CONTENT, registered)


def _message(
    level: types.LoggingLevel, data: Mapping[str, Any]
) -> types.LoggingMessageNotification:
    params = types.LoggingMessageNotificationParams(level=level, data=dict(data), logger=LOGGER)
    return types.LoggingMessageNotification(params=params)
