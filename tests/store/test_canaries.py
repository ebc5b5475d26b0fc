"""Canary tests: plant unique strings and secrets everywhere a run carries content, then read
the raw bytes the database holds (SQLite file and WAL; every PostgreSQL column as text)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolwire import (
    Artifact,
    ChatMessage,
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolRegistry,
    ToolResult,
    Usage,
    tool,
)
from toolwire.core.lifecycle import RunStatus
from toolwire.mcp.auth import token_path
from toolwire.mcp.resources import shown_run
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.http import HttpSettings
from toolwire.providers.responses import ResponsesProvider
from toolwire.runs.runtime import RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore

from ..mcp.kit import http_server, remote_registry, workspace
from ..providers.responses_server import ENCRYPTED, ResponsesModel, responses_loopback
from .conftest import Backend

TAG = uuid.uuid4().hex[:10]
CANARIES = {
    where: f"CANARY-{where}-{TAG}"
    for where in (
        "prompt", "system", "content", "thinking", "raw", "arguments", "result",
        "table", "text", "kv", "code", "link", "label", "answer",
    )
}  # fmt: skip
SECRETS = {
    "openai": "sk-proj-Q8fLz1Yk2Wm3Xn4Vb5Tc6Rd7",
    "aws": "AKIAZ5CANARYKEY12345",
    "github": "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJjYW5hcnkiOnRydWV9.c2lnbmF0dXJlLWNhbmFyeQ",
    "url_password": "pw-Canary-Secret-77",
    "email": "carol.canary@example.org",
    "stripe": "sk_live_51CanaryStripeKeyAbCdEf",
}
SECRET_TEXT = (
    f"key {SECRETS['openai']} id {SECRETS['aws']} gh {SECRETS['github']} "
    f"Bearer {SECRETS['jwt']} https://svc:{SECRETS['url_password']}@db.example.org/x "
    f"mail {SECRETS['email']} pay {SECRETS['stripe']}"
)


@tool(data_class="public")
def dossier(subject: str) -> ToolResult:
    """Everything about a subject."""
    return ToolResult.text(
        f"{CANARIES['result']} {SECRET_TEXT}",
        Artifact.table(CANARIES["label"], ["k", "v"], [[CANARIES["table"], SECRET_TEXT]]),
        Artifact.text("notes", f"{CANARIES['text']} {SECRET_TEXT}"),
        Artifact.key_value("kv", [("owner", f"{CANARIES['kv']} {SECRETS['email']}")]),
        Artifact.code("code", f"KEY = '{SECRETS['openai']}'  # {CANARIES['code']}"),
        Artifact.link(
            "link", f"https://svc:{SECRETS['url_password']}@x.example/{CANARIES['link']}"
        ),
    )


def respond(messages: Sequence[ChatMessage]) -> CompletionResponse:
    if not any(m.role == "assistant" for m in messages):
        arguments = {"subject": f"{CANARIES['arguments']} {SECRET_TEXT}"}
        return CompletionResponse(
            content=f"{CANARIES['content']} {SECRETS['aws']}",
            thinking=f"{CANARIES['thinking']} {SECRETS['github']}",
            tool_calls=(ToolCall.of("call-1", "dossier", arguments),),
            usage=Usage(10, 4),
            finish_reason="tool_calls",
            raw={"echo": f"{CANARIES['raw']} {SECRETS['stripe']}"},
        )
    return CompletionResponse(content=f"{CANARIES['answer']} {SECRET_TEXT}", usage=Usage(20, 8))


def planted_run(store: RunStore) -> RunOutcome:
    request = RunRequest.of(
        f"{CANARIES['prompt']} {SECRETS['email']}",
        system=f"{CANARIES['system']} {SECRETS['openai']}",
        provider=ScriptedProvider(respond),
        options=RunOptions(capture_raw=True),
    )
    outcome = Runtime(ToolRegistry([dossier]), recorder=store).run_sync(request)
    assert outcome.status is RunStatus.COMPLETED and outcome.store_error is None
    return outcome


def found_in(data: bytes, needles: dict[str, str]) -> list[str]:
    return [name for name, needle in needles.items() if needle.encode() in data]


@pytest.mark.parametrize("level", [PrivacyLevel.NONE, PrivacyLevel.METADATA])
def test_withheld_levels_write_no_canary_and_no_secret(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(level)
    outcome = planted_run(store)
    live = backend.raw_bytes()  # with the WAL not yet checkpointed
    stored = store.get_run(outcome.run_id)
    store.close()
    for data in (live, backend.raw_bytes()):
        assert outcome.run_id.encode() in data  # the dump does hold the run
        assert found_in(data, CANARIES) == []
        assert found_in(data, SECRETS) == []
    assert stored is not None and stored.final_answer is None
    assert stored.final_answer_length == len(f"{CANARIES['answer']} {SECRET_TEXT}")
    assert [s["content_withheld"] for s in stored.steps] == [True] * 5
    assert stored.steps[2]["tool_artifact_types"] == ["table", "text", "key_value", "code", "link"]


def test_redacted_writes_no_secret_and_keeps_the_shape(backend: Backend) -> None:
    store = backend.open(PrivacyLevel.REDACTED)
    outcome = planted_run(store)
    live = backend.raw_bytes()
    stored = store.get_run(outcome.run_id)
    store.close()
    for data in (live, backend.raw_bytes()):
        assert found_in(data, SECRETS) == []
        assert found_in(data, CANARIES) == sorted(CANARIES, key=list(CANARIES).index)
    assert stored is not None
    plain = [s.to_dict() for s in outcome.steps]
    assert [sorted(s) for s in stored.steps] == [sorted(["sequence", *p]) for p in plain]
    assert stored.final_answer == (
        f"{CANARIES['answer']} key sk-proj-*** id AKIA*** gh ghp_*** Bearer eyJ*** "
        "https://svc:***@db.example.org/x mail ***@*** pay sk_live_***"
    )


def test_full_keeps_everything_verbatim(backend: Backend) -> None:
    store = backend.open(PrivacyLevel.FULL)
    outcome = planted_run(store)
    stored = store.get_run(outcome.run_id)
    data = backend.raw_bytes()
    assert found_in(data, SECRETS) == list(SECRETS)
    assert stored is not None
    assert stored.steps == [
        {"sequence": n, **step.to_dict()} for n, step in enumerate(outcome.steps, start=1)
    ]
    assert stored.final_answer == f"{CANARIES['answer']} {SECRET_TEXT}"


# -- the cloud routes' credentials: a key and bearer tokens, in runs that succeed and fail -------


def cloud_runs(store: RunStore) -> list[str]:
    """An Azure run with a key and a Vertex run with a token, each answered once, and each
    refused once by a server echoing the credential it was sent; the credentials used."""
    from toolwire.providers.azure import AzureEndpoint, AzureOpenAIProvider
    from toolwire.providers.tokens import GoogleToken
    from toolwire.providers.vertex import VertexGeminiProvider, VertexLocation
    from toolwire.providers.wire import HttpProvider

    from ..providers.clouds import CloudDoor, DoorModel, door_loopback, google_credentials, minted

    key, (credentials, tokens) = minted("azkey"), google_credentials()
    source = GoogleToken(credentials)
    runtime = Runtime(ToolRegistry([dossier]), recorder=store)

    def azure(root: str) -> HttpProvider:
        return AzureOpenAIProvider(endpoint=AzureEndpoint.of(root, "dep"), api_key=key)

    def vertex(root: str) -> HttpProvider:
        location = VertexLocation.of("p", "europe-west4", root)
        return VertexGeminiProvider(model="gemini-2.5-flash", location=location,
                                    token_source=source)  # fmt: skip

    doors = [(azure, CloudDoor(headers={"api-key": key})),
             (azure, CloudDoor(headers={"api-key": "the-right-one"})),
             (vertex, CloudDoor(bearer_of=tokens)),
             (vertex, CloudDoor(bearer_of=["the-right-one"]))]  # fmt: skip
    for make, door in doors:
        model = DoorModel([[("dossier", {"subject": "x"})], "Done."], door)
        with door_loopback(model) as root:
            options = RunOptions(capture_raw=True)
            runtime.run_sync(RunRequest.of("q", provider=make(root), options=options))
    assert key in doors[1][1].refused[0] and tokens[0] in doors[3][1].refused[0]  # echoed
    return [key, *tokens]


@pytest.mark.parametrize("level", [PrivacyLevel.FULL, PrivacyLevel.REDACTED])
def test_no_cloud_key_or_token_is_stored(backend: Backend, level: PrivacyLevel) -> None:
    store = backend.open(level)
    secrets = cloud_runs(store)
    runs = store.list_runs()
    store.close()
    assert sorted(r.status for r in runs) == ["completed", "completed", "failed", "failed"]
    data = backend.raw_bytes()
    assert all(r.id.encode() in data for r in runs)  # the dump does hold the runs
    assert sorted(str(r.provider) for r in runs) == ["azure-openai"] * 2 + ["vertex"] * 2
    assert [s for s in secrets if s.encode() in data] == []


def test_a_responses_api_run_stores_no_api_key_at_any_level(backend: Backend) -> None:
    """The key a Responses API run was made with is in no stored byte, even at ``full`` with
    raw bodies captured; the run's replayed reasoning state is."""
    key = f"sk-proj-Responses{TAG}Key7q2w"  # planted nowhere else (the tool's text has others)
    model = ResponsesModel([[("dossier", {"subject": "x"})], "done"])
    store = backend.open(PrivacyLevel.FULL)
    with responses_loopback(model) as base:
        provider = ResponsesProvider(model="gpt-5", api_key=key, base_url=base,
                                     http=HttpSettings(max_attempts=1))  # fmt: skip
        request = RunRequest.of("Who?", provider=provider, options=RunOptions(capture_raw=True))
        outcome = Runtime(ToolRegistry([dossier]), recorder=store).run_sync(request)
    assert outcome.status is RunStatus.COMPLETED and outcome.store_error is None
    live = backend.raw_bytes()
    store.close()
    assert model.problems == [] and len(model.captured) == 2
    assert all(c.headers["authorization"] == f"Bearer {key}" for c in model.captured)
    for data in (live, backend.raw_bytes()):
        assert outcome.run_id.encode() in data
        assert key.encode() not in data
        assert ENCRYPTED.format(0).encode() in data  # the state a resumed run replays


