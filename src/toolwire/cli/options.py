"""The options every command that starts a run takes: the provider (``--provider``,
``--model``, ``--base-url``, ``--trust-zone``, and ``--region`` for Bedrock), the tool choice,
reasoning, streaming, budgets, the privacy level.

``run``, ``demo``, ``serve`` and ``mcp`` take them from here, so they are spelled and checked
alike. Each bad value is a usage error naming the option and its choices (exit status 2),
before anything runs: the value's own parser (``PrivacyLevel.parse``, ``TrustZone.parse``...)
is asked, so the command line says what the rest of toolwire says.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import typer
from typer._click.exceptions import UsageError  # Typer's own Click
from typer._click.globals import get_current_context

from toolwire.core.errors import ConfigError
from toolwire.core.output import NAME as OUTPUT_NAME
from toolwire.core.output import OutputSchema
from toolwire.core.trust import TrustZone
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.aws_auth import checked_region
from toolwire.providers.base import Reasoning, parse_tool_choice
from toolwire.providers.presets import (
    PROVIDER_NAMES,
    MaxTokensField,
    check_provider_name,
    parse_fallback,
)


def usage_error(message: str) -> UsageError:
    """A usage error (exit status 2) found while a command runs: one line that still says
    where the command's help is."""
    return UsageError(message, ctx=get_current_context(silent=True))


def checked_by(parse: Callable[[str], object], option: str) -> Callable[[str | None], str | None]:
    """An option callback: ``parse`` must take the value; its ``ConfigError`` or
    ``ValueError`` becomes a usage error naming ``option``. The value is kept as given."""

    def check(value: str | None) -> str | None:
        if value is not None:
            try:
                parse(value)
            except (ConfigError, ValueError) as exc:
                raise typer.BadParameter(str(exc), param_hint=f"'{option}'") from None
        return value

    return check


EFFORTS = ("low", "medium", "high")
REASONING_HELP = "How hard the model thinks: low, medium, high, or a token budget N."


def parse_reasoning(value: str | None) -> Reasoning | None:
    """``low``/``medium``/``high`` or a whole number of tokens; None when not given."""
    if value is None:
        return None
    text = value.strip().lower()
    if text in EFFORTS:
        return Reasoning(effort=text)  # type: ignore[arg-type]  # narrowed by the check above
    if text.isdigit() and int(text) >= 1:
        return Reasoning(budget_tokens=int(text))
    raise typer.BadParameter(
        f"{value[:40]!r} is neither low, medium, high nor a token budget (a whole number >= 1)",
        param_hint="'--reasoning'",
    )


def form_reasoning(value: str | None) -> str | int | None:
    """``--reasoning`` as the run form takes it: a level, or a budget as a number."""
    reasoning = parse_reasoning(value)
    if reasoning is None:
        return None
    return reasoning.effort if reasoning.effort is not None else reasoning.budget_tokens


def _reasoning(value: str | None) -> str | None:
    parse_reasoning(value)  # refuse a bad value while the command line is parsed
    return value


def _dollars(value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise typer.BadParameter("a budget in dollars must be a positive number",
                                 param_hint="'--max-cost'")  # fmt: skip
    return value


ReasoningOption = Annotated[
    str | None,
    typer.Option("--reasoning", metavar="EFFORT", help=REASONING_HELP, callback=_reasoning),
]
NoStreamOption = Annotated[
    bool, typer.Option("--no-stream", help="Ask for the whole answer at once, not streamed.")
]
MaxTotalTokensOption = Annotated[
    int | None,
    typer.Option("--max-total-tokens", min=1, help="End the run once it has used N tokens."),
]
MaxCostOption = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        metavar="DOLLARS",
        help="End the run once it has cost DOLLARS.",
        callback=_dollars,
    ),
]
MaxEgressBytesOption = Annotated[
    int | None,
    typer.Option("--max-egress-bytes", metavar="BYTES", min=0,
                 help="Send the providers at most BYTES of tool output over the run (every "
                 "request, every copy); the request that would pass it is not sent."),
]  # fmt: skip
OnEgressLimitOption = Annotated[
    Literal["stop", "approve"] | None,
    typer.Option("--on-egress-limit", help="What passing an egress limit does: stop the run "
                 "(the default) or wait for a person's approval before the request goes; a "
                 "workspace that says stop wins."),
]  # fmt: skip
MaxTokensFieldOption = Annotated[
    MaxTokensField | None,
    typer.Option("--max-tokens-field", help="The output-cap field an OpenAI-compatible server "
                 "reads: max_tokens or max_completion_tokens."),
]  # fmt: skip
MaxTokensOption = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Cap each answer at N output tokens.")
]
MaxConcurrencyOption = Annotated[
    int | None,
    typer.Option("--max-concurrency", min=1, max=32, help="Calls of one turn in flight at once "
                 "(default 8; 1 runs them one after another)."),
]  # fmt: skip
ContextWindowOption = Annotated[
    int | None,
    typer.Option("--context-window", min=1, help="The model's context window in tokens; old "
                 "exchanges are dropped to fit it (default: the price table's, if it lists "
                 "the model)."),
]  # fmt: skip
MaxRemoteCallsOption = Annotated[
    int,
    typer.Option("--max-remote-calls", min=0,
                 help="Calls to remote (MCP) tools the run may make in all."),
]  # fmt: skip


