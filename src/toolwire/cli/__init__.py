"""The ``toolwire`` command line. Each command family lives in its own module."""

from __future__ import annotations

from toolwire.cli.app import app, main

__all__ = ["app", "main"]
