"""``toolwire examples [DIR]``: the example scripts and workspace files, written out of the package.

The scripts run over the demo workspace, so the command also creates it (or reuses it) in the
user data directory, or in ``--data-dir``, and prints its folder and commands that use both.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.keys import data_dir as user_data_dir
from toolwire.cli.show import error, safe
from toolwire.cli.store import notices
from toolwire.core.errors import ToolwireError

_TRY = (("shop.yaml", "Who are our customers?"), ("lookup.yaml", "What did customer 1 order?"))
_MCP_TRY = ("mcp.toml", "mcp-time.yaml", "What time is it in Tokyo?")


@app.command()
def examples(
    folder: Annotated[
        Path, typer.Argument(metavar="DIR", help="Where to write them (created if missing).")
    ] = Path("examples"),
    *,
    force: Annotated[
        bool, typer.Option("--force", help="Replace files that differ from the examples.")
    ] = False,
    data_dir: Annotated[
        Path | None,
        typer.Option(help="Where the demo workspace lives, as for toolwire demo --data-dir."),
    ] = None,
) -> None:
    """Write the example scripts and workspace files into DIR (default: ./examples).

    A file already there with other contents is refused unless --force.

    The scripts run over the demo workspace, which is created if missing.

    mcp.toml starts an MCP server installed on its own: pip install mcp-server-time."""
    from toolwire.demo import prepare_demo
    from toolwire.demo.example_files import NEEDS_INSTALL, write_examples

    console = Console(highlight=False, soft_wrap=True)  # paths and commands stay whole
    try:
        done = write_examples(folder, force=force)
        demo = prepare_demo(data_dir or user_data_dir())
    except ToolwireError as exc:
        error(notices(), safe(str(exc), None))
        raise typer.Exit(1) from None
    for name in done.written:
        console.print(Text(f"wrote {folder / name}"))
    for name in done.unchanged:
        console.print(Text(f"unchanged {folder / name}"))
    workspace = demo.root / "workspace.toml"
    console.print(Text(f"Demo workspace: {demo.root}"))
    console.print(Text("Try:"))
    for script, question in _TRY:
        console.print(Text("  " + _run_line(workspace, folder / script, question)))
    workspace_file, script, question = _MCP_TRY
    console.print(Text(f"{folder / workspace_file} starts an MCP server; install it first:"))
    console.print(Text(f"  {NEEDS_INSTALL[workspace_file]}"))
    console.print(
        Text("  " + _run_line(folder / workspace_file, folder / script, question, "--admin"))
    )


def _run_line(workspace: Path, script: Path, question: str, *extra: str) -> str:
    words = ["toolwire", "run", "--workspace", str(workspace), "--script", str(script)]
    return shlex.join([*words, *extra, question])