def _tool_choice(value: str) -> str:
    try:
        return parse_tool_choice(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--tool-choice'") from None


def load_output_schema(path: Path) -> OutputSchema:
    """The JSON Schema in the file ``path`` (``--output-schema``); a ``ConfigError`` saying what
    is wrong with it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise ConfigError(f"cannot read {path}: {reason}") from None
    try:
        schema = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    name = path.stem if OUTPUT_NAME.fullmatch(path.stem) else "answer"
    try:
        return OutputSchema(schema, name)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _output_schema(value: Path | None) -> Path | None:
    if value is not None:
        try:
            load_output_schema(value)
        except ConfigError as exc:
            raise typer.BadParameter(str(exc), param_hint="'--output-schema'") from None
    return value


OutputSchemaOption = Annotated[
    Path | None,
    typer.Option("--output-schema", metavar="FILE", callback=_output_schema,
                 help="A JSON Schema file the final answer must match: asked of the model "
                 "natively, checked, asked again once (then the run ends output_invalid)."),
]  # fmt: skip
ProviderOption = Annotated[
    str,
    typer.Option("--provider", callback=checked_by(check_provider_name, "--provider"),
                 help="The model provider: " + ", ".join(PROVIDER_NAMES) + "."),
]  # fmt: skip


FallbackOption = Annotated[
    str | None,
    typer.Option("--fallback", metavar="NAME[,NAME...]",
                 callback=checked_by(parse_fallback, "--fallback"),
                 help="Providers to ask, in order, when the run's own fails in a way worth "
                 "another try (unreachable, 429, 5xx, a timeout): each a --provider name, or "
                 "NAME:MODEL; keys come from the environment. The run is offered only what "
                 "the least trusted of them may see."),
]  # fmt: skip
ModelOption = Annotated[
    str | None, typer.Option("--model", help="The model to ask (HTTP providers).")
]
BaseUrlOption = Annotated[
    str | None, typer.Option("--base-url", help="Another server speaking the provider's API.")
]


def _auth(value: str) -> object:
    from toolwire.providers.cloud import parse_auth  # the cloud routes load only when used

    return parse_auth(value)


DeploymentOption = Annotated[
    str | None,
    typer.Option("--deployment", help="The Azure OpenAI deployment (default: the --model "
                 "name)."),
]  # fmt: skip
ApiVersionOption = Annotated[
    str | None,
    typer.Option("--api-version", help="The Azure OpenAI API version, for the deployment URL "
                 "shape (default: OPENAI_API_VERSION; none: the v1 API)."),
]  # fmt: skip
RegionOption = Annotated[
    str | None,
    typer.Option("--region", callback=checked_by(checked_region, "--region"),
                 help="The AWS region (--provider bedrock; else AWS_REGION or the profile's)."),
]  # fmt: skip
# Azure's region names (westeurope, "West Europe") and Google Cloud's (europe-west4): words
# and hyphens, never a dot or a slash (an AWS region becomes part of a host name).
_CLOUD_REGION = re.compile(r"[A-Za-z0-9]+(?:[ -][A-Za-z0-9]+)*")


def cloud_region(value: str) -> str:
    """An AWS region, or a region name of Azure's or Google Cloud's; else the AWS check's
    ``ValueError``."""
    try:
        return checked_region(value)
    except ValueError:
        if _CLOUD_REGION.fullmatch(value.strip()):
            return value.strip()
        raise


RunRegionOption = Annotated[
    str | None,
    typer.Option("--region", callback=checked_by(cloud_region, "--region"),
                 help="The cloud region: Bedrock's AWS region (else AWS_REGION "
                 "or the profile's), Vertex AI's location (else GOOGLE_CLOUD_LOCATION), the "
                 "Azure resource's region (else AZURE_OPENAI_REGION); an EU region makes the "
                 "zone external_eu."),
]  # fmt: skip
ProjectOption = Annotated[
    str | None,
    typer.Option("--project", help="The Google Cloud project for Vertex AI (default: "
                 "GOOGLE_CLOUD_PROJECT)."),
]  # fmt: skip
AuthOption = Annotated[
    str | None,
    typer.Option("--auth", callback=checked_by(_auth, "--auth"), help="How azure-openai "
                 "signs in: key (AZURE_OPENAI_API_KEY) or entra (Microsoft Entra ID, "
                 "toolwire[azure])."),
]  # fmt: skip
ZONES = ", ".join(zone.value for zone in TrustZone)
TrustZoneOption = Annotated[
    str | None,
    typer.Option("--trust-zone", metavar="ZONE", callback=checked_by(TrustZone.parse,
                 "--trust-zone"), help=f"Where the model runs ({ZONES}); bounds which tools "
                 "it gets."),
]  # fmt: skip
LEVELS = ", ".join(level.value for level in PrivacyLevel)
PrivacyOption = Annotated[
    str,
    typer.Option("--privacy", metavar="LEVEL", callback=checked_by(PrivacyLevel.parse,
                 "--privacy"), help=f"What the store keeps of each run: {LEVELS}."),
]  # fmt: skip
ToolChoiceOption = Annotated[
    str,
    typer.Option("--tool-choice", callback=_tool_choice, help="What the model may do with the "
                 "tools: auto, none, required, or a tool's name (required and a name hold for "
                 "the first round)."),
]  # fmt: skip
