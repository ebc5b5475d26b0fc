"""The ``toolwire`` command line. Each command family lives in its own module.

Layer: the top. May import every layer; nothing in the package imports it but
``__main__``.
"""

from __future__ import annotations

from toolwire.cli.app import app, main

__all__ = ["app", "main"]
