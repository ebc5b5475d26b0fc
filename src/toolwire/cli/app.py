"""The Typer application; command modules register themselves on ``app`` when imported.

Conventions every command keeps (``docs/cli-conventions.md``): what a script reads (an answer,
``--json``) goes to stdout, errors and warnings to stderr. A bad command line is one
``error:`` line and exit status 2, before anything runs; a failure while running is one
``error:`` line and exit status 1; neither prints a traceback. A reader that stops reading
stdout (``| head -1``) does not stop the command: what it would still print is dropped, and
it ends as it would have. Help shows a flag bare and every value by a name (``PROMPT``,
``--db STORE``), never a type (``<str>``).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from importlib import import_module
from typing import Annotated, Any, TextIO

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError  # Typer's own Click

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
    import_module("toolwire.cli.egress")
    import_module("toolwire.cli.export")  # ``runs export``
    import_module("toolwire.cli.examples")
    import_module("toolwire.cli.mcp_login")


# What a value of each type is called in help when its option names no metavar of its own.
_TYPE_NAMES = {"int": "N", "float": "NUMBER", "path": "PATH"}
_VALIDATOR_PREFIX = "Value error, "
_TYPE_LABEL = re.compile(r"<(\w+)(?: range)?>")


def tidy_help(command: Any) -> Any:
    """Show every boolean flag (``--help`` included) bare, not ``--admin <bool>``, and every
    other value by a name: an argument by its own (``PROMPT``, never ``{prompt}``), an
    option by its metavar, else by its type's name (``N``) or its own (``--model MODEL``).

    (Typed ``Any``: Typer builds on its own copy of Click's classes.)"""
    context = typer.Context(command)
    for param in [*command.params, command.get_help_option(context)]:
        if getattr(param, "is_flag", False):
            param.metavar = ""
        elif param is not None and param.metavar is None:
            param.metavar = _value_name(param, context)
        if param is not None and param.param_type_name == "argument":
            shown = param.metavar if param.required else f"[{param.metavar}]"
            param.get_usage_pieces = lambda _context, shown=shown: [shown]
            param.display_type_rich = lambda ctx: None  # its name says it, in its own column
    for child in getattr(command, "commands", {}).values():
        tidy_help(child)
    return command


def _value_name(param: Any, context: Any) -> str:
    shown = str(param.display_type(context) or "")
    label = _TYPE_LABEL.fullmatch(shown)
    if label is not None and label[1] in _TYPE_NAMES and param.param_type_name == "option":
        return _TYPE_NAMES[label[1]]
    if label is None and "|" in shown:
        return "[" + shown.strip("<>") + "]"  # the choices
    if param.param_type_name == "option":
        return str(max(param.opts, key=len)).lstrip("-").replace("-", "_").upper()
    return str(param.name).upper()


def command() -> Any:
    """The whole command line, as ``main`` runs it."""
    load_commands()
    return tidy_help(typer.main.get_command(app))


def main() -> None:
    """Run the command line, each way it can end kept to the conventions (see the module)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sys.stdout = ReaderMayLeave(sys.stdout)
    try:
        code = command().main(prog_name="toolwire", standalone_mode=False)
    except NoArgsIsHelpError:  # the help was printed; no command was given
        code = 2
    except ClickException as exc:
        code = _refused(exc)
    except typer.Abort:
        sys.stderr.write("error: aborted\n")
        code = 1
    except Exception as exc:  # a fault of toolwire's own: one line here, the whole in the log
        logging.getLogger("toolwire.cli").debug("unexpected failure", exc_info=True)
        sys.stderr.write(f"error: unexpected {type(exc).__name__}: {_safe(str(exc))}\n")
        code = 1
    sys.stdout.flush()
    sys.exit(code if isinstance(code, int) else 0)


def _refused(exc: ClickException) -> int:
    """A bad command line as one ``error:`` line naming where help is; its exit status."""
    # A value Typer checks through pydantic (an enum, a Literal) reads without its prefix.
    message = _safe(exc.format_message()).replace(_VALIDATOR_PREFIX, "").removesuffix(".")
    context = getattr(exc, "ctx", None)
    hint = f" (see {context.command_path} --help)" if context is not None else ""
    sys.stderr.write(f"error: {message[:1].lower()}{message[1:]}{hint}\n")
    return exc.exit_code


def _safe(text: str) -> str:
    from toolwire.cli.show import safe

    return " ".join(safe(text, None).split())


class ReaderMayLeave:
    """stdout that outlives its reader: once the pipe is closed (``| head -1``), what is
    written is dropped, so the command carries on (a run completes and is stored) and ends
    as it would have, without a broken-pipe traceback."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._gone = False

    def write(self, text: str) -> int:
        if not self._gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._leave()
        return len(text)

    def flush(self) -> None:
        if not self._gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()

    def _leave(self) -> None:
        # What is still buffered goes nowhere, and so does Python's flush at exit.
        self._gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
