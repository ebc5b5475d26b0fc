"""The inspector: a local web playground that runs tool loops live and renders artifacts.

Start it with ``toolwire serve``; build it in code with ``create_app(InspectorSettings(...))``.

Layer: above the queue. May import every layer up to it; never the demo or the command
line.
"""

from toolwire.inspector.app import create_app
from toolwire.inspector.settings import (
    InspectorSettings,
    RunDefaults,
    new_token,
    provider_factory,
    scripted_factory,
)

__all__ = [
    "InspectorSettings",
    "RunDefaults",
    "create_app",
    "new_token",
    "provider_factory",
    "scripted_factory",
]
