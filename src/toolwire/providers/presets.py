"""Named OpenAI-compatible servers, and which base URLs need no key.

A preset is what ``--provider ollama`` (and the others) means: a base URL, the key variable if
the server takes one, the trust zone, and the server's quirks (the name of the output-cap field,
how it takes a reasoning request, which price table applies). Every field but the quirks may be
overridden by the caller.

Invariant: a base URL on a loopback or private address (127.0.0.0/8, ::1, localhost, 10/8,
172.16/12, 192.168/16, fc00::/7, ``*.local``) is a server the user runs; it needs no key, and no
``Authorization`` header is sent unless a key is given.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
ReasoningField = Literal["reasoning_effort", "reasoning"]

_PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in ("127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
_LOOKUP_CACHE = 256  # distinct (price table, model) pairs remembered as priceable or not


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """An OpenAI-compatible server by name. ``key_variable`` None: the server takes no key
    unless one is given explicitly."""

    name: str
    base_url: str
    trust_zone: str
    key_variable: str | None = None
    max_tokens_field: MaxTokensField = "max_tokens"
    reasoning_field: ReasoningField = "reasoning_effort"
    price_table: str | None = None  # a genai-prices provider id, checked per model


PRESETS = {
    preset.name: preset
    for preset in (
        Preset(name="ollama", base_url="http://127.0.0.1:11434/v1", trust_zone="local"),
        # vLLM's server reads its key from --api-key or VLLM_API_KEY.
        Preset(
            name="vllm",
            base_url="http://127.0.0.1:8000/v1",
            trust_zone="local",
            key_variable="VLLM_API_KEY",
        ),
        Preset(name="lmstudio", base_url="http://127.0.0.1:1234/v1", trust_zone="local"),
        Preset(
            name="openrouter",
            base_url="https://openrouter.ai/api/v1",
            trust_zone="external_global",
            key_variable="OPENROUTER_API_KEY",
            max_tokens_field="max_tokens",
            reasoning_field="reasoning",
            price_table="openrouter",
        ),
    )
}


def is_private_url(base_url: str) -> bool:
    """Whether ``base_url``'s host is loopback, on a private network, or a ``.local`` name."""
    try:
        host = (urlsplit(base_url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith((".localhost", ".local")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(address in network for network in _PRIVATE_NETWORKS)


@lru_cache(maxsize=_LOOKUP_CACHE)
def table_prices(price_table: str, model: str) -> bool:
    """Whether the genai-prices table ``price_table`` knows ``model``."""
    from genai_prices import Usage, calc_price

    try:
        calc_price(Usage(input_tokens=0, output_tokens=0), model, provider_id=price_table)
    except (LookupError, ValueError):
        return False
    return True


# Each hosted API and the variable its key comes from.
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
}
PROVIDER_NAMES = (*KEY_VARIABLES, *PRESETS, "scripted")  # every name --provider takes
