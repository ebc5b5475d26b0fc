"""The Typer application; command modules register themselves on ``app`` when imported.

Conventions every command keeps: what a script reads (an answer, ``--json``) goes to stdout,
errors and warnings to stderr with a non-zero exit status; a boolean option is shown as a flag.
"""

from __future__ import annotations

import logging
from importlib import import_module
from typing import Annotated, Any

import typer

from toolwire.core.version import installed_version

app = typer.Typer(
    name="toolwire",
    help="Run LLM tool loops whose tool results are typed: text to the model, artifacts to you.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"toolwire {installed_version()}")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option("--version", help="Print the version and exit.", is_eager=True,
                     callback=_print_version),
    ] = False,
) -> None:  # fmt: skip
    """Run LLM tool loops whose tool results are typed: text to the model, artifacts to you."""


def load_commands() -> None:
    """Import every command module; each registers its commands on ``app``."""
    from toolwire.cli import demo, mcp, run, runs, serve, worker  # noqa: F401  (this order is --help's)

    import_module("toolwire.cli.decisions")  # the ``runs`` decision commands
    import_module("toolwire.cli.audit")
    import_module("toolwire.cli.export")  # ``runs export``
    import_module("toolwire.cli.examples")


def flags_as_flags(command: Any) -> Any:
    """Show every boolean flag (``--help`` included) as a bare flag, not ``--admin <bool>``.

    Typer's help gives each option a type column; a flag takes no value, so it gets none.
    (Typed ``Any``: Typer builds on its own copy of Click's classes.)"""
    params = [*command.params, command.get_help_option(typer.Context(command))]
    for param in params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    for child in getattr(command, "commands", {}).values():
        flags_as_flags(child)
    return command


def command() -> Any:
    """The whole command line, as ``main`` runs it."""
    load_commands()
    return flags_as_flags(typer.main.get_command(app))


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    command()(prog_name="toolwire")
