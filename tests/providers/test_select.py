"""Choosing a provider: every configuration mistake is a clear ConfigError before any request."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import toolwire.cli.run  # noqa: F401  (registers the run command)
from toolwire.cli.app import app
from toolwire.core.errors import ConfigError
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.presets import is_private_url
from toolwire.providers.scripted import ScriptedProvider
from toolwire.providers.select import create_provider
from toolwire.providers.wire import HttpProvider

from .servers import KEY, FakeModel, loopback

ENV = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY, "GEMINI_API_KEY": KEY}


@pytest.mark.parametrize(
    ("name", "kind", "url"),
    [
        ("openai", OpenAIProvider, "https://api.openai.com/v1/chat/completions"),
        ("anthropic", AnthropicProvider, "https://api.anthropic.com/v1/messages"),
        (
            "gemini",
            GeminiProvider,
            "https://generativelanguage.googleapis.com/v1beta/models/m-1:generateContent",
        ),
    ],
)
def test_keys_come_from_the_environment(name: str, kind: type, url: str) -> None:
    provider = create_provider(name, model="m-1", environ=ENV)
    assert isinstance(provider, HttpProvider)
    assert type(provider) is kind
    assert (provider.name, provider.url(), provider.trust_zone) == (name, url, "external_global")
    assert KEY not in repr(provider)


def test_base_url_trust_zone_and_explicit_key() -> None:
    provider = create_provider(
        "openai",
        model="llama3",
        base_url="http://127.0.0.1:11434/v1/",
        api_key="local",
        trust_zone="local",
        environ={},
    )
    assert isinstance(provider, OpenAIProvider)
    assert (provider.url(), provider.trust_zone) == (
        "http://127.0.0.1:11434/v1/chat/completions",
        "local",
    )


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        (
            "mistrall",
            {"model": "m"},
            "unknown provider 'mistrall'; choose one of openai, openai-responses, anthropic, "
            "gemini, bedrock, llama-server, llama-cpp-python, litellm, ollama, vllm, lmstudio, "
            "openrouter, mistral, groq, deepseek, xai, together, fireworks, cerebras, "
            "azure-openai, azure-openai-responses, vertex, vertex-anthropic, scripted",
        ),
        ("openai", {"model": None}, "provider openai needs a model name (--model)"),
        ("gemini", {"model": "  "}, "provider gemini needs a model name (--model)"),
        ("openai", {"model": "m"}, "provider openai needs an API key: set OPENAI_API_KEY"),
        (
            "anthropic",
            {"model": "m", "api_key": " "},
            "provider anthropic needs an API key: set ANTHROPIC_API_KEY",
        ),
        ("gemini", {"model": "m"}, "provider gemini needs an API key: set GEMINI_API_KEY"),
        (
            "openrouter",
            {"model": "openai/gpt-4o"},
            "provider openrouter needs an API key: set OPENROUTER_API_KEY",
        ),
        (
            "openai",
            {"model": "m", "base_url": "https://llm.example.test/v1"},
            "provider openai needs an API key: set OPENAI_API_KEY",
        ),
        (
            "vllm",
            {"model": "m", "base_url": "https://vllm.example.test/v1"},
            "provider vllm needs an API key: set VLLM_API_KEY",
        ),
        (
            "ollama",
            {"model": "m", "base_url": "https://ollama.example.test/v1"},
            "ollama: an API key is required for https://ollama.example.test/v1",
        ),
        (
            "openai",
            {"model": "m", "api_key": KEY, "max_tokens_field": "max_output_tokens"},
            "max_tokens_field must be max_tokens or max_completion_tokens",
        ),
        (
            "openai",
            {"model": "m", "api_key": KEY, "base_url": "ftp://example.test"},
            "openai: base URL must be an http:// or https:// URL with a host",
        ),
        (
            "openai",
            {"model": "m", "api_key": KEY, "base_url": "https://example.test/v1?key=x"},
            "openai: base URL must not carry a query or fragment",
        ),
        (
            "openai",
            {"model": "m", "api_key": KEY, "trust_zone": "moon"},
            "unknown trust zone 'moon': choose one of local, private_hosted, external_eu, "
            "external_global",
        ),
        (
            "openai",
            {"model": "m", "api_key": KEY, "timeout": 0},
            "the provider timeout must be a positive number of seconds",
        ),
        ("scripted", {"model": None}, "the scripted provider needs a script (--script)"),
    ],
)
def test_configuration_mistakes(name: str, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        create_provider(name, environ={}, **kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert KEY not in str(caught.value)


PRESETS = {
    "ollama": ("http://127.0.0.1:11434/v1", "local", "max_tokens", "reasoning_effort"),
    "vllm": ("http://127.0.0.1:8000/v1", "local", "max_tokens", "reasoning_effort"),
    "lmstudio": ("http://127.0.0.1:1234/v1", "local", "max_tokens", "reasoning_effort"),
    "openrouter": ("https://openrouter.ai/api/v1", "external_global", "max_tokens", "reasoning"),
}


@pytest.mark.parametrize("name", PRESETS)
def test_presets_resolve_to_their_server_and_quirks(name: str) -> None:
    provider = create_provider(name, model="some-model", environ={"OPENROUTER_API_KEY": KEY})
    assert isinstance(provider, OpenAIProvider)
    settings = (provider.base_url, provider.trust_zone, provider.max_tokens_field,
                provider.reasoning_field)  # fmt: skip
    assert settings == PRESETS[name]
    assert (provider.name, provider.family, provider.url()) == (
        name,
        "openai",
        f"{PRESETS[name][0]}/chat/completions",
    )
    assert provider.pricing_family is None  # no price table lists "some-model"
    assert provider.headers(KEY if name == "openrouter" else "") == (
        {"authorization": f"Bearer {KEY}"} if name == "openrouter" else {}
    )


def test_preset_base_url_trust_zone_key_and_cap_field_are_overridable() -> None:
    provider = create_provider(
        "vllm",
        model="qwen3",
        base_url="http://gpu-box.local:9000/v1",
        trust_zone="private_hosted",
        max_tokens_field="max_completion_tokens",
        environ={"VLLM_API_KEY": "token-abc123"},
    )
    assert isinstance(provider, OpenAIProvider)
    assert (provider.url(), provider.trust_zone, provider.max_tokens_field) == (
        "http://gpu-box.local:9000/v1/chat/completions",
        "private_hosted",
        "max_completion_tokens",
    )
    assert provider.headers("token-abc123") == {"authorization": "Bearer token-abc123"}


def test_openrouter_is_priced_only_for_models_its_price_table_lists() -> None:
    env = {"OPENROUTER_API_KEY": KEY}
    listed = create_provider("openrouter", model="openai/gpt-4o", environ=env)
    unlisted = create_provider("openrouter", model="someone/unlisted-model", environ=env)
    assert isinstance(listed, OpenAIProvider) and isinstance(unlisted, OpenAIProvider)
    assert (listed.pricing_family, unlisted.pricing_family) == ("openrouter", None)


def test_the_openai_api_itself_keeps_its_price_table_and_cap_field() -> None:
    provider = create_provider("openai", model="gpt-4o", environ={"OPENAI_API_KEY": KEY})
    assert isinstance(provider, OpenAIProvider)
    assert (provider.pricing_family, provider.max_tokens_field) == (
        "openai",
        "max_completion_tokens",
    )
    local = create_provider(
        "openai", model="llama3", base_url="http://10.1.2.3:8080/v1", environ={}
    )
    assert isinstance(local, OpenAIProvider)
    assert (local.pricing_family, local.trust_zone, local.headers("")) == (
        None,
        "external_global",  # a key is not needed; the zone is still the caller's to lower
        {},
    )


@pytest.mark.parametrize(
    ("url", "private"),
    [
        ("http://127.0.0.1:11434/v1", True),
        ("http://127.8.9.10/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://localhost:1234/v1", True),
        ("http://LocalHost./v1", True),
        ("http://10.0.0.5/v1", True),
        ("http://172.16.0.1/v1", True),
        ("http://172.31.255.255/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://[fd12:3456::1]/v1", True),
        ("http://studio.local/v1", True),
        ("http://172.32.0.1/v1", False),
        ("http://11.0.0.1/v1", False),
        ("http://192.169.0.1/v1", False),
        ("http://[2001:db8::1]/v1", False),
        ("https://api.openai.com/v1", False),
        ("https://localhost.example.com/v1", False),
        ("https://local/v1", False),
    ],
)
def test_which_base_urls_need_no_key(url: str, private: bool) -> None:
    assert is_private_url(url) is private
    if private:
        assert isinstance(create_provider("openai", model="m", base_url=url, environ={}),
                          OpenAIProvider)  # fmt: skip
    else:
        with pytest.raises(ConfigError):
            create_provider("openai", model="m", base_url=url, environ={})


def test_the_adapter_itself_needs_a_key_only_off_private_networks() -> None:
    assert OpenAIProvider(model="m", base_url="http://192.168.0.9/v1").headers("") == {}
    with pytest.raises(ConfigError) as caught:
        OpenAIProvider(model="m", api_key="  ")
    assert str(caught.value) == "openai: an API key is required for https://api.openai.com/v1"


def test_scripted_provider_takes_a_trust_zone(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("- content: hello\n")
    provider = create_provider("scripted", model=None, script=script, trust_zone="external_eu")
    assert isinstance(provider, ScriptedProvider)
    assert provider.trust_zone == "external_eu"
    default = create_provider("scripted", model=None, script=script)
    assert isinstance(default, ScriptedProvider)
    assert default.trust_zone == "local"


def run_cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", *args], env={"OPENAI_API_KEY": None})
    return result.exit_code, result.output


def test_cli_openai_without_a_key_exits_1_with_a_clear_message() -> None:
    code, output = run_cli("hello", "--provider", "openai", "--model", "gpt-test")
    assert code == 1
    assert output == "error: provider openai needs an API key: set OPENAI_API_KEY\n"


def test_cli_openai_without_a_model_exits_1_with_a_clear_message() -> None:
    code, output = run_cli("hello", "--provider", "openai")
    assert (code, output) == (1, "error: provider openai needs a model name (--model)\n")


def test_cli_scripted_still_runs_a_script(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("- content: hello from the script\n")
    code, output = run_cli("hi", "--script", str(script))
    assert code == 0
    assert "hello from the script\n" in output
    assert "completed; 0 tokens" in output
    assert "Traceback" not in output


def test_cli_scripted_without_a_script_exits_1() -> None:
    code, output = run_cli("hi")
    assert (code, output) == (1, "error: the scripted provider needs a script (--script)\n")


@pytest.mark.parametrize("name", ["ollama", "vllm", "lmstudio"])
def test_cli_runs_a_local_preset_without_a_key(name: str) -> None:
    model = FakeModel(["hello from a local model"])
    with loopback(model) as base:
        code, output = run_cli(
            "hi", "--provider", name, "--model", "qwen3", "--base-url", f"{base}/v1"
        )
    assert code == 0, output
    assert "hello from a local model" in output
    body = model.captured[0].json()
    assert (body["model"], body["stream"]) == ("qwen3", True)
    assert "authorization" not in model.captured[0].headers
