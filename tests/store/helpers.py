"""Runs to record: a scripted model, a couple of tools, and a runtime around a store."""

from __future__ import annotations

from typing import Any

from toolwire import Artifact, RunOptions, ScriptedProvider, ToolRegistry, ToolResult, tool
from toolwire.runs.runtime import RunOutcome, RunRecorder, RunRequest, Runtime


@tool(group="records", data_class="public")
def lookup(query: str) -> ToolResult:
    """Look something up."""
    return ToolResult.text(
        f"found {query}", Artifact.table("hits", ["query", "hit"], [[query, f"hit for {query}"]])
    )


def registry() -> ToolRegistry:
    return ToolRegistry([lookup])


def two_round_script(query: str = "orders", answer: str = "all done") -> ScriptedProvider:
    return ScriptedProvider.from_turns(
        [
            {
                "content": "checking",
                "tool_calls": [{"name": "lookup", "arguments": {"query": query}}],
            },
            {"content": answer, "prompt_tokens": 11, "completion_tokens": 5},
        ]
    )


def run(
    recorder: RunRecorder, provider: Any = None, prompt: str = "what?", **options: Any
) -> RunOutcome:
    request = RunRequest.of(
        prompt, provider=provider or two_round_script(), model="m-1", options=RunOptions(**options)
    )
    return Runtime(registry(), recorder=recorder).run_sync(request)
