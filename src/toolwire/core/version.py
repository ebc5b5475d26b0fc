"""The installed toolwire's version, as the command line, telemetry and MCP peers are told it."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    """The installed distribution's version; ``unknown`` in a source tree never installed."""
    try:
        return version("toolwire")
    except PackageNotFoundError:
        return "unknown"
