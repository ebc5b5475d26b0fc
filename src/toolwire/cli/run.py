"""``toolwire run`` and ``toolwire tools``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from toolwire.cli.app import app
from toolwire.cli.show import StepPrinter, safe
from toolwire.errors import ToolwireError
from toolwire.loop import MAX_ROUNDS, RunOptions, ToolLoop
from toolwire.messages import ChatMessage
from toolwire.providers.select import create_provider
from toolwire.tools.defaults import default_registry
from toolwire.trace import RunTrace


@app.command()
def run(
    prompt: Annotated[str, typer.Argument(help="What to ask the model.")],
    *,
    script: Annotated[
        Path | None,
        typer.Option("--script", help="A JSON or YAML script (needed with --provider scripted)."),
    ] = None,
    provider_name: Annotated[
        str, typer.Option("--provider", help="openai, anthropic, gemini or scripted.")
    ] = "scripted",
    model: Annotated[str | None, typer.Option(help="The model to ask (HTTP providers).")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="Another server speaking the same API.")
    ] = None,
    trust_zone: Annotated[
        str | None,
        typer.Option("--trust-zone", help="Where the model runs; bounds which tools it gets."),
    ] = None,
    system: Annotated[str | None, typer.Option(help="A system prompt.")] = None,
    max_rounds: Annotated[int, typer.Option(min=1, max=MAX_ROUNDS)] = 5,
    tool: Annotated[
        list[str] | None, typer.Option("--tool", help="Offer only these tools (repeatable).")
    ] = None,
) -> None:
    """Run one tool loop and show each step live, then the answer."""
    console = Console(highlight=False)
    try:
        provider = create_provider(
            provider_name, model=model, base_url=base_url, script=script, trust_zone=trust_zone
        )
        loop = ToolLoop(provider, default_registry())
        trace = RunTrace(observers=[StepPrinter(console)])
        messages = ([ChatMessage.system(system)] if system else []) + [ChatMessage.user(prompt)]
        options = RunOptions(max_rounds=max_rounds, allowed_tools=tool)
        result = loop.run_sync(messages, options=options, trace=trace)
    except ToolwireError as exc:
        console.print(Text(f"error: {safe(str(exc), None)}", style="red"))
        raise typer.Exit(1) from None
    status = f"{result.reason}" + (
        " (answer synthesised at the round cap)" if result.truncated else ""
    )
    console.print(Text(f"\n{status}; {result.usage.total_tokens} tokens", style="dim"))
    console.print(Text(safe(result.final_content, None)))


@app.command("tools")
def list_tools() -> None:
    """List the registered tools with their group and state."""
    console = Console(highlight=False)
    table = Table("tool", "group", "state", "why")
    for state in default_registry().states():
        why = (
            "group disabled"
            if not state.group_enabled
            else "overridden"
            if state.overridden
            else "default"
        )
        table.add_row(
            Text(safe(state.name, 80)),
            Text(safe(state.group, 40)),
            Text("enabled" if state.enabled else "disabled"),
            Text(why + (", admin only" if state.requires_admin else "")),
        )
    console.print(table)
