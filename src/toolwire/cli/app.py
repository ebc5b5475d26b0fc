"""The Typer application; command modules register themselves on ``app`` when imported."""

from __future__ import annotations

import logging
from importlib import import_module

import typer

app = typer.Typer(
    name="toolwire",
    help="Run LLM tool loops whose tool results are typed: text to the model, artifacts to you.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def load_commands() -> None:
    """Import every command module; each registers its commands on ``app``."""
    from toolwire.cli import demo, run, runs, serve  # noqa: F401  (this order is --help's)

    import_module("toolwire.cli.decisions")  # the ``runs`` decision commands


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    load_commands()
    app()
