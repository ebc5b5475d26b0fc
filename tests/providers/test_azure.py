"""Azure OpenAI (``--provider azure-openai``): the OpenAI adapter at an Azure resource, over
loopback servers that let in only what Azure would (the ``api-key`` header or a bearer token,
the ``api-version`` query of the deployment shape).

Three-round tool runs go through ``toolwire run`` for both URL shapes, with a key and with a
Microsoft Entra ID token from the real ``DefaultAzureCredential`` (asking a managed-identity
endpoint on loopback); token refresh, the region's zone, missing settings and masking are
checked on the adapter and through ``create_provider``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import toolwire.cli.run  # noqa: F401  (registers the run command)
from toolwire import ChatMessage, ToolLoop, ToolRegistry, tool
from toolwire.cli.app import app
from toolwire.core.errors import AuthenticationError, ConfigError
from toolwire.core.trust import TrustZone
from toolwire.demo import prepare_demo
from toolwire.loop.loop import RunOptions, TerminationReason
from toolwire.providers.azure import AzureEndpoint, AzureOpenAIProvider, AzureResponsesProvider
from toolwire.providers.cloud import CloudSettings
from toolwire.providers.http import HttpSettings
from toolwire.providers.select import create_provider
from toolwire.providers.tokens import REFRESH_MARGIN_SECONDS, EntraToken

from .clouds import (
    DEMO_THREE_ROUNDS,
    Clock,
    CloudDoor,
    DoorModel,
    FakeEntraCredential,
    TokenIssuer,
    door_loopback,
    managed_identity_env,
    minted,
    token_endpoint,
)
from .responses_server import ResponsesModel
from .servers import _serving, no_sleep
from .test_openai_sdk import checked

VERSION = "2024-10-21"
DEPLOYMENT = "gpt-4o-mini-prod"
SHAPES = {
    "v1": (None, "/openai/v1/chat/completions"),
    "deployment": (VERSION, f"/openai/deployments/{DEPLOYMENT}/chat/completions"),
}
BARE_ENV = {"AZURE_OPENAI_ENDPOINT": None, "AZURE_OPENAI_API_KEY": None,
            "OPENAI_API_VERSION": None, "AZURE_OPENAI_REGION": None}  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(prepare_demo(tmp_path_factory.mktemp("shop") / "shop").root / "workspace.toml")


def door_for(version: str | None, **auth: Any) -> CloudDoor:
    return CloudDoor(query={"api-version": version} if version else {}, **auth)


def tw(tmp_path: Path, workspace: str, env: Mapping[str, str | None], *args: str) -> Any:
    """``toolwire run`` on the demo workspace, recorded at privacy full in its own store."""
    argv = ["run", "What does the shop sell?", "--provider", "azure-openai", "--workspace",
            workspace, "--db", str(tmp_path / "runs.db"), "--privacy", "full", *args]  # fmt: skip
    return CliRunner().invoke(app, argv, env={**BARE_ENV, "TOOLWIRE_DB": None, **env})


def stored(tmp_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in tmp_path.glob("runs.db*"))


def assert_three_rounds(model: DoorModel, path: str, version: str | None) -> None:
    assert [c.path.partition("?")[0] for c in model.captured] == [path] * 3
    queries = {c.path.partition("?")[2] for c in model.captured}
    assert queries == ({f"api-version={version}"} if version else {""})
    bodies = [c.json() for c in model.captured]
    assert {b["model"] for b in bodies} == {DEPLOYMENT}
    for body in bodies:
        checked(body)
    tools = [m["content"] for m in bodies[2]["messages"] if m["role"] == "tool"]
    assert tools[0].startswith("Tables:") and "products" in tools[1]
    assert model.door.refused == []


# -- through the CLI: both shapes, key and bearer ------------------------------------------------


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_three_round_run_with_a_key(
    tmp_path: Path, workspace: str, shape: str, stream: bool
) -> None:
    version, path = SHAPES[shape]
    key = minted("azkey")
    model = DoorModel(DEMO_THREE_ROUNDS, door_for(version, headers={"api-key": key}))
    extra = ["--api-version", version] if version else []
    with door_loopback(model) as root:
        done = tw(tmp_path, workspace, {"AZURE_OPENAI_API_KEY": key}, "--model", DEPLOYMENT,
                  "--base-url", root, "--region", "swedencentral", *extra,
                  *([] if stream else ["--no-stream"]))  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "The shop sells products." in done.output
    assert_three_rounds(model, path, version)
    assert all(c.json().get("stream", False) is stream for c in model.captured)
    assert all("authorization" not in {k.lower() for k in c.headers} for c in model.captured)
    assert key not in done.output
    assert key.encode() not in stored(tmp_path)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_three_round_run_signed_in_with_entra_id(
    tmp_path: Path, workspace: str, shape: str
) -> None:
    """The real DefaultAzureCredential asks the managed identity once; the token is kept for
    all three rounds, and the endpoint, deployment and version come from the environment."""
    version, path = SHAPES[shape]
    issuer, secret = TokenIssuer(), minted("identity-header")
    model = DoorModel(DEMO_THREE_ROUNDS, door_for(version, bearer_of=issuer.issued))
    with door_loopback(model) as root, token_endpoint(issuer, secret) as tokens:
        env = {**managed_identity_env(tokens, secret), "AZURE_OPENAI_ENDPOINT": root,
               "OPENAI_API_VERSION": version, "AZURE_OPENAI_REGION": "westeurope"}  # fmt: skip
        done = tw(tmp_path, workspace, env, "--deployment", DEPLOYMENT, "--auth", "entra")
    assert done.exit_code == 0, done.output
    assert "The shop sells products." in done.output
    assert_three_rounds(model, path, version)
    assert len(issuer.issued) == 1
    (asked,) = issuer.requests
    assert "resource=https://cognitiveservices.azure.com" in asked
    assert all("api-key" not in {k.lower() for k in c.headers} for c in model.captured)
    assert issuer.issued[0] not in done.output
    assert issuer.issued[0].encode() not in stored(tmp_path)


def test_without_a_region_the_zone_is_external_global_and_configuration_tools_stay_back(
    tmp_path: Path, workspace: str
) -> None:
    key = minted("azkey")
    model = DoorModel(["Nothing to read."], door_for(None, headers={"api-key": key}))
    with door_loopback(model) as root:
        done = tw(tmp_path, workspace, {"AZURE_OPENAI_API_KEY": key}, "--model", DEPLOYMENT,
                  "--base-url", root)  # fmt: skip
        eu = tw(tmp_path, workspace, {"AZURE_OPENAI_API_KEY": key}, "--model", DEPLOYMENT,
                "--base-url", root, "--region", "francecentral")  # fmt: skip
    assert done.exit_code == 0 and eu.exit_code == 0, done.output + eu.output
    offered = [{t["function"]["name"] for t in c.json()["tools"]} for c in model.captured]
    assert "list_tables" not in offered[0]  # configuration: above external_global's ceiling
    assert "list_tables" in offered[1]  # within external_eu's


# -- the URL shapes -----------------------------------------------------------------------------


def test_the_v1_shape_puts_the_path_under_openai_v1_and_no_query() -> None:
    endpoint = AzureEndpoint.of("https://res.openai.azure.com/", DEPLOYMENT)
    assert endpoint.url("chat/completions") == (
        "https://res.openai.azure.com/openai/v1/chat/completions"
    )
    assert endpoint.url("responses") == "https://res.openai.azure.com/openai/v1/responses"


def test_the_deployment_shape_scopes_chat_to_the_deployment_and_responses_to_the_resource() -> None:
    endpoint = AzureEndpoint.of("https://res.openai.azure.com", "my dep/1", VERSION)
    assert endpoint.url("chat/completions") == (
        "https://res.openai.azure.com/openai/deployments/my%20dep%2F1/chat/completions"
        f"?api-version={VERSION}"
    )
    assert endpoint.url("/responses") == (
        f"https://res.openai.azure.com/openai/responses?api-version={VERSION}"
    )


def test_an_endpoint_pasted_with_its_openai_suffix_is_the_resource_s() -> None:
    pasted = AzureEndpoint.of("https://res.openai.azure.com/openai", DEPLOYMENT, VERSION)
    assert (pasted.endpoint, pasted.api_version) == ("https://res.openai.azure.com", VERSION)
    v1 = AzureEndpoint.of("https://res.openai.azure.com/openai/v1/", DEPLOYMENT, VERSION)
    assert (v1.endpoint, v1.api_version) == ("https://res.openai.azure.com", None)  # named v1


@pytest.mark.parametrize("version", [None, VERSION])
def test_the_stored_base_url_reaches_the_same_shape_and_deployment(version: str | None) -> None:
    """What a run stores (its provider's base URL, and the deployment as its model): another
    process, with another API version set or none, calls the same URL."""
    environ = {**ENV, "OPENAI_API_VERSION": version} if version else ENV
    provider = azure(environ, deployment="dep-a")
    shape = "deployments/dep-a" if version else "v1"
    assert provider.base_url == f"https://res.openai.azure.com/openai/{shape}"
    elsewhere = {"AZURE_OPENAI_API_KEY": "k-2", "OPENAI_API_VERSION": version or "2025-04-01"}
    again = azure(elsewhere, base_url=provider.base_url, model=provider.model)
    assert again.url() == provider.url()


def test_a_deployment_url_without_an_api_version_says_where_to_set_one() -> None:
    with pytest.raises(ConfigError, match=(
        "azure-openai: a deployment's URL needs an API version: --api-version or set "
        "OPENAI_API_VERSION")):  # fmt: skip
        AzureEndpoint.of("https://res.openai.azure.com/openai/deployments/dep-a", "dep-a")


@pytest.mark.parametrize(
    ("given", "said"),
    [("res.openai.azure.com", "base URL must be an http:// or https:// URL with a host"),
     ("https://res.openai.azure.com?x=1", "base URL must not carry a query or fragment")],
)  # fmt: skip
def test_a_bad_endpoint_says_what_is_wrong(given: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        AzureEndpoint.of(given, DEPLOYMENT)


# -- settings, and what is missing ------------------------------------------------------------


def azure(environ: dict[str, str], **given: Any) -> AzureOpenAIProvider:
    cloud = CloudSettings(**{k: given.pop(k) for k in list(given) if k in _CLOUD})
    provider = create_provider("azure-openai", model=given.pop("model", DEPLOYMENT),
                               environ=environ, cloud=cloud, **given)  # fmt: skip
    assert isinstance(provider, AzureOpenAIProvider)
    return provider


_CLOUD = {"deployment", "api_version", "region", "project", "auth", "credential"}
ENV = {"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com", "AZURE_OPENAI_API_KEY": "k-1"}


def test_the_settings_come_from_the_sdk_s_variables() -> None:
    provider = azure({**ENV, "OPENAI_API_VERSION": VERSION})
    assert provider.url() == (
        f"https://res.openai.azure.com/openai/deployments/{DEPLOYMENT}/chat/completions"
        f"?api-version={VERSION}"
    )
    assert provider.headers("k-1") == {"api-key": "k-1"}
    assert provider.name == "azure-openai" and provider.model == DEPLOYMENT


def test_given_settings_win_over_the_environment() -> None:
    environ = {**ENV, "OPENAI_API_VERSION": VERSION}
    provider = azure(environ, base_url="https://other.example", deployment="dep-2",
                     model="not-the-deployment", api_version="2025-01-01")  # fmt: skip
    assert provider.url() == (
        "https://other.example/openai/deployments/dep-2/chat/completions?api-version=2025-01-01"
    )
    assert provider.model == "dep-2"


@pytest.mark.parametrize(
    ("environ", "given", "said"),
    [
        ({"AZURE_OPENAI_API_KEY": "k"}, {},
         "provider azure-openai needs the resource's endpoint: --base-url or set "
         "AZURE_OPENAI_ENDPOINT"),
        ({"AZURE_OPENAI_ENDPOINT": "https://res.openai.azure.com"}, {},
         "provider azure-openai needs an API key: set AZURE_OPENAI_API_KEY, or sign in with "
         "Microsoft Entra ID (--auth entra)"),
        (ENV, {"model": None},
         "provider azure-openai needs a deployment name: --deployment (or --model)"),
        (ENV, {"auth": "kerberos"}, "unknown auth 'kerberos': choose key or entra"),
        (ENV, {"credential": object()},
         "azure-openai: a credential must have get_token"),
        (ENV, {"project": "p"}, "--project is for the Google Cloud routes, not azure-openai"),
    ],
)  # fmt: skip
def test_a_missing_or_bad_setting_names_it_and_where_it_comes_from(
    environ: dict[str, str], given: dict[str, Any], said: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        azure(environ, **given)
    assert str(caught.value).startswith(said)


def test_the_cli_names_a_missing_setting_and_its_variable(tmp_path: Path, workspace: str) -> None:
    done = tw(tmp_path, workspace, {}, "--model", DEPLOYMENT)
    assert done.exit_code == 1
    assert ("error: provider azure-openai needs the resource's endpoint: --base-url or set "
            "AZURE_OPENAI_ENDPOINT") in " ".join(done.output.split())  # fmt: skip
    bad = tw(tmp_path, workspace, {}, "--auth", "kerberos")
    assert bad.exit_code == 2
    assert "unknown auth 'kerberos': choose key or entra" in " ".join(bad.output.split())


# -- the region's zone ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("region", "zone"),
    [("westeurope", TrustZone.EXTERNAL_EU), ("West Europe", TrustZone.EXTERNAL_EU),
     ("swedencentral", TrustZone.EXTERNAL_EU), ("uksouth", TrustZone.EXTERNAL_GLOBAL),
     ("switzerlandnorth", TrustZone.EXTERNAL_GLOBAL), ("eastus2", TrustZone.EXTERNAL_GLOBAL),
     (None, TrustZone.EXTERNAL_GLOBAL)],
)  # fmt: skip
def test_the_zone_follows_the_region_setting(region: str | None, zone: TrustZone) -> None:
    assert azure(ENV, region=region).trust_zone is zone
    environ = {**ENV, "AZURE_OPENAI_REGION": region} if region else ENV
    assert azure(environ).trust_zone is zone


def test_the_zone_is_never_read_off_the_hostname_and_an_explicit_zone_wins() -> None:
    assert azure(ENV, base_url="https://westeurope-shop.openai.azure.com").trust_zone is (
        TrustZone.EXTERNAL_GLOBAL
    )
    assert azure(ENV, region="westeurope", trust_zone="private_hosted").trust_zone is (
        TrustZone.PRIVATE_HOSTED
    )


# -- bearer tokens: the scope, refresh before expiry, masking -----------------------------------


@tool(group="demo", data_class="public")
def slow_lookup(city: str) -> str:
    """A lookup that takes the better part of an hour (the test's clock says so)."""
    CLOCK.now += 3600 - REFRESH_MARGIN_SECONDS + 1  # past the token's refresh point
    return f"{city}: rain"


CLOCK = Clock()


@pytest.fixture
def clock() -> Iterator[Clock]:
    CLOCK.now = 1_800_000_000.0
    yield CLOCK


def entra_provider(root: str, credential: FakeEntraCredential, clock: Clock,
                   version: str | None = None) -> AzureOpenAIProvider:  # fmt: skip
    return AzureOpenAIProvider(
        endpoint=AzureEndpoint.of(root, DEPLOYMENT, version),
        token_source=EntraToken(credential, clock=clock),
        http=HttpSettings(sleep=no_sleep, timeout=10),
    )


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_a_token_near_its_expiry_is_refreshed_before_the_next_round(
    clock: Clock, stream: bool
) -> None:
    credential = FakeEntraCredential(lifetime=3600, clock=clock)
    turns: list[Any] = [[("slow_lookup", {"city": "Oslo"})], [("slow_lookup", {"city": "Bergen"})],
                        "Rain."]  # fmt: skip
    model = DoorModel(turns, door_for(VERSION, bearer_of=credential.issued))
    with door_loopback(model) as root:
        loop = ToolLoop(entra_provider(root, credential, clock, VERSION),
                        ToolRegistry([slow_lookup]))  # fmt: skip
        result = loop.run_sync([ChatMessage.user("Weather?")], options=RunOptions(stream=stream))
    assert result.reason is TerminationReason.COMPLETED and result.final_content == "Rain."
    assert len(credential.issued) == 3  # one per hour of the run, each before it lapsed
    sent = [{k.lower(): v for k, v in c.headers.items()}["authorization"] for c in model.captured]
    assert sent == [f"Bearer {t}" for t in credential.issued]
    assert credential.scopes == [("https://cognitiveservices.azure.com/.default",)] * 3
    assert model.door.refused == []


def test_a_fresh_token_is_asked_for_once_for_many_calls(clock: Clock) -> None:
    credential = FakeEntraCredential(clock=clock)
    source = EntraToken(credential, clock=clock)

    async def many() -> list[str]:
        return list(await asyncio.gather(*(source.token() for _ in range(8))))

    assert asyncio.run(many()) == [credential.issued[0]] * 8
    clock.now += 3600 - REFRESH_MARGIN_SECONDS - 1
    assert asyncio.run(many()) == [credential.issued[0]] * 8
    clock.now += 2
    assert asyncio.run(many()) == [credential.issued[1]] * 8
    assert source.fetches == 2


def test_a_refused_bearer_token_is_masked_in_the_error(clock: Clock) -> None:
    credential = FakeEntraCredential(clock=clock)
    model = DoorModel(["never"], door_for(None, bearer_of=["another-token"]))
    with door_loopback(model) as root:
        loop = ToolLoop(entra_provider(root, credential, clock), ToolRegistry([]))
        with pytest.raises(AuthenticationError) as caught:
            asyncio.run(loop.provider.complete(_request()))
    (token,) = credential.issued
    assert token in model.door.refused[0]  # the server echoed it ...
    for shown in (str(caught.value), repr(caught.value), caught.value.body):
        assert token not in shown  # ... and the error does not
    assert "HTTP 401 credentials refused" in str(caught.value)
    assert caught.value.__cause__ is None


def test_a_key_echoed_in_a_401_is_masked_too() -> None:
    key = minted("azkey")
    model = DoorModel(["never"], door_for(None, headers={"api-key": "the-right-one"}))
    with door_loopback(model) as root:
        provider = AzureOpenAIProvider(endpoint=AzureEndpoint.of(root, DEPLOYMENT), api_key=key,
                                       http=HttpSettings(sleep=no_sleep, timeout=10))  # fmt: skip
        with pytest.raises(AuthenticationError) as caught:
            asyncio.run(provider.complete(_request()))
    assert key in model.door.refused[0]
    assert key not in str(caught.value) and key not in caught.value.body


def test_a_credential_that_fails_is_an_authentication_error_without_its_chain() -> None:
    class Broken:
        def get_token(self, *scopes: str, **kwargs: Any) -> Any:
            raise RuntimeError("the identity endpoint said no to secret-refresh-token-123")

    source = EntraToken(Broken())
    with pytest.raises(AuthenticationError) as caught:
        asyncio.run(source.token())
    assert str(caught.value).startswith(
        "azure-openai: could not get a bearer token (RuntimeError): the identity endpoint said no"
    )
    assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_reprs_show_no_key_and_no_token(clock: Clock) -> None:
    credential = FakeEntraCredential(clock=clock)
    source = EntraToken(credential, clock=clock)
    token = asyncio.run(source.token())
    key = minted("azkey")
    keyed = AzureOpenAIProvider(endpoint=AzureEndpoint.of("https://r.example", "d"), api_key=key)
    borne = AzureOpenAIProvider(endpoint=AzureEndpoint.of("https://r.example", "d"),
                                token_source=source)  # fmt: skip
    settings = CloudSettings(region="westeurope", credential=credential)
    for value in (keyed, borne, source, settings):
        for shown in (repr(value), str(value), repr([value])):
            assert token not in shown and key not in shown
    assert repr(source) == "<EntraToken provider=azure-openai fetches=1>"


@pytest.mark.parametrize("adapter", [AzureOpenAIProvider, AzureResponsesProvider])
def test_a_key_and_a_token_together_are_refused(adapter: type[AzureOpenAIProvider]) -> None:
    with pytest.raises(ConfigError, match=f"^{adapter.default_name}: give an API key or a "
                       "bearer token, not both"):  # fmt: skip
        adapter(endpoint=AzureEndpoint.of("https://r.example", "d"), api_key="k",
                token_source=EntraToken(FakeEntraCredential()))  # fmt: skip


@pytest.mark.parametrize("adapter", [AzureOpenAIProvider, AzureResponsesProvider])
def test_either_adapter_is_the_deployment_with_one_credential_and_no_price(
    adapter: type[AzureOpenAIProvider],
) -> None:
    endpoint = AzureEndpoint.of("https://r.example", "my-deploy")
    keyed = adapter(endpoint=endpoint, api_key=" k ", trust_zone="external_eu")
    borne = adapter(endpoint=endpoint, token_source=EntraToken(FakeEntraCredential()))
    assert (keyed.model, keyed.endpoint, keyed.token_source) == ("my-deploy", endpoint, None)
    assert keyed.needs_key() and not borne.needs_key()
    assert keyed.pricing_family is None and borne.pricing_family is None
    assert keyed.trust_zone == TrustZone.EXTERNAL_EU and keyed.name == adapter.default_name


def _request() -> Any:
    from toolwire import CompletionRequest

    return CompletionRequest(messages=(ChatMessage.user("hi"),))


def test_the_wire_body_is_the_openai_adapter_s() -> None:
    """Same encoder: only the URL and the credential differ from OpenAI's own API."""
    from toolwire.providers.openai import OpenAIProvider

    azure_body = AzureOpenAIProvider(endpoint=AzureEndpoint.of("https://r.example", DEPLOYMENT),
                                     api_key="k").encode(_request())  # fmt: skip
    openai_body = OpenAIProvider(model=DEPLOYMENT, api_key="k").encode(_request())
    assert json.dumps(azure_body) == json.dumps(openai_body)


def test_the_workspace_s_region_sets_the_zone(tmp_path: Path, workspace: str) -> None:
    toml = Path(workspace)
    eu = toml.with_name("workspace-eu.toml")
    eu.write_text('region = "westeurope"\n' + toml.read_text())
    key = minted("azkey")
    model = DoorModel(["Nothing to read."], door_for(None, headers={"api-key": key}))
    with door_loopback(model) as root:
        done = tw(tmp_path, str(eu), {"AZURE_OPENAI_API_KEY": key}, "--model", DEPLOYMENT,
                  "--base-url", root)  # fmt: skip
    assert done.exit_code == 0, done.output
    (sent,) = model.captured
    assert "list_tables" in {t["function"]["name"] for t in sent.json()["tools"]}


@pytest.mark.parametrize(
    ("field", "option"),
    [("deployment", "--deployment"), ("api_version", "--api-version"), ("project", "--project"),
     ("auth", "--auth")],
)  # fmt: skip
def test_a_cloud_setting_given_to_another_provider_is_named(field: str, option: str) -> None:
    value = "entra" if field == "auth" else "x"
    with pytest.raises(ConfigError) as caught:
        create_provider("openai", model="gpt-4.1-mini", environ={"OPENAI_API_KEY": "k"},
                        cloud=CloudSettings(**{field: value}))  # fmt: skip
    assert str(caught.value) == (
        f"{option} is for the cloud routes (azure-openai, azure-openai-responses, vertex, "
        "vertex-anthropic), not "
        "provider openai"
    )


def test_a_region_from_a_workspace_is_no_mistake_for_another_provider() -> None:
    provider = create_provider("openai", model="gpt-4.1-mini", environ={"OPENAI_API_KEY": "k"},
                               cloud=CloudSettings(region="westeurope"))  # fmt: skip
    assert provider.trust_zone is TrustZone.EXTERNAL_GLOBAL  # its own zone, not the region's


# -- the Responses API on Azure: the same URL builder and credentials ------------------------


class _ResponsesDoor(BaseHTTPRequestHandler):
    """A Responses API model behind Azure's door: the credential and query checked first."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers["content-length"]))
        door: CloudDoor = self.server.door  # type: ignore[attr-defined]
        model: ResponsesModel = self.server.model  # type: ignore[attr-defined]
        why = door.check(self.path, dict(self.headers))
        if why is not None:
            door.refused.append(why)
            status, out, kind = 401, b'{"error": {"message": "denied"}}', "application/json"
        else:
            status, out, kind = model.answer(self.path, dict(self.headers), raw)
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.mark.parametrize("auth", ["key", "entra"])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_responses_api_runs_three_rounds_at_either_shape(
    shape: str, auth: str, clock: Clock
) -> None:
    version = SHAPES[shape][0]
    key, credential = minted("azkey"), FakeEntraCredential(clock=clock)
    door = door_for(version, **({"headers": {"api-key": key}} if auth == "key"
                                else {"bearer_of": credential.issued}))  # fmt: skip
    model = ResponsesModel([[("slow_lookup", {"city": "Oslo"})],
                            [("slow_lookup", {"city": "Bergen"})], "Rain."])  # fmt: skip
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ResponsesDoor)
    server.door, server.model = door, model  # type: ignore[attr-defined]
    with _serving(server) as root:
        environ = {"AZURE_OPENAI_ENDPOINT": root, **({"AZURE_OPENAI_API_KEY": key}
                   if auth == "key" else {})}  # fmt: skip
        cloud = CloudSettings(api_version=version, credential=credential if auth == "entra"
                              else None)  # fmt: skip
        provider = create_provider("azure-openai-responses", model=DEPLOYMENT, environ=environ,
                                   cloud=cloud)  # fmt: skip
        assert isinstance(provider, AzureResponsesProvider)
        loop = ToolLoop(provider, ToolRegistry([slow_lookup]))
        result = loop.run_sync([ChatMessage.user("Weather?")])
    assert result.reason is TerminationReason.COMPLETED and result.final_content == "Rain."
    path = "/openai/responses" if version else "/openai/v1/responses"
    query = f"?api-version={version}" if version else ""
    assert [c.path for c in model.captured] == [path + query] * 3
    assert door.refused == [] and model.problems == []
    assert {c.json()["model"] for c in model.captured} == {DEPLOYMENT}
