"""The inspector: a local web playground that runs tool loops live and renders artifacts.

Start it with ``toolwire serve``; build it in code with ``create_app(InspectorSettings(...))``.
"""

from toolwire.inspector.app import create_app
from toolwire.inspector.settings import InspectorSettings, new_token, scripted_factory

__all__ = ["InspectorSettings", "create_app", "new_token", "scripted_factory"]
