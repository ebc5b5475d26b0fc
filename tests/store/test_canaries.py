"""Canary tests: plant unique strings and secrets everywhere a run carries content, then read
the raw bytes the database holds (SQLite file and WAL; every PostgreSQL column as text)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

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
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.http import HttpSettings
from toolwire.providers.responses import ResponsesProvider
from toolwire.runs.runtime import RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore

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
