"""Choosing a provider: every configuration mistake is a clear ConfigError before any request."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import toolwire.cli.run  # noqa: F401  (registers the run command)
from toolwire.cli.app import app
from toolwire.errors import ConfigError
from toolwire.providers.anthropic import AnthropicProvider
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.scripted import ScriptedProvider
from toolwire.providers.select import create_provider
from toolwire.providers.wire import HttpProvider

from .servers import KEY

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
            "mistral",
            {"model": "m"},
            "unknown provider 'mistral'; choose one of openai, anthropic, gemini, scripted",
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
            "unknown trust zone 'moon'; choose one of local, private_hosted, external_eu, "
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
    assert output.endswith("completed; 0 tokens\nhello from the script\n")
    assert "Traceback" not in output


def test_cli_scripted_without_a_script_exits_1() -> None:
    code, output = run_cli("hi")
    assert (code, output) == (1, "error: the scripted provider needs a script (--script)\n")
