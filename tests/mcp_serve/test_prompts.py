"""The workspace's prompt templates as MCP prompts: listed, got with the host's arguments put
in, their choices completed; bad arguments are ``-32602`` naming what is wrong."""

from __future__ import annotations

import json

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from .kit import Host, handshake_and, raw_exchange, with_prompts

PROMPTS = """
[prompts.review_order]
description = "Review one order"
template = "Look at order {order_id} and report anything unusual, {style}. Keep {{braces}}."

[prompts.review_order.arguments.order_id]
description = "The order's id"
required = true

[prompts.review_order.arguments.style]
description = "How to answer"
choices = ["briefly", "in detail", "in bullet points"]

[prompts.greet]
description = "Say hello"
template = "Hello."
"""
REVIEW = types.PromptReference(type="ref/prompt", name="review_order")


def test_the_server_declares_prompts_and_completions_and_lists_the_prompts(host: Host) -> None:
    with_prompts(host, PROMPTS)
    messages = handshake_and({"method": "prompts/list"})
    answers = [json.loads(line) for line in raw_exchange(host, messages).splitlines()]
    capabilities = answers[0]["result"]["capabilities"]
    assert "prompts" in capabilities and capabilities["completions"] == {}
    listed = answers[1]["result"]["prompts"]
    assert [p["name"] for p in listed] == ["review_order", "greet"]
    assert listed[0]["description"] == "Review one order"
    assert listed[0]["arguments"] == [
        {"name": "order_id", "description": "The order's id", "required": True},
        {"name": "style", "description": "How to answer", "required": False},
    ]


def test_a_prompt_is_got_with_its_arguments_put_in_as_given(host: Host) -> None:
    with_prompts(host, PROMPTS)

    async def scenario() -> tuple[types.GetPromptResult, types.GetPromptResult]:
        async with host.session() as session:
            review = await session.get_prompt(
                "review_order", {"order_id": "{style} 42", "style": "briefly"}
            )
            return review, await session.get_prompt("greet")

    review, greet = anyio.run(scenario)
    (message,) = review.messages
    assert message.role == "user"
    assert message.content == types.TextContent(
        type="text",
        text="Look at order {style} 42 and report anything unusual, briefly. Keep {braces}.",
    )
    assert review.description == "Review one order"
    assert greet.messages[0].content == types.TextContent(type="text", text="Hello.")


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("review_order", {}, "prompt review_order needs the argument order_id"),
        ("review_order", {"order_id": "1", "tone": "x"},
         "prompt review_order has no argument 'tone'"),
        ("review_order", {"order_id": "1", "style": "loudly"},
         "argument style of prompt review_order is one of briefly, in detail, in bullet points, "
         "not 'loudly'"),
        ("nothing", {}, "Unknown prompt: 'nothing'"),
    ],
)  # fmt: skip
def test_bad_prompt_arguments_are_invalid_params_naming_them(
    host: Host, name: str, arguments: dict[str, str], said: str
) -> None:
    with_prompts(host, PROMPTS)

    async def scenario() -> MCPError:
        async with host.session() as session:
            with pytest.raises(MCPError) as raised:
                await session.get_prompt(name, arguments)
            return raised.value

    error = anyio.run(scenario)
    assert error.error.code == types.INVALID_PARAMS
    assert said in error.error.message


def test_a_prompt_arguments_choices_are_completed_by_what_was_typed(host: Host) -> None:
    with_prompts(host, PROMPTS)

    async def scenario() -> list[types.CompleteResult]:
        async with host.session() as session:
            return [
                await session.complete(REVIEW, {"name": "style", "value": value})
                for value in ("IN", "", "x")
            ] + [await session.complete(REVIEW, {"name": "order_id", "value": "4"})]

    typed_in, everything, nothing, free = anyio.run(scenario)
    assert typed_in.completion.values == ["in detail", "in bullet points"]
    assert (typed_in.completion.total, typed_in.completion.has_more) == (2, False)
    assert everything.completion.values == ["briefly", "in detail", "in bullet points"]
    assert nothing.completion.values == [] and free.completion.values == []


def test_a_workspace_without_prompts_lists_none(host: Host) -> None:
    async def scenario() -> types.ListPromptsResult:
        async with host.session() as session:
            return await session.list_prompts()

    assert anyio.run(scenario).prompts == []