ARTIFACT_CANARIES = ("table", "text", "kv", "code", "link", "label")


@pytest.mark.parametrize("level", list(PrivacyLevel))
def test_a_run_read_by_an_mcp_host_holds_no_artifact_and_nothing_its_level_withholds(
    backend: Backend, level: PrivacyLevel
) -> None:
    store = backend.open(PrivacyLevel.FULL)
    outcome = planted_run(store)
    stored = store.get_run(outcome.run_id)
    store.close()
    assert stored is not None
    view = json.dumps(shown_run(stored, level, lambda name: name == "dossier"))
    assert [n for n in ARTIFACT_CANARIES if CANARIES[n] in view] == []  # artifacts never
    if level.keeps_content:
        assert CANARIES["result"] in view and CANARIES["answer"] in view
    else:
        assert found_in(view.encode(), CANARIES) == [] and found_in(view.encode(), SECRETS) == []
        assert '"tool_name": "dossier"' in view
    if level is PrivacyLevel.REDACTED:
        assert found_in(view.encode(), SECRETS) == []


@pytest.mark.parametrize("level", [PrivacyLevel.FULL, PrivacyLevel.REDACTED])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_bedrock_run_stores_no_aws_credential(
    backend: Backend, level: PrivacyLevel, stream: bool
) -> None:
    """A signed run, raw bodies captured, kept at the most revealing levels: the signature's
    key id, secret and session token are nowhere in the store."""
    from botocore.credentials import Credentials

    from toolwire.providers.aws_auth import AwsCredentials
    from toolwire.providers.bedrock import BedrockProvider

    from ..providers.bedrock_server import (
        ACCESS_KEY,
        REGION,
        SECRET_KEY,
        SESSION_TOKEN,
        FakeBedrock,
        bedrock_loopback,
    )

    store = backend.open(level)
    model = FakeBedrock([[("dossier", {"subject": CANARIES["arguments"]})], CANARIES["answer"]])
    credentials = AwsCredentials(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), REGION)
    with bedrock_loopback(model) as base:
        provider = BedrockProvider(model="amazon.nova-pro-v1:0", credentials=credentials,
                                   base_url=base)  # fmt: skip
        request = RunRequest.of(
            CANARIES["prompt"], provider=provider,
            options=RunOptions(capture_raw=True, stream=stream),
        )  # fmt: skip
        outcome = Runtime(ToolRegistry([dossier]), recorder=store).run_sync(request)
    assert outcome.status is RunStatus.COMPLETED and outcome.store_error is None
    store.close()
    data = backend.raw_bytes()
    assert outcome.run_id.encode() in data
    assert CANARIES["prompt"].encode() in data  # both levels keep the conversation
    assert len(model.captured) == 2
    assert found_in(data, {"key": ACCESS_KEY, "secret": SECRET_KEY, "token": SESSION_TOKEN}) == []


