"""A tool's description goes to each API whole up to what that API takes, and cut to it past
that: OpenAI's 1,024 characters for the OpenAI family (its own API and the proxies that may
forward to it), the undocumented bound for Anthropic, Gemini and the local servers."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire import ChatMessage, CompletionRequest, ToolSpec
from toolwire.providers.presets import OPENAI_DESCRIPTION_CHARS, UNDOCUMENTED_DESCRIPTION_CHARS
from toolwire.providers.select import create_provider

SCHEMA = {"type": "object", "properties": {}}
ENV = {"OPENAI_API_KEY": "k" * 20, "ANTHROPIC_API_KEY": "k" * 20, "GEMINI_API_KEY": "k" * 20,
       "OPENROUTER_API_KEY": "k" * 20}  # fmt: skip


def sent_descriptions(name: str, description: str, base_url: str | None = None) -> list[str]:
    """The descriptions of the request's two tools as the ``name`` adapter encodes them."""
    provider: Any = create_provider(name, model="m", base_url=base_url, environ=ENV)
    tools = (ToolSpec("long", description, SCHEMA), ToolSpec("short", "Short.", SCHEMA))
    request = CompletionRequest(messages=(ChatMessage.user("hi"),), tools=tools)
    body = provider.encode(request)
    if name == "anthropic":
        return [t["description"] for t in body["tools"]]
    if name == "gemini":
        return [t["description"] for t in body["tools"][0]["functionDeclarations"]]
    return [t["function"]["description"] for t in body["tools"]]


@pytest.mark.parametrize(
    ("name", "base_url", "cap"),
    [
        ("openai", None, OPENAI_DESCRIPTION_CHARS),
        ("openai", "https://proxy.example.test/v1", OPENAI_DESCRIPTION_CHARS),
        ("openrouter", None, OPENAI_DESCRIPTION_CHARS),
        ("litellm", None, OPENAI_DESCRIPTION_CHARS),
        ("ollama", None, UNDOCUMENTED_DESCRIPTION_CHARS),
        ("llama-server", None, UNDOCUMENTED_DESCRIPTION_CHARS),
        ("anthropic", None, UNDOCUMENTED_DESCRIPTION_CHARS),
        ("anthropic", "https://proxy.example.test", UNDOCUMENTED_DESCRIPTION_CHARS),
        ("gemini", None, UNDOCUMENTED_DESCRIPTION_CHARS),
        ("gemini", "https://proxy.example.test/v1beta", UNDOCUMENTED_DESCRIPTION_CHARS),
    ],
)
def test_each_api_gets_descriptions_up_to_its_cap(name: str, base_url: str | None,
                                                   cap: int) -> None:  # fmt: skip
    fits = "d" * cap
    assert sent_descriptions(name, fits, base_url) == [fits, "Short."]
    long, short = sent_descriptions(name, "e" * (cap + 500), base_url)
    assert long == "e" * (cap - 1) + "\u2026" and short == "Short."


def test_a_description_openai_would_refuse_goes_whole_to_anthropic_and_gemini() -> None:
    text = "Reads records. " * 200  # 3,000 characters
    assert sent_descriptions("anthropic", text) == [text, "Short."]
    assert sent_descriptions("gemini", text) == [text, "Short."]
    (cut, _) = sent_descriptions("openai", text)
    assert len(cut) == OPENAI_DESCRIPTION_CHARS and text.startswith(cut[:-1])
