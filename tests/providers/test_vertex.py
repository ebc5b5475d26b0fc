"""Vertex AI (``--provider vertex``): the Gemini adapter at a project's regional endpoint, over
loopback servers that let in only a bearer token the credential minted, at the path and query
Vertex serves.

Three-round tool runs go through ``toolwire run``, streamed and whole, signed in with real
Application Default Credentials: google-auth reads a service-account file whose token URI is a
loopback endpoint, signs its JWT grant and gets the token there. Token refresh, the regional
roots, the region's zone, missing settings and masking are checked on the adapter and through
``create_provider``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import toolwire.cli.run  # noqa: F401  (registers the run command)
from toolwire import ChatMessage, CompletionRequest, ToolLoop, ToolRegistry, tool
from toolwire.cli.app import app
from toolwire.core.errors import AuthenticationError, ConfigError
from toolwire.core.messages import ProviderState
from toolwire.core.trust import TrustZone
from toolwire.demo import prepare_demo
from toolwire.loop.loop import RunOptions, TerminationReason
from toolwire.providers.cloud import CloudSettings
from toolwire.providers.gemini import GeminiProvider
from toolwire.providers.http import HttpSettings
from toolwire.providers.select import create_provider
from toolwire.providers.tokens import REFRESH_MARGIN_SECONDS, GoogleToken
from toolwire.providers.vertex import (
    VertexAnthropicProvider,
    VertexGeminiProvider,
    VertexLocation,
    regional_root,
)

from .clouds import (
    DEMO_THREE_ROUNDS,
    Clock,
    CloudDoor,
    DoorModel,
    TokenIssuer,
    door_loopback,
    google_credentials,
    minted,
    service_account_file,
    token_endpoint,
)
from .conversation import REQUEST
from .servers import no_sleep
from .test_anthropic_sdk import validate_request as validate_messages
from .test_gemini_sdk import validate_request

PROJECT, REGION, MODEL = "tw-project-1", "europe-west4", "gemini-2.5-flash"
MODEL_PATH = f"/v1/projects/{PROJECT}/locations/{REGION}/publishers/google/models/{MODEL}"
BARE_ENV = {"GOOGLE_CLOUD_PROJECT": None, "GOOGLE_CLOUD_LOCATION": None,
            "GOOGLE_APPLICATION_CREDENTIALS": None}  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(prepare_demo(tmp_path_factory.mktemp("shop") / "shop").root / "workspace.toml")


def tw(tmp_path: Path, workspace: str, env: Mapping[str, str | None], *args: str) -> Any:
    argv = ["run", "What does the shop sell?", "--provider", "vertex", "--workspace",
            workspace, "--db", str(tmp_path / "runs.db"), "--privacy", "full", *args]  # fmt: skip
    return CliRunner().invoke(app, argv, env={**BARE_ENV, "TOOLWIRE_DB": None, **env})


def stored(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))


# -- through the CLI, with Application Default Credentials ---------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_three_round_run_with_application_default_credentials(
    tmp_path: Path, workspace: str, stream: bool
) -> None:
    issuer = TokenIssuer()
    model = DoorModel(DEMO_THREE_ROUNDS, CloudDoor(bearer_of=issuer.issued))
    if stream:
        model.door.query = {"alt": "sse"}
    with door_loopback(model) as root, token_endpoint(issuer) as tokens:
        adc = service_account_file(tmp_path, tokens)
        env = {"GOOGLE_APPLICATION_CREDENTIALS": str(adc), "GOOGLE_CLOUD_PROJECT": PROJECT,
               "GOOGLE_CLOUD_LOCATION": REGION}  # fmt: skip
        done = tw(tmp_path, workspace, env, "--model", MODEL, "--base-url", root,
                  *([] if stream else ["--no-stream"]))  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "The shop sells products." in done.output
    method = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    assert [c.path for c in model.captured] == [MODEL_PATH + method] * 3
    assert model.door.refused == []
    assert len(issuer.issued) == 1  # one token for the run's three rounds
    bodies = [c.json() for c in model.captured]
    for body in bodies:
        validate_request(body)
    responses = [p["functionResponse"] for c in bodies[2]["contents"] for p in c["parts"]
                 if "functionResponse" in p]  # fmt: skip
    assert [r["name"] for r in responses] == ["list_tables", "get_table_schema"]
    assert "list_tables" in {d["name"] for d in bodies[0]["tools"][0]["functionDeclarations"]}
    assert issuer.issued[0] not in done.output
    assert issuer.issued[0].encode() not in stored(tmp_path)


def test_the_cli_takes_project_and_region_as_options(tmp_path: Path, workspace: str) -> None:
    issuer = TokenIssuer()
    model = DoorModel(["Hello."], CloudDoor(bearer_of=issuer.issued))
    with door_loopback(model) as root, token_endpoint(issuer) as tokens:
        adc = service_account_file(tmp_path, tokens)
        done = tw(tmp_path, workspace, {"GOOGLE_APPLICATION_CREDENTIALS": str(adc)}, "--model",
                  MODEL, "--base-url", root, "--project", "other-project", "--region",
                  "us-central1", "--no-stream")  # fmt: skip
    assert done.exit_code == 0, done.output
    (sent,) = model.captured
    assert sent.path == ("/v1/projects/other-project/locations/us-central1/publishers/google/"
                         f"models/{MODEL}:generateContent")  # fmt: skip
    offered = {d["name"] for d in sent.json()["tools"][0]["functionDeclarations"]}
    assert "list_tables" not in offered  # us-central1 is external_global: configuration stays


@pytest.mark.parametrize(
    ("env", "args", "said"),
    [({}, ["--model", MODEL, "--region", REGION],
      "provider vertex needs a Google Cloud project: --project or set GOOGLE_CLOUD_PROJECT"),
     ({"GOOGLE_CLOUD_PROJECT": PROJECT}, ["--model", MODEL],
      "provider vertex needs a region (europe-west4, us-central1, global...): --region or set "
      "GOOGLE_CLOUD_LOCATION"),
     ({"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION}, [],
      "provider vertex needs a model name (--model)"),
     ({"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION},
      ["--model", MODEL, "--auth", "entra"],
      "provider vertex signs in with Application Default Credentials; --auth is for "
      "azure-openai")],
)  # fmt: skip
def test_the_cli_names_a_missing_setting_and_its_variable(
    tmp_path: Path, workspace: str, env: dict[str, str], args: list[str], said: str
) -> None:
    done = tw(tmp_path, workspace, env, *args)
    assert done.exit_code == 1
    assert f"error: {said}" in " ".join(done.output.split())


def test_missing_default_credentials_are_an_error_saying_how_to_get_them(tmp_path: Path) -> None:
    source = GoogleToken()
    missing = str(tmp_path / "no-such-adc.json")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GOOGLE_APPLICATION_CREDENTIALS", missing)
        with pytest.raises(AuthenticationError) as caught:
            asyncio.run(source.token())
    assert str(caught.value) == (
        "vertex: no Application Default Credentials: run `gcloud auth application-default "
        "login` or set GOOGLE_APPLICATION_CREDENTIALS"
    )


# -- URLs --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("region", "root"),
    [("europe-west4", "https://europe-west4-aiplatform.googleapis.com"),
     ("us-central1", "https://us-central1-aiplatform.googleapis.com"),
     ("global", "https://aiplatform.googleapis.com"),
     ("eu", "https://aiplatform.eu.rep.googleapis.com"),
     ("us", "https://aiplatform.us.rep.googleapis.com")],
)  # fmt: skip
def test_each_region_has_its_root(region: str, root: str) -> None:
    assert regional_root(region) == root
    location = VertexLocation.of(PROJECT, region)
    assert location.model_url("google", MODEL, "generateContent") == (
        f"{root}/v1/projects/{PROJECT}/locations/{region}/publishers/google/models/"
        f"{MODEL}:generateContent"
    )


def test_the_adapter_calls_generate_and_stream_generate_content() -> None:
    provider = vertex_provider({"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION})
    root = "https://europe-west4-aiplatform.googleapis.com"
    assert provider.url() == f"{root}{MODEL_PATH}:generateContent"
    assert provider.stream_url() == f"{root}{MODEL_PATH}:streamGenerateContent?alt=sse"
    assert provider.base_url == f"{root}/v1/projects/{PROJECT}/locations/{REGION}"
    assert provider.name == "vertex"


@pytest.mark.parametrize("name", ["vertex", "vertex-anthropic"])
def test_the_stored_base_url_reaches_the_same_place_from_another_environment(name: str) -> None:
    """What a run stores (its provider's base URL) names project and region: a process with
    other settings, or none, resumes it at the same URL and in the same zone."""
    here = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION}
    provider = create_provider(name, model=MODEL, environ=here)
    assert isinstance(provider, VertexGeminiProvider | VertexAnthropicProvider)
    elsewhere = {"GOOGLE_CLOUD_PROJECT": "other", "GOOGLE_CLOUD_LOCATION": "us-central1"}
    for environ in ({}, elsewhere):
        again = create_provider(name, model=MODEL, environ=environ,
                                base_url=provider.base_url)  # fmt: skip
        assert isinstance(again, VertexGeminiProvider | VertexAnthropicProvider)
        assert (again.url(), again.stream_url()) == (provider.url(), provider.stream_url())
        assert again.trust_zone is provider.trust_zone is TrustZone.EXTERNAL_EU


@pytest.mark.parametrize(
    ("project", "region", "said"),
    [("my project", REGION, "vertex: project 'my project' is not a Google Cloud project"),
     (PROJECT, "europe/west4", "vertex: region 'europe/west4' is not a Google Cloud region")],
)  # fmt: skip
def test_a_malformed_project_or_region_is_refused(project: str, region: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        VertexLocation.of(project, region)


# -- the region's zone ---------------------------------------------------------------------------


def vertex_provider(environ: dict[str, str], **given: Any) -> VertexGeminiProvider:
    cloud = CloudSettings(**{k: given.pop(k) for k in list(given) if k in ("region", "project")})
    provider = create_provider("vertex", model=given.pop("model", MODEL), environ=environ,
                               cloud=cloud, **given)  # fmt: skip
    assert isinstance(provider, VertexGeminiProvider)
    return provider


@pytest.mark.parametrize(
    ("region", "zone"),
    [("europe-west4", TrustZone.EXTERNAL_EU), ("europe-west1", TrustZone.EXTERNAL_EU),
     ("eu", TrustZone.EXTERNAL_EU), ("europe-west2", TrustZone.EXTERNAL_GLOBAL),
     ("europe-west6", TrustZone.EXTERNAL_GLOBAL), ("us-central1", TrustZone.EXTERNAL_GLOBAL),
     ("global", TrustZone.EXTERNAL_GLOBAL)],
)  # fmt: skip
def test_the_zone_follows_the_region(region: str, zone: TrustZone) -> None:
    assert vertex_provider({"GOOGLE_CLOUD_PROJECT": PROJECT}, region=region).trust_zone is zone
    environ = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": region}
    assert vertex_provider(environ).trust_zone is zone


def test_azure_s_settings_given_to_vertex_are_named() -> None:
    environ = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION}
    with pytest.raises(ConfigError, match="--deployment or --api-version is for azure-openai"):
        create_provider("vertex", model=MODEL, environ=environ,
                        cloud=CloudSettings(api_version="2024-10-21"))  # fmt: skip


def test_an_explicit_zone_wins_over_the_region() -> None:
    environ = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": "us-central1"}
    assert vertex_provider(environ, trust_zone="external_eu").trust_zone is TrustZone.EXTERNAL_EU


# -- the body is Gemini's; the token is refreshed and never shown ---------------------------------


def test_the_body_is_the_gemini_adapter_s_and_valid_for_the_sdk() -> None:
    state = ProviderState("gemini", {"parts": [{"text": "Checking.", "thoughtSignature": "c2ln"}]})
    request = CompletionRequest(messages=(*REQUEST.messages[:2], ChatMessage.user("Hi"),
                                          ChatMessage.assistant("Checking.", [], state),
                                          ChatMessage.user("And?")))  # fmt: skip
    provider = vertex_provider({"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION})
    for asked in (REQUEST, request):
        body = provider.encode(asked)
        assert body == GeminiProvider(model=MODEL, api_key="k").encode(asked)
        validate_request(body)
    replayed = provider.encode(request)["contents"][1]["parts"]
    assert replayed == [{"text": "Checking.", "thoughtSignature": "c2ln"}]  # Gemini's state


@tool(group="demo", data_class="public")
def slow_lookup(city: str) -> str:
    """A lookup that takes the better part of an hour (the test's clock says so)."""
    CLOCK.now += 3600 - REFRESH_MARGIN_SECONDS + 1
    return f"{city}: rain"


CLOCK = Clock()


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_an_expiring_token_is_refreshed_before_the_next_round(stream: bool) -> None:
    CLOCK.now = 1_800_000_000.0
    credentials, issued = google_credentials(lifetime=3600, clock=CLOCK)
    turns: list[Any] = [[("slow_lookup", {"city": "Oslo"})], [("slow_lookup", {"city": "Bergen"})],
                        "Rain."]  # fmt: skip
    model = DoorModel(turns, CloudDoor(bearer_of=issued))
    with door_loopback(model) as root:
        provider = VertexGeminiProvider(
            model=MODEL, location=VertexLocation.of(PROJECT, REGION, root),
            token_source=GoogleToken(credentials, clock=CLOCK),
            http=HttpSettings(sleep=no_sleep, timeout=10),
        )  # fmt: skip
        loop = ToolLoop(provider, ToolRegistry([slow_lookup]))
        result = loop.run_sync([ChatMessage.user("Weather?")], options=RunOptions(stream=stream))
    assert result.reason is TerminationReason.COMPLETED and result.final_content == "Rain."
    assert len(issued) == 3
    sent = [{k.lower(): v for k, v in c.headers.items()}["authorization"] for c in model.captured]
    assert sent == [f"Bearer {t}" for t in issued]
    assert model.door.refused == []


def test_a_refused_token_is_masked_in_the_error_and_in_reprs() -> None:
    credentials, issued = google_credentials()
    model = DoorModel(["never"], CloudDoor(bearer_of=["another-token"]))
    with door_loopback(model) as root:
        source = GoogleToken(credentials)
        provider = VertexGeminiProvider(
            model=MODEL, location=VertexLocation.of(PROJECT, REGION, root), token_source=source,
            http=HttpSettings(sleep=no_sleep, timeout=10),
        )  # fmt: skip
        with pytest.raises(AuthenticationError) as caught:
            asyncio.run(provider.complete(CompletionRequest(messages=(ChatMessage.user("hi"),))))
    (token,) = issued
    assert token in model.door.refused[0]
    for shown in (str(caught.value), repr(caught.value), caught.value.body, repr(provider),
                  repr(source), repr(CloudSettings(credential=credentials))):  # fmt: skip
        assert token not in shown
    assert caught.value.__cause__ is None


def test_credentials_that_cannot_give_a_token_are_refused() -> None:
    environ = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION}
    with pytest.raises(ConfigError, match="vertex: credentials must be google-auth credentials"):
        create_provider("vertex", model=MODEL, environ=environ,
                        cloud=CloudSettings(credential=minted("not-credentials")))  # fmt: skip


# -- Claude on Vertex ---------------------------------------------------------------------------

CLAUDE = "claude-sonnet-4-5@20250929"
CLAUDE_PATH = f"/v1/projects/{PROJECT}/locations/{REGION}/publishers/anthropic/models/{CLAUDE}"


def anthropic_checked(body: dict[str, Any]) -> None:
    """The body is the Messages API's less ``model``, plus Vertex's ``anthropic_version``."""
    assert body["anthropic_version"] == "vertex-2023-10-16" and "model" not in body
    rest = {k: v for k, v in body.items() if k != "anthropic_version"}
    validate_messages({**rest, "model": CLAUDE})


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_claude_runs_three_rounds_on_vertex(tmp_path: Path, workspace: str, stream: bool) -> None:
    issuer = TokenIssuer()
    model = DoorModel(DEMO_THREE_ROUNDS, CloudDoor(bearer_of=issuer.issued))
    with door_loopback(model) as root, token_endpoint(issuer) as tokens:
        adc = service_account_file(tmp_path, tokens)
        env = {"GOOGLE_APPLICATION_CREDENTIALS": str(adc), "GOOGLE_CLOUD_PROJECT": PROJECT,
               "GOOGLE_CLOUD_LOCATION": REGION}  # fmt: skip
        argv = ["run", "What does the shop sell?", "--provider", "vertex-anthropic", "--model",
                CLAUDE, "--base-url", root, "--workspace", workspace, "--db",
                str(tmp_path / "runs.db"), *([] if stream else ["--no-stream"])]  # fmt: skip
        done = CliRunner().invoke(app, argv, env={**BARE_ENV, "TOOLWIRE_DB": None, **env})
    assert done.exit_code == 0, done.output
    assert "The shop sells products." in done.output
    method = ":streamRawPredict" if stream else ":rawPredict"
    assert [c.path for c in model.captured] == [CLAUDE_PATH + method] * 3
    assert model.door.refused == [] and len(issuer.issued) == 1
    bodies = [c.json() for c in model.captured]
    for body in bodies:
        anthropic_checked(body)
    assert all(body.get("stream", False) is stream for body in bodies)
    results = [b["content"] for m in bodies[2]["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b["type"] == "tool_result"]  # fmt: skip
    assert results[0].startswith("Tables:") and "products" in results[1]
    assert issuer.issued[0] not in done.output


def test_claude_s_body_is_the_anthropic_adapter_s_with_its_thinking_replayed() -> None:
    from toolwire.providers.anthropic import AnthropicProvider

    environ = {"GOOGLE_CLOUD_PROJECT": PROJECT, "GOOGLE_CLOUD_LOCATION": REGION}
    provider = create_provider("vertex-anthropic", model=CLAUDE, environ=environ)
    assert isinstance(provider, VertexAnthropicProvider)
    assert provider.url() == f"https://{REGION}-aiplatform.googleapis.com{CLAUDE_PATH}:rawPredict"
    assert provider.trust_zone is TrustZone.EXTERNAL_EU and provider.headers("") == {}
    thinking = [{"type": "thinking", "thinking": "Hm.", "signature": "c2ln"},
                {"type": "text", "text": "Checking."}]  # fmt: skip
    turn = ChatMessage.assistant("Checking.", [], ProviderState("anthropic", {"content": thinking}))
    request = CompletionRequest(messages=(ChatMessage.user("Hi"), turn, ChatMessage.user("And?")))
    for asked in (REQUEST, request):
        body = provider.encode(asked)
        anthropic_checked(body)
        own = AnthropicProvider(model=CLAUDE, api_key="k").encode(asked)
        assert body == {"anthropic_version": "vertex-2023-10-16",
                        **{k: v for k, v in own.items() if k != "model"}}  # fmt: skip
    assert provider.encode(request)["messages"][1]["content"][0] == thinking[0]
