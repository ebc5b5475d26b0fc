"""Named OpenAI-compatible servers, what each server really needs, and which base URLs need no
key.

A preset is what ``--provider ollama`` (and the others) means: a base URL, the key variable if
the server takes one, the trust zone, and the server's :class:`Quirks`. Every field but the
quirks may be overridden by the caller (the output-cap field too).

The hosted vendors (Mistral, Groq, DeepSeek, xAI, Together, Fireworks, Cerebras) have presets
too: their base URL, the key variable their own SDK or docs read, their zone (Mistral's API is
its EU deployment; the others name no region), their quirks and their ``genai-prices`` table.
An unnamed server at one of their URLs (``--provider openai --base-url ...``) gets the same
quirks and table (``hosted_preset``); the zone stays the caller's.

Quirks are the one place where servers' differences live; the adapter reads them and nothing
else. Each preset's quirks are taken from the server's own source or the vendor's own SDK, API
spec or documentation, cited beside it (paths in the repository, or the page), never guessed;
where a vendor's docs are silent, the compatible default stays and the comment says so:
- ``tool_call_content``: what ``content`` is on a replayed assistant turn with tool calls and
  no text: ``"null"`` (OpenAI's documented shape), ``"absent"``, or ``"empty"`` (``""``).
- ``max_tokens_field``: ``max_completion_tokens`` for OpenAI's own API and the vendors that
  deprecate ``max_tokens`` (Groq, Cerebras); ``max_tokens`` for the others (local servers ignore
  the newer name, and Mistral refuses it).
- ``stream_usage``: whether to ask for ``stream_options.include_usage``. A server without the
  option either sends usage in a stream's last chunk unasked (Mistral, Fireworks: read all the
  same) or sends none, and the run's tokens are then unknown. A strict server refuses the
  option it does not know (Mistral: HTTP 422), so it is not sent there.
- ``streams_tool_calls``: False when the server answers a streamed request that offers tools
  with an empty event stream: such a request goes whole instead.
- ``named_tool_choice``: False when the server takes only ``auto|none|required``: a choice of
  one tool is sent as ``required`` with that tool alone offered.
- ``replays_reasoning``: True when an assistant turn's ``reasoning_content`` must go back with
  it (DeepSeek's thinking mode refuses a tool-call turn without it); the adapter keeps it as
  the turn's provider state, which only an adapter of the same family reads.
- ``description_chars``: the longest tool description the API takes; a longer one is cut
  (:func:`toolwire.providers.wire.tool_description`) so the request is not refused.

Servers that copy the Anthropic or Gemini API at another base URL (a LiteLLM proxy above all,
translating to an OpenAI-compatible server behind it) have quirks of their own, chosen by
``quirks_for(base_url, family)``:
- ``tool_use_text``: the text put beside the ``tool_use`` blocks of a replayed assistant turn
  that has none ("": nothing, as Anthropic's own API wants: it refuses empty text blocks).
- ``named_tool_choice`` (as above) for the Gemini format: False when the server drops
  ``allowedFunctionNames``: a choice of one tool is mode ANY with that tool alone offered.

Invariant: a base URL on a loopback or private address (127.0.0.0/8, ::1, localhost, 10/8,
172.16/12, 192.168/16, fc00::/7, ``*.local``) is a server the user runs; it needs no key, and no
``Authorization`` header is sent unless a key is given.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from toolwire.core.errors import ConfigError

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
ReasoningField = Literal["reasoning_effort", "reasoning"]
ToolCallContent = Literal["null", "absent", "empty"]

_PRIVATE_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in ("127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
)
_LOOKUP_CACHE = 256  # distinct (price table, model) pairs remembered as priceable or not
OPENAI_BASE_URL = "https://api.openai.com/v1"
# OpenAI refuses a function description over 1,024 characters (400 ``string_above_max_length``,
# "Invalid 'tools[0].function.description': string too long. Expected a string with maximum
# length 1024"); the servers that copy its API at another URL include proxies that forward to
# it (LiteLLM, Azure OpenAI), so the OpenAI family keeps that cap everywhere.
OPENAI_DESCRIPTION_CHARS = 1024
# Anthropic's Messages API (``tools[].description``) and Gemini's ``FunctionDeclaration.
# description`` document no limit, and both advise long, detailed descriptions. A description
# still goes out in every request of a run, so one a server lists is held to 16 KiB: four
# times the longest we have met from an MCP server, a few thousand tokens at most.
UNDOCUMENTED_DESCRIPTION_CHARS = 16_384


@dataclass(frozen=True, slots=True, kw_only=True)
class Quirks:
    """How one OpenAI-compatible server differs from the API it copies (see the module)."""

    max_tokens_field: MaxTokensField = "max_tokens"
    reasoning_field: ReasoningField = "reasoning_effort"
    tool_call_content: ToolCallContent = "empty"
    stream_usage: bool = True
    streams_tool_calls: bool = True
    named_tool_choice: bool = True
    replays_reasoning: bool = False
    tool_use_text: str = ""
    description_chars: int = UNDOCUMENTED_DESCRIPTION_CHARS


# OpenAI's own API: its documented shapes (openai-python ChatCompletionAssistantMessageParam:
# content optional beside tool_calls; max_completion_tokens replaces the deprecated max_tokens).
OPENAI_QUIRKS = Quirks(
    max_tokens_field="max_completion_tokens",
    tool_call_content="null",
    description_chars=OPENAI_DESCRIPTION_CHARS,
)
# Any other server behind ``--base-url``: the shapes every server whose source we read takes
# (``""`` beside tool calls is accepted by all of them; null is not: llama-cpp-python).
COMPATIBLE_QUIRKS = Quirks(description_chars=OPENAI_DESCRIPTION_CHARS)
# A server speaking the Messages API at another address. LiteLLM 1.108.7's ``/v1/messages``
# drops whitespace-only text blocks (litellm/llms/anthropic/common_utils.py
# strip_empty_content_blocks_from_anthropic_messages, run on every request) and then makes an
# assistant turn of tool_use blocks alone an OpenAI message without ``content``
# (litellm/llms/anthropic/pass_through/adapters/transformation.py
# translate_anthropic_messages_to_openai: content is the joined text blocks, else None), which
# an OpenAI-compatible server behind it may refuse (llama-cpp-python: HTTP 500). A text block
# of one zero-width space survives both (``str.strip`` keeps it) and becomes that content; a
# person reading the turn sees nothing, and the model one invisible character.
MESSAGES_COMPATIBLE_QUIRKS = Quirks(tool_use_text="\u200b")
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
# A server speaking generateContent at another address. LiteLLM 1.108.7 reads only the mode of
# ``functionCallingConfig`` (litellm/google_genai/adapters/transformation.py
# _transform_google_genai_tool_config_to_openai: AUTO, ANY, NONE to auto, required, none):
# ``allowedFunctionNames`` is dropped, so a choice of one tool must offer that tool alone.
GENERATE_CONTENT_COMPATIBLE_QUIRKS = Quirks(named_tool_choice=False)
GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"


def quirks_for(base_url: str, family: str = "openai") -> Quirks:
    """The quirks of an unnamed server speaking ``family``'s API at ``base_url``: the vendor's
    own (none: its documented shapes) at its URL, a hosted preset's at that preset's URL, the
    common compatible ones elsewhere."""
    url = base_url.rstrip("/")
    if family == "anthropic":
        return Quirks() if url == ANTHROPIC_BASE_URL else MESSAGES_COMPATIBLE_QUIRKS
    if family == "gemini":
        return Quirks() if url == GEMINI_BASE_URL else GENERATE_CONTENT_COMPATIBLE_QUIRKS
    if family != "openai":
        return Quirks()
    if url == OPENAI_BASE_URL:
        return OPENAI_QUIRKS
    hosted = hosted_preset(url)
    return COMPATIBLE_QUIRKS if hosted is None else hosted.quirks


def hosted_preset(base_url: str) -> Preset | None:
    """The hosted preset served at ``base_url``, if one is (a local preset's port may be any
    server's, so only a hosted one is known by its URL)."""
    url = base_url.rstrip("/")
    return next(
        (p for p in PRESETS.values() if p.base_url == url and not is_private_url(url)), None
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """An OpenAI-compatible server by name. ``key_variable`` None: the server takes no key
    unless one is given explicitly."""

    name: str
    base_url: str
    trust_zone: str
    key_variable: str | None = None
    quirks: Quirks = field(default_factory=Quirks)
    price_table: str | None = None  # a genai-prices provider id, checked per model

    @property
    def max_tokens_field(self) -> MaxTokensField:
        return self.quirks.max_tokens_field


PRESETS = {
    preset.name: preset
    for preset in (
        # llama.cpp's llama-server (tools/server): port 8080 by default (common/arg.cpp).
        # tool_choice is a string only, auto|none|required (common/chat.cpp
        # common_chat_tool_choice_parse_oaicompat; an object falls back to auto in
        # tools/server/server-common.cpp json_value); content null beside tool calls is taken
        # (common/chat.cpp common_chat_msgs_parse_oaicompat); include_usage is honoured.
        Preset(
            name="llama-server",
            base_url="http://127.0.0.1:8080/v1",
            trust_zone="local",
            quirks=Quirks(named_tool_choice=False),
        ),
        # llama-cpp-python's server (llama_cpp/server): port 8000 (server/settings.py).
        # The assistant message's content is NotRequired[str] (llama_cpp/llama_types.py
        # ChatCompletionRequestAssistantMessage): null or absent beside tool calls is a 500.
        # No stream_options field (server/types.py CreateChatCompletionRequest): no usage in
        # a stream. chatml-function-calling (llama_cpp/llama_chat_format.py) treats a missing
        # tool_choice as "no tools", supports a named one, and raises "Automatic streaming
        # tool choice is not supported" once a streamed auto turn calls a tool (an empty
        # event stream after 200).
        Preset(
            name="llama-cpp-python",
            base_url="http://127.0.0.1:8000/v1",
            trust_zone="local",
            quirks=Quirks(stream_usage=False, streams_tool_calls=False),
        ),
        # The local servers build the prompt from a description of any length (their chat
        # templates): they keep the undocumented bound.
        # LiteLLM's proxy: port 4000; its clients read LITELLM_PROXY_API_KEY
        # (litellm/llms/litellm_proxy). An empty text beside tool calls is dropped before an
        # Anthropic backend (litellm/litellm_core_utils/prompt_templates/factory.py), and
        # passed on to OpenAI-compatible ones, which take it.
        Preset(
            name="litellm",
            base_url="http://127.0.0.1:4000/v1",
            trust_zone="local",
            key_variable="LITELLM_PROXY_API_KEY",
            quirks=Quirks(description_chars=OPENAI_DESCRIPTION_CHARS),  # it may forward to OpenAI
        ),
        # Ollama: port 11434; content of any JSON type is taken beside tool calls, max_tokens
        # becomes num_predict, stream_options.include_usage is read, tool_choice is ignored
        # (openai/openai.go ChatCompletionRequest and FromChatRequest).
        Preset(name="ollama", base_url="http://127.0.0.1:11434/v1", trust_zone="local"),
        # vLLM's server reads its key from --api-key or VLLM_API_KEY; it takes every
        # tool_choice form (vllm/entrypoints/openai/protocol.py ChatCompletionRequest).
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
            quirks=Quirks(reasoning_field="reasoning", description_chars=OPENAI_DESCRIPTION_CHARS),
            price_table="openrouter",
        ),
        # Mistral (mistralai/client-python 2.5.0, src/mistralai/client/): the SDK's one server,
        # https://api.mistral.ai, is its "EU Production server" (sdkconfiguration.py SERVERS),
        # and each region is "a fully independent deployment with its own ... data boundary"
        # (https://mistral.ai/cloud/inference/); the key is MISTRAL_API_KEY (README.md). The
        # request has max_tokens and no stream_options (models/chatcompletionstreamrequest.py),
        # and the API refuses a field it does not know with HTTP 422 "extra_forbidden"
        # (mistralai/platform-docs-public issue 7); the last chunk carries usage unasked
        # (models/completionchunk.py usage). Content is nullable beside tool calls
        # (models/assistantmessage.py); tool_choice takes auto|none|any|required or a named
        # function (models/toolchoiceenum.py, toolchoice.py); reasoning_effort is a field
        # (models/reasoningeffort.py).
        Preset(
            name="mistral",
            base_url="https://api.mistral.ai/v1",
            trust_zone="external_eu",
            key_variable="MISTRAL_API_KEY",
            quirks=Quirks(tool_call_content="null", stream_usage=False),
            price_table="mistral",
        ),
        # Groq: https://api.groq.com/openai/v1 and GROQ_API_KEY
        # (https://console.groq.com/docs/openai). groq/groq-python
        # (src/groq/types/chat/completion_create_params.py): max_tokens is "Deprecated in
        # favor of max_completion_tokens"; reasoning_effort is a field; tool_choice takes
        # none|auto|required or a named function (chat_completion_tool_choice_option_param.py);
        # content may be None beside tool_calls (chat_completion_assistant_message_param.py);
        # a chunk has usage "when you set stream_options: {"include_usage": true}"
        # (chat_completion_chunk.py).
        Preset(
            name="groq",
            base_url="https://api.groq.com/openai/v1",
            trust_zone="external_global",
            key_variable="GROQ_API_KEY",
            quirks=Quirks(max_tokens_field="max_completion_tokens", tool_call_content="null"),
            price_table="groq",
        ),
        # DeepSeek: https://api.deepseek.com, DEEPSEEK_API_KEY and reasoning_effort beside
        # "thinking" (https://api-docs.deepseek.com/, "Your First API Call"). Its thinking mode
        # (on by default) caps output with max_tokens and answers reasoning_content, which
        # "must be passed back" on the assistant turns between two user messages once a tool
        # was called (https://api-docs.deepseek.com/guides/thinking_mode), else HTTP 400. The
        # docs read are silent on content beside tool calls, stream_options and the
        # tool_choice forms: the compatible defaults stay.
        Preset(
            name="deepseek",
            base_url="https://api.deepseek.com",
            trust_zone="external_global",
            key_variable="DEEPSEEK_API_KEY",
            quirks=Quirks(replays_reasoning=True),
            price_table="deepseek",
        ),
        # xAI: https://api.x.ai/v1 and XAI_API_KEY (https://docs.x.ai/api/integrations; also
        # xai-org/xai-sdk-python src/xai_sdk/client.py); Chat Completions caps output with
        # max_tokens (https://docs.x.ai/developers/model-capabilities/text/comparison). The docs
        # read are silent on content beside tool calls, stream_options and the tool_choice
        # forms: the compatible defaults stay.
        Preset(
            name="xai",
            base_url="https://api.x.ai/v1",
            trust_zone="external_global",
            key_variable="XAI_API_KEY",
            price_table="x-ai",
        ),
        # Together: TOGETHER_API_KEY (togethercomputer/together-python src/together/client.py).
        # Its OpenAPI spec (togethercomputer/openapi openapi.yaml) serves
        # https://api.together.ai/v1 (genai-prices still matches the older api.together.xyz);
        # ChatCompletionRequest has max_tokens, reasoning_effort and a tool_choice of a string
        # or an object, and no stream_options: the docs are silent on it, so the compatible
        # default stays (ChatCompletionChunk has a nullable usage, read whenever it comes).
        # The assistant message's content is nullable (ChatCompletionAssistantMessageParam).
        Preset(
            name="together",
            base_url="https://api.together.ai/v1",
            trust_zone="external_global",
            key_variable="TOGETHER_API_KEY",
            quirks=Quirks(tool_call_content="null"),
            price_table="together",
        ),
        # Fireworks: https://api.fireworks.ai/inference/v1; its streams carry usage in the last
        # chunk unasked (https://docs.fireworks.ai/tools-sdks/openai-compatibility).
        # fw-ai-external/python-sdk: FIREWORKS_API_KEY (src/fireworks/_client.py); in
        # src/fireworks/types/chat/completion_create_params.py max_completion_tokens is an
        # "Alias for max_tokens", reasoning_effort is a field and tool_choice takes
        # none|auto|required or a named function; content "may be null for assistant messages
        # with function calls" (types/shared_params/chat_message.py).
        Preset(
            name="fireworks",
            base_url="https://api.fireworks.ai/inference/v1",
            trust_zone="external_global",
            key_variable="FIREWORKS_API_KEY",
            quirks=Quirks(tool_call_content="null", stream_usage=False),
            price_table="fireworks",
        ),
        # Cerebras (Cerebras/cerebras-cloud-sdk-python): https://api.cerebras.ai and
        # CEREBRAS_API_KEY (src/cerebras/cloud/sdk/_client.py). In
        # src/cerebras/cloud/sdk/types/chat/completion_create_params.py max_tokens "is now
        # deprecated in favor of max_completion_tokens"; reasoning_effort, stream_options
        # (include_usage) and a tool_choice of none|auto|required or a named function are
        # fields; the assistant message's content may be None.
        Preset(
            name="cerebras",
            base_url="https://api.cerebras.ai/v1",
            trust_zone="external_global",
            key_variable="CEREBRAS_API_KEY",
            quirks=Quirks(max_tokens_field="max_completion_tokens", tool_call_content="null"),
            price_table="cerebras",
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
# OpenAI's Responses API (openai-python types/responses): ``POST {base_url}/responses`` with
# the same key and bearer header as Chat Completions (``toolwire.providers.responses``).
OPENAI_RESPONSES = Preset(
    name="openai-responses",
    base_url=OPENAI_BASE_URL,
    trust_zone="external_global",
    key_variable="OPENAI_API_KEY",
    quirks=Quirks(description_chars=OPENAI_DESCRIPTION_CHARS),
)
# The cloud routes to those APIs (``toolwire.providers.cloud``): their own endpoints and auth.
CLOUD_NAMES = ("azure-openai", "azure-openai-responses", "vertex", "vertex-anthropic")
# Every name --provider takes; bedrock signs with AWS credentials rather than a key.
PROVIDER_NAMES = (
    "openai",
    OPENAI_RESPONSES.name,
    *list(KEY_VARIABLES)[1:],
    "bedrock",
    *PRESETS,
    *CLOUD_NAMES,
    "scripted",
)


def check_provider_name(name: str) -> None:
    """A ``ConfigError`` naming the choices unless ``name`` is one of ``PROVIDER_NAMES``."""
    if name not in PROVIDER_NAMES:
        shown = name if len(name) <= 40 else name[:40] + "…"
        raise ConfigError(f"unknown provider {shown!r}; choose one of {', '.join(PROVIDER_NAMES)}")


def parse_fallback(value: str | None, where: str = "--fallback") -> list[tuple[str, str | None]]:
    """``--fallback NAME[,NAME...]`` (or a workspace's ``fallback``; ``where`` names which):
    each a provider name as ``--provider`` takes it, or ``NAME:MODEL`` (the model may hold
    colons of its own: ``ollama:llama3:8b``); without a model, the run's ``--model``. A
    ``ConfigError`` names a bad entry."""
    if value is None:
        return []
    chain: list[tuple[str, str | None]] = []
    for entry in value.split(","):
        name, colon, model = entry.strip().partition(":")
        if not name:
            raise ConfigError(f"{where} takes provider names separated by commas (NAME or "
                              "NAME:MODEL); one is empty")  # fmt: skip
        check_provider_name(name)
        if colon and not model.strip():
            raise ConfigError(f"{where} {name}: a model name after the colon is required")
        chain.append((name, model.strip() or None))
    return chain