@pytest.mark.parametrize("level", [PrivacyLevel.FULL, PrivacyLevel.REDACTED])
def test_a_run_with_an_oauth_mcp_server_stores_no_token_or_client_secret(
    backend: Backend, level: PrivacyLevel, tmp_path: Path
) -> None:
    """A remote tool over a server toolwire signed in to with the client credentials grant,
    raw bodies captured: the client secret and the tokens it got are in no stored byte."""
    secret = f"client-secret-{TAG}"
    store = backend.open(level)
    with http_server("oauth_notes.py", secret) as url:
        ws = workspace(tmp_path, f"""
data_dir = "{tmp_path}"
[mcp_servers.notes]
url = "{url}"
enabled = true
data_class = "public"
[mcp_servers.notes.auth]
kind = "client_credentials"
client_id = "machine"
client_secret_env = "NOTES_SECRET"
""", environ={"NOTES_SECRET": secret})  # fmt: skip
        registry, problems = remote_registry(ws)
        call = {"name": "notes__add", "arguments": {"a": 2, "b": 3}}
        turns: list[dict[str, Any]] = [{"tool_calls": [call]}, {"content": "done"}]
        options = RunOptions(capture_raw=True, trust_zone="local")
        request = RunRequest.of("add", provider=ScriptedProvider.from_turns(turns), options=options)
        outcome = Runtime(registry, recorder=store).run_sync(request)
        (launch,) = {t.launch for t in registry}  # type: ignore[attr-defined]
        held = json.loads(token_path(launch).read_text())["tokens"]
    store.close()
    assert problems == [] and outcome.status is RunStatus.COMPLETED
    data = backend.raw_bytes()
    assert outcome.run_id.encode() in data and b"notes__add" in data
    planted = [secret, held["access_token"], held["refresh_token"]]
    assert [s for s in planted if s.encode() in data] == []
