"""The Bedrock adapter against a fake runtime over loopback that verifies every SigV4 signature
with botocore and answers in Converse JSON and real event-stream frames; request bodies and the
fake's fixtures are checked against botocore's own ``bedrock-runtime`` service model."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import subprocess
import sys
import threading
import zlib
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from botocore.credentials import Credentials

from toolwire import ChatMessage, ToolLoop, ToolRegistry, ToolResult, tool
from toolwire.core.errors import (
    AuthenticationError,
    ConfigError,
    MalformedResponse,
    ProviderError,
    RateLimitError,
)
from toolwire.core.messages import ProviderState, ToolCall, ToolSpec
from toolwire.core.output import OutputSchema
from toolwire.core.trust import TrustZone
from toolwire.demo import prepare_demo
from toolwire.loop.loop import TerminationReason
from toolwire.policy.options import RunOptions
from toolwire.policy.pricing import cost_of
from toolwire.providers.aws_auth import AwsCredentials
from toolwire.providers.base import CompletionRequest, Reasoning, Stop, Usage
from toolwire.providers.bedrock import STOPS, STREAM_ERROR_STATUSES, BedrockProvider, zone_for
from toolwire.providers.http import HttpSettings
from toolwire.providers.select import create_provider
from toolwire.providers.sse import MAX_EVENT_BYTES

from .bedrock_model import error_statuses, problems, shapes, stream_event_shape
from .bedrock_server import (
    ACCESS_KEY,
    AWS_ENV,
    REGION,
    SECRET_KEY,
    SESSION_TOKEN,
    AwsError,
    Blocks,
    FakeBedrock,
    bedrock_loopback,
    converse_reply,
    event_frame,
    exception_frame,
    frame,
    stream_events,
)
from .servers import no_sleep

MODEL = "anthropic.claude-3-haiku-20240307-v1:0"  # a colon: percent-encoded in the path
SECRETS = (ACCESS_KEY, SECRET_KEY, SESSION_TOKEN)
SIGNATURE = "EqQBCkgIARABGAIiQNm6eeNbLWsL3hK1sQ3mI0AO4eQjG2X+kxYcc3bS6Jqvo+3d0o7H/Yo3S5Y7mBeWt4Zn"
THOUGHT = {"reasoningContent": {"reasoningText": {"text": "Oslo first.", "signature": SIGNATURE}}}
REDACTED = {"reasoningContent": {"redactedContent": base64.b64encode(b"\x00opaque").decode()}}


@tool(group="demo", data_class="public")
def weather(city: str) -> ToolResult:
    """Current weather for a city."""
    if city == "Atlantis":
        return ToolResult.error("no such city")
    return ToolResult.text(f"{city}: 3°C, rain")


def credentials(secret: str = SECRET_KEY) -> AwsCredentials:
    return AwsCredentials(Credentials(ACCESS_KEY, secret, SESSION_TOKEN), REGION)


def provider(base: str, *, secret: str = SECRET_KEY, attempts: int = 4) -> BedrockProvider:
    http = HttpSettings(sleep=no_sleep, timeout=10, max_attempts=attempts)
    return BedrockProvider(model=MODEL, credentials=credentials(secret), base_url=base, http=http)


def complete(base: str, request: CompletionRequest, **kwargs: Any) -> Any:
    return asyncio.run(provider(base, **kwargs).complete(request))


def ask(stream: bool = False, **fields: Any) -> CompletionRequest:
    messages = fields.pop("messages", (ChatMessage.user("Weather?"),))
    return CompletionRequest(messages=messages, stream=stream, **fields)


def body_problems(captured: list[Any]) -> list[str]:
    return [p for c in captured for p in problems("ConverseRequest", c.json())]


OSLO = {"city": "Oslo"}
SCRIPT: list[Any] = [
    [("weather", {"city": "Oslo"})],
    [("weather", {"city": "Atlantis"}), ("weather", {"city": "Bergen"})],
    "Oslo and Bergen are rainy; Atlantis is not a city.",
]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_three_round_tool_run_is_signed_and_shaped_as_the_service_model_says(
    stream: bool,
) -> None:
    model = FakeBedrock(SCRIPT)
    with bedrock_loopback(model) as base:
        loop = ToolLoop(provider(base), ToolRegistry([weather]))
        result = loop.run_sync(
            [ChatMessage.system("Be brief."), ChatMessage.user("Weather?")],
            options=RunOptions(stream=stream, max_tokens=300, temperature=0.2),
        )
    assert result.reason is TerminationReason.COMPLETED
    assert result.final_content == SCRIPT[2]
    assert [i.result for i in result.trace] == [
        "Oslo: 3°C, rain",
        "no such city",
        "Bergen: 3°C, rain",
    ]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (33, 21)
    endpoint = "converse-stream" if stream else "converse"
    assert [c.path for c in model.captured] == [
        f"/model/{MODEL.replace(':', '%3A')}/{endpoint}"
    ] * 3
    assert body_problems(model.captured) == []
    last = model.captured[2].json()
    assert last["system"] == [{"text": "Be brief."}]
    assert last["inferenceConfig"] == {"maxTokens": 300, "temperature": 0.2}
    assert last["toolConfig"]["toolChoice"] == {"auto": {}}
    assert last["toolConfig"]["tools"][0]["toolSpec"]["name"] == "weather"
    assert last["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["type"] == "object"
    results = last["messages"][-1]
    assert results["role"] == "user"
    assert [b["toolResult"] for b in results["content"]] == [
        {"toolUseId": "tooluse_1_0", "content": [{"text": "no such city"}], "status": "error"},
        {
            "toolUseId": "tooluse_1_1",
            "content": [{"text": "Bergen: 3°C, rain"}],
            "status": "success",
        },
    ]
    assert last["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "tooluse_0_0", "name": "weather", "input": {"city": "Oslo"}}}
    ]
    for captured in model.captured:
        assert captured.headers["authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/"
        )
        assert SECRET_KEY not in captured.headers["authorization"]


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "TOOLWIRE_DB"))},
        **AWS_ENV,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COLUMNS": "200",
        "TOOLWIRE_STATE_KEY": "",
    }
    return subprocess.run(
        [sys.executable, "-m", "toolwire", *args, "--db", str(tmp_path / "runs.sqlite")],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


CLI_SCRIPT: list[Any] = [
    [("list_tables", {})],
    [("get_table_schema", {"table": "customers"})],
    "Four tables; customers has an id and a name.",
]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_cli_runs_three_rounds_against_bedrock_and_stores_no_credential(
    tmp_path: Path, stream: bool
) -> None:
    workspace = str(prepare_demo(tmp_path / "shop").root / "workspace.toml")
    model = FakeBedrock(CLI_SCRIPT, region="eu-west-1")  # in the EU: configuration may go
    with bedrock_loopback(model) as base:
        done = _cli(tmp_path, "run", "--provider", "bedrock", "--model", MODEL, "--region",
                    "eu-west-1", "--base-url", base, "--workspace", workspace, "--privacy", "full",
                    *([] if stream else ["--no-stream"]), "What tables are there?")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Four tables; customers has an id and a name." in done.stdout
    assert len(model.captured) == 3
    endpoint = "/converse-stream" if stream else "/converse"
    assert all(c.path.endswith(endpoint) for c in model.captured)
    assert body_problems(model.captured) == []
    results = [b["toolResult"] for b in model.captured[2].json()["messages"][-1]["content"]]
    assert [r["status"] for r in results] == ["success"], results
    assert "password_hash" in results[0]["content"][0]["text"]
    first = model.captured[0].json()["toolConfig"]["tools"]
    assert {"list_tables", "get_table_schema"} <= {t["toolSpec"]["name"] for t in first}
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("runs.sqlite*"))
    assert b"What tables are there?" in stored  # full privacy: the run is all there...
    for secret in SECRETS:  # ... and no credential
        assert secret not in done.stdout + done.stderr
        assert secret.encode() not in stored


def test_the_cli_says_what_is_missing_without_credentials(tmp_path: Path) -> None:
    env_less = {k: "" for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "run", "--provider", "bedrock", "--model", MODEL,
         "--no-tools", "--no-store", "q"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, **AWS_ENV, **env_less, "XDG_DATA_HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 1
    assert "provider bedrock needs AWS credentials: set AWS_ACCESS_KEY_ID" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_wrong_secret_is_refused_by_the_signature_check_with_a_clear_error() -> None:
    model = FakeBedrock(["never"])
    with bedrock_loopback(model) as base, pytest.raises(AuthenticationError) as caught:
        complete(base, ask(), secret="x" * 40)
    message = str(caught.value)
    assert message.startswith("bedrock: HTTP 403 credentials refused (http://127.0.0.1:")
    assert "[type InvalidSignatureException]" in message
    assert "The request signature we calculated does not match" in message
    assert caught.value.type == "InvalidSignatureException"
    assert len(model.captured) == 1  # a refused signature is not retried
    assert not any(s in message or s in repr(caught.value) for s in (*SECRETS, "x" * 40))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_throttling_is_retried_and_then_answered(stream: bool) -> None:
    throttled = AwsError(429, "ThrottlingException", "Too many requests, please wait.")
    model = FakeBedrock(["Rainy."], failures=[throttled, throttled])
    with bedrock_loopback(model) as base:
        response = complete(base, ask(stream))
    assert response.content == "Rainy."
    assert len(model.captured) == 3


def test_throttling_that_lasts_is_a_rate_limit_error_naming_the_aws_type() -> None:
    throttled = AwsError(429, "ThrottlingException", "Too many requests, please wait.")
    model = FakeBedrock(["never"], failures=[throttled, throttled])
    with bedrock_loopback(model) as base, pytest.raises(RateLimitError) as caught:
        complete(base, ask(), attempts=2)
    assert caught.value.retryable and caught.value.type == "ThrottlingException"
    assert "HTTP 429 rate limited" in str(caught.value)
    assert "Too many requests, please wait." in str(caught.value)


def test_credentials_an_error_body_echoes_are_masked() -> None:
    said = f"Canonical String: {SESSION_TOKEN} signed with {SECRET_KEY} for {ACCESS_KEY}"
    model = FakeBedrock(["never"], failures=[AwsError(403, "AccessDeniedException", said)])
    with bedrock_loopback(model) as base, pytest.raises(AuthenticationError) as caught:
        complete(base, ask())
    shown = str(caught.value) + caught.value.body
    assert "Canonical String: [redacted] signed with [redacted] for " in shown
    assert not any(s in shown for s in SECRETS)


def test_a_validation_exception_is_a_provider_error_that_is_not_retried() -> None:
    refused = AwsError(400, "ValidationException", "The model returned the following errors: x")
    model = FakeBedrock(["never"], failures=[refused])
    with bedrock_loopback(model) as base, pytest.raises(ProviderError) as caught:
        complete(base, ask())
    assert type(caught.value) is ProviderError and not caught.value.retryable
    assert "HTTP 400 request refused" in str(caught.value)
    assert "[type ValidationException]: The model returned the following errors: x" in str(
        caught.value
    )
    assert len(model.captured) == 1


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_input_too_long_for_the_model_ends_the_turn_at_the_context_window(stream: bool) -> None:
    said = "The model returned the following errors: Input is too long for requested model."
    failure: AwsError | bytes = AwsError(400, "ValidationException", said)
    if stream:
        failure = exception_frame("validationException", said)
    model = FakeBedrock(["never"], failures=[failure])
    with bedrock_loopback(model) as base:
        response = complete(base, ask(stream))
    assert response.stop is Stop.CONTEXT_WINDOW
    assert len(model.captured) == 1


def _frames(*events: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(event_frame(n, d) for n, d in events)


START = ("messageStart", {"role": "assistant"})
HELLO = ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hel"}})


def test_a_frame_whose_crc_does_not_match_is_a_clear_malformed_response() -> None:
    good = _frames(START, HELLO)
    broken = good[:-1] + bytes([good[-1] ^ 0xFF])  # the last frame's message CRC
    model = FakeBedrock(["never"], failures=[broken])
    with bedrock_loopback(model) as base, pytest.raises(MalformedResponse) as caught:
        complete(base, ask(stream=True))
    assert "bedrock: malformed event stream: a frame that does not parse (Checksum mismatch" in (
        str(caught.value)
    )
    assert len(model.captured) == 1  # a protocol error is not retried


def test_a_frame_longer_than_the_cap_that_never_ends_fails_at_the_cap() -> None:
    prelude = (20 * 1024 * 1024).to_bytes(4, "big") + (0).to_bytes(4, "big")  # 20 MiB, 0 headers
    prelude += zlib.crc32(prelude).to_bytes(4, "big")
    model = FakeBedrock(["never"], failures=[prelude + b"y" * (MAX_EVENT_BYTES + 10)])
    with bedrock_loopback(model) as base, pytest.raises(MalformedResponse) as caught:
        complete(base, ask(stream=True))
    assert "one event over 1048576 bytes without its end (MAX_EVENT_BYTES)" in str(caught.value)


def test_an_exception_frame_before_any_event_is_retried_like_a_429() -> None:
    model = FakeBedrock(["Rainy."], failures=[exception_frame("throttlingException", "Slow down")])
    with bedrock_loopback(model) as base:
        assert complete(base, ask(stream=True)).content == "Rainy."
    assert len(model.captured) == 2


def test_an_exception_frame_mid_stream_ends_the_call_typed() -> None:
    stream = _frames(START, HELLO) + exception_frame("throttlingException", "Slow down")
    model = FakeBedrock(["never"], failures=[stream])
    with bedrock_loopback(model) as base, pytest.raises(RateLimitError) as caught:
        complete(base, ask(stream=True))
    assert "[code 429, type throttlingException]: Slow down" in str(caught.value)
    assert len(model.captured) == 1  # part of the answer was shown: not asked again


def test_a_stream_cut_before_message_stop_is_malformed() -> None:
    model = FakeBedrock(["never"], failures=[_frames(START, HELLO)])
    with bedrock_loopback(model) as base, pytest.raises(MalformedResponse) as caught:
        complete(base, ask(stream=True))
    assert "bedrock: response stream ended before messageStop" in str(caught.value)


def test_a_frame_of_no_known_message_type_is_malformed() -> None:
    odd = frame({":message-type": "gossip"}, b"{}")
    model = FakeBedrock(["never"], failures=[odd])
    with bedrock_loopback(model) as base, pytest.raises(MalformedResponse) as caught:
        complete(base, ask(stream=True))
    assert "a frame of message type 'gossip', not event or exception" in str(caught.value)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("thought", [THOUGHT, REDACTED], ids=["signed", "redacted"])
def test_reasoning_goes_back_verbatim_to_the_same_family(
    stream: bool, thought: dict[str, Any]
) -> None:
    use = {"toolUse": {"toolUseId": "tooluse_a", "name": "weather", "input": {"city": "Oslo"}}}
    model = FakeBedrock([Blocks([thought, use], "tool_use"), "Rainy."])
    with bedrock_loopback(model) as base:
        loop = ToolLoop(provider(base), ToolRegistry([weather]))
        result = loop.run_sync(
            [ChatMessage.user("Weather?")],
            options=RunOptions(stream=stream, reasoning=Reasoning(budget_tokens=2048)),
        )
    assert result.final_content == "Rainy."
    second = model.captured[1].json()
    assert second["messages"][1] == {"role": "assistant", "content": [thought, use]}
    assert second["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2048}
    }
    assert second["inferenceConfig"]["maxTokens"] == 4096
    assert body_problems(model.captured) == []


def test_another_familys_state_never_goes_on_the_wire() -> None:
    call = ToolCall.of("toolu_1", "weather", {"city": "Oslo"})
    state = ProviderState("anthropic", {"content": [{"type": "thinking", "thinking": "hmm"}]})
    turn = ChatMessage.assistant("", (call,), state)
    body = provider("https://bedrock-runtime.us-east-1.amazonaws.com").encode(
        ask(
            messages=(ChatMessage.user("q"), turn, ChatMessage.tool_result("toolu_1", "ok")),
            tools=(weather.spec,),
        )
    )
    assert body["messages"][1] == {
        "role": "assistant",
        "content": [
            {"toolUse": {"toolUseId": "toolu_1", "name": "weather", "input": {"city": "Oslo"}}}
        ],
    }
    assert problems("ConverseRequest", body) == []


WEATHER = ToolSpec(name="weather", description="Weather.", parameters={"type": "object"})
UNDESCRIBED = ToolSpec(name="quiet", description="", parameters={"type": "object"})
SCHEMA = OutputSchema.of({"type": "object", "properties": {"city": {"type": "string"}}})
CALLED = ChatMessage.assistant("Let me look.", (ToolCall.of("c1", "weather", "{bad"),))
HISTORY = (ChatMessage.system("S."), ChatMessage.system("T."), ChatMessage.user("q"), CALLED,
           ChatMessage.tool_result("c1", "oops", is_error=True))  # fmt: skip
REQUESTS = {
    "plain": ask(),
    "auto": ask(tools=(WEATHER, UNDESCRIBED)),
    "required": ask(tools=(WEATHER,), tool_choice="required"),
    "named": ask(tools=(WEATHER,), tool_choice="weather"),
    "none": ask(messages=HISTORY, tools=(WEATHER,), tool_choice="none"),
    "history": ask(messages=HISTORY, tools=(WEATHER,), temperature=0.0, max_tokens=1),
    "output": ask(output=SCHEMA),
    "output forced": ask(tools=(WEATHER,), output=SCHEMA, output_forced=True),
    "output reasoning": ask(output=SCHEMA, reasoning=Reasoning(effort="low")),
    "output beside tools": ask(tools=(WEATHER,), output=SCHEMA),
    "reasoning": ask(reasoning=Reasoning(effort="high"), max_tokens=50_000),
}


@pytest.mark.parametrize("name", REQUESTS)
def test_every_request_body_is_a_converse_request_of_the_service_model(name: str) -> None:
    body = provider("https://bedrock-runtime.us-east-1.amazonaws.com").encode(REQUESTS[name])
    assert problems("ConverseRequest", body) == []
    assert problems("ConverseStreamRequest", body) == []


def test_the_checker_refuses_what_the_model_refuses() -> None:
    body = {"messages": [{"role": "assistant", "content": [{"text": "a", "toolUse": {}}]}],
            "modelId": "m", "toolConfig": {"toolChoice": {"none": {}}}, "stream": True}  # fmt: skip
    found = problems("ConverseRequest", body)
    assert "$.modelId: sent in the URI, not the body" in found
    assert "$.stream: no such member" in found
    assert (
        "$.messages[0].content[0]: a union needs exactly one member, has ['text', 'toolUse']"
        in found
    )
    assert "$.messages[0].content[0].toolUse.toolUseId: required" in found
    assert "$.toolConfig.tools: required" in found
    assert "$.toolConfig.toolChoice.none: no such member" in found
    assert problems("ToolResultStatus", "failed") == [
        "$: 'failed' is not one of ['success', 'error']"
    ]
    assert problems("InferenceConfiguration", {"maxTokens": "5"}) == ["$.maxTokens: not an integer"]


def test_choices_and_the_answer_tool_are_sent_as_converse_has_them() -> None:
    encode = provider("https://bedrock-runtime.us-east-1.amazonaws.com").encode
    assert encode(REQUESTS["required"])["toolConfig"]["toolChoice"] == {"any": {}}
    assert encode(REQUESTS["named"])["toolConfig"]["toolChoice"] == {"tool": {"name": "weather"}}
    assert "toolChoice" not in encode(REQUESTS["none"])["toolConfig"]  # Converse has no "none"
    forced = encode(REQUESTS["output forced"])["toolConfig"]
    assert forced["toolChoice"] == {"tool": {"name": "final_answer"}}
    assert [t["toolSpec"]["name"] for t in forced["tools"]] == ["weather", "final_answer"]
    assert forced["tools"][1]["toolSpec"]["inputSchema"]["json"] == SCHEMA.schema
    assert encode(REQUESTS["output reasoning"])["toolConfig"]["toolChoice"] == {"auto": {}}
    assert encode(REQUESTS["output beside tools"])["toolConfig"]["toolChoice"] == {"auto": {}}
    assert "description" not in encode(REQUESTS["auto"])["toolConfig"]["tools"][1]["toolSpec"]
    history = encode(REQUESTS["history"])
    assert history["system"] == [{"text": "S.\n\nT."}]
    assert history["messages"][1]["content"][1]["toolUse"]["input"] == {}  # broken arguments


def test_an_answer_tool_call_is_the_turns_answer() -> None:
    use = {"toolUse": {"toolUseId": "t1", "name": "final_answer", "input": {"city": "Oslo"}}}
    model = FakeBedrock([Blocks([use], "tool_use")])
    with bedrock_loopback(model) as base:
        response = complete(base, ask(output=SCHEMA))
    assert (response.content, response.tool_calls, response.stop) == (
        '{"city": "Oslo"}',
        (),
        Stop.END,
    )


def test_every_stop_reason_of_the_service_model_has_a_stop() -> None:
    expected = {
        "end_turn": Stop.END, "stop_sequence": Stop.END, "tool_use": Stop.TOOL_CALLS,
        "max_tokens": Stop.MAX_TOKENS, "guardrail_intervened": Stop.BLOCKED,
        "content_filtered": Stop.BLOCKED, "model_context_window_exceeded": Stop.CONTEXT_WINDOW,
        "malformed_tool_use": Stop.MALFORMED_CALL,
    }  # fmt: skip
    assert expected == STOPS
    assert set(shapes()["StopReason"]["enum"]) - set(STOPS) == {"malformed_model_output"}


@pytest.mark.parametrize(
    ("word", "stop", "refusal"),
    [("guardrail_intervened", Stop.BLOCKED, "Sorry, the model cannot answer this question."),
     ("content_filtered", Stop.BLOCKED, "Sorry, the model cannot answer this question."),
     ("max_tokens", Stop.MAX_TOKENS, None),
     ("model_context_window_exceeded", Stop.CONTEXT_WINDOW, None)],
)  # fmt: skip
def test_stop_reasons_are_told_apart(word: str, stop: Stop, refusal: str | None) -> None:
    body = converse_reply(Blocks([{"text": "Sorry, the model cannot answer this question."}], word))
    response = provider("https://bedrock-runtime.us-east-1.amazonaws.com").decode(body)
    assert (response.stop, response.finish_reason, response.refusal) == (stop, word, refusal)


def test_usage_counts_cache_reads_and_writes_as_input() -> None:
    body = converse_reply(Blocks([{"text": "hi"}]))
    body["usage"] = {"inputTokens": 10, "outputTokens": 5, "totalTokens": 45,
                     "cacheReadInputTokens": 20, "cacheWriteInputTokens": 10}  # fmt: skip
    assert problems("ConverseResponse", body) == []
    usage = provider("https://bedrock-runtime.us-east-1.amazonaws.com").decode(body).usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (40, 5)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.total_tokens) == (20, 10, 45)


TURNS = [Blocks([{"text": "hi"}]), Blocks([THOUGHT, {"text": "a"}]), Blocks([REDACTED]),
         FakeBedrock(SCRIPT).blocks({"messages": []})]  # fmt: skip


@pytest.mark.parametrize("turn", TURNS)
def test_the_fakes_answers_are_shaped_as_the_service_model_says(turn: Blocks) -> None:
    assert problems("ConverseResponse", converse_reply(turn)) == []
    for name, data in stream_events(turn):
        assert problems(stream_event_shape(name), data) == [], name


@pytest.mark.parametrize("turn", TURNS)
def test_a_streamed_turn_normalises_to_the_whole_ones_response(turn: Blocks) -> None:
    """The stream's deltas, assembled, decode to what the whole body decodes to; only answer
    text and thinking reach the live view, in order."""
    from toolwire.providers.bedrock_stream import StreamedConverse

    adapter = provider("https://bedrock-runtime.us-east-1.amazonaws.com")
    shown: list[Any] = []
    assembly = StreamedConverse(shown.append)
    for name, data in stream_events(turn):
        assembly.feed(name, data)
    whole, streamed = adapter.decode(converse_reply(turn)), adapter.decode(assembly.body())
    assert streamed == whole
    assert "".join(d.text for d in shown if d.kind == "content") == whole.content
    assert "".join(d.text for d in shown if d.kind == "thinking") == (whole.thinking or "")


def test_the_in_stream_error_statuses_are_the_service_models() -> None:
    assert error_statuses() == STREAM_ERROR_STATUSES


@pytest.mark.parametrize(
    ("region", "model", "zone"),
    [("eu-west-1", MODEL, TrustZone.EXTERNAL_EU),
     ("eu-central-1", MODEL, TrustZone.EXTERNAL_EU),
     ("eu-west-2", MODEL, TrustZone.EXTERNAL_GLOBAL),  # London: Europe, not the EU
     ("eu-central-2", MODEL, TrustZone.EXTERNAL_GLOBAL),  # Zurich
     ("eu-west-1", "eu." + MODEL, TrustZone.EXTERNAL_GLOBAL),  # a cross-region profile
     ("eu-west-1", "global." + MODEL, TrustZone.EXTERNAL_GLOBAL),
     ("us-east-1", MODEL, TrustZone.EXTERNAL_GLOBAL)],
)  # fmt: skip
def test_the_zone_is_the_eu_one_only_for_a_model_served_in_an_eu_region(
    region: str, model: str, zone: TrustZone
) -> None:
    assert zone_for(region, model) is zone
    made = BedrockProvider(model=model, credentials=AwsCredentials(Credentials("a", "b"), region))
    assert made.trust_zone is zone
    assert made.base_url == f"https://bedrock-runtime.{region}.amazonaws.com"
    given = BedrockProvider(model=model, credentials=AwsCredentials(Credentials("a", "b"), region),
                            trust_zone="local")  # fmt: skip
    assert given.trust_zone is TrustZone.LOCAL


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


def test_create_provider_takes_the_environments_credentials_and_region(
    aws_env: pytest.MonkeyPatch,
) -> None:
    made = create_provider("bedrock", model=MODEL)
    assert isinstance(made, BedrockProvider)
    assert (made.region, made.trust_zone, made.pricing_family) == (
        REGION,
        "external_global",
        "bedrock",
    )
    assert cost_of(made.pricing_family, "amazon.nova-pro-v1:0", Usage(1_000_000, 0)) == Decimal(
        "0.8"
    )
    assert create_provider("bedrock", model=MODEL, region="eu-west-1").trust_zone == "external_eu"
    resumed = create_provider(
        "bedrock", model=MODEL, base_url="https://bedrock-runtime.eu-south-2.amazonaws.com"
    )
    assert isinstance(resumed, BedrockProvider) and resumed.region == "eu-south-2"
    elsewhere = create_provider("bedrock", model=MODEL, base_url="http://127.0.0.1:9")
    assert elsewhere.pricing_family is None  # type: ignore[attr-defined]  # another server
    for shown in (repr(made), repr(made.credentials), repr(made.signer())):
        assert not any(s in shown for s in SECRETS)


def test_a_shared_profile_gives_the_credentials_and_region(
    aws_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"):
        aws_env.delenv(name)
    (tmp_path / "credentials").write_text(
        f"[work]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n"
        f"aws_session_token = {SESSION_TOKEN}\n"
    )
    (tmp_path / "config").write_text(f"[profile work]\nregion = {REGION}\n")
    aws_env.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    aws_env.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    aws_env.setenv("AWS_PROFILE", "work")
    model = FakeBedrock(["From the profile."])
    with bedrock_loopback(model) as base:
        made = create_provider("bedrock", model=MODEL, base_url=base)
        assert asyncio.run(made.complete(ask())).content == "From the profile."


class _RoleCredentials(BaseHTTPRequestHandler):
    """A container's credentials endpoint: each GET hands out the fake's temporary credentials,
    about to expire (so botocore refreshes them at every signature)."""

    fetched: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.fetched.append(self.headers.get("authorization", ""))
        expiry = datetime.now(UTC) + timedelta(minutes=2)
        given = {"AccessKeyId": ACCESS_KEY, "SecretAccessKey": SECRET_KEY,
                 "Token": SESSION_TOKEN, "Expiration": expiry.isoformat()}  # fmt: skip
        body = json.dumps(given).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_a_containers_role_gives_credentials_refreshed_at_each_signature(
    aws_env: pytest.MonkeyPatch,
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        aws_env.delenv(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RoleCredentials)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    _RoleCredentials.fetched.clear()
    try:
        uri = f"http://127.0.0.1:{server.server_address[1]}/v2/credentials/role"
        aws_env.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", uri)
        aws_env.setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "container-auth-token")
        model = FakeBedrock(["One.", "Two."])
        with bedrock_loopback(model) as base:
            made = create_provider("bedrock", model=MODEL, base_url=base)
            first = asyncio.run(made.complete(ask()))
            history = (ChatMessage.user("q"), ChatMessage.assistant("One."), ChatMessage.user("q"))
            second = asyncio.run(made.complete(ask(messages=history)))
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert (first.content, second.content) == ("One.", "Two.")
    assert len(_RoleCredentials.fetched) >= 3  # once to find them, then at each signature
    assert set(_RoleCredentials.fetched) == {"container-auth-token"}


@pytest.mark.parametrize(
    ("change", "message"),
    [({"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "AWS_SESSION_TOKEN": None},
      "provider bedrock needs AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
      "or AWS_PROFILE, or run where a role gives them"),
     ({"AWS_REGION": None}, "provider bedrock needs an AWS region: --region, AWS_REGION or the "
      "profile's"),
     ({"AWS_REGION": "us-east-1.evil.example/"}, "provider bedrock: 'us-east-1.evil.example/' is "
      "not an AWS region (eu-west-1)"),
     ({"AWS_PROFILE": "nobody"}, "provider bedrock: AWS credentials: The config profile (nobody) "
      "could not be found")],
)  # fmt: skip
def test_what_is_missing_is_a_config_error_naming_it(
    aws_env: pytest.MonkeyPatch, change: dict[str, str | None], message: str
) -> None:
    for name, value in change.items():
        if value is None:
            aws_env.delenv(name)
        else:
            aws_env.setenv(name, value)
    with pytest.raises(ConfigError) as caught:
        create_provider("bedrock", model=MODEL)
    assert str(caught.value) == message


def test_signing_logs_no_credential(caplog: pytest.LogCaptureFixture) -> None:
    model = FakeBedrock(["Rainy."])
    with caplog.at_level(logging.DEBUG), bedrock_loopback(model) as base:
        assert complete(base, ask()).content == "Rainy."
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "botocore" in {r.name.partition(".")[0] for r in caplog.records}  # botocore did log
    assert not any(s in logged for s in SECRETS)


def _botocore_client(base: str) -> Any:
    import botocore.session

    return botocore.session.Session().create_client(
        "bedrock-runtime", region_name=REGION, endpoint_url=base, aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY, aws_session_token=SESSION_TOKEN,
    )  # fmt: skip


@pytest.mark.parametrize("name", REQUESTS)
def test_botocores_own_client_takes_each_body_and_sends_the_same_bytes(
    aws_env: pytest.MonkeyPatch, name: str
) -> None:
    """botocore validates the body as parameters of ``converse`` and serializes them; what it
    sends is what the adapter sends, and the fake's signature check accepts its signature."""
    body = provider("https://bedrock-runtime.us-east-1.amazonaws.com").encode(REQUESTS[name])
    model = FakeBedrock(["Fine.", "Fine."])  # the history may hold one turn
    with bedrock_loopback(model) as base:
        answer = _botocore_client(base).converse(modelId=MODEL, **body)
        ours = complete(base, REQUESTS[name])
    assert answer["output"]["message"]["content"] == [{"text": "Fine."}] == [{"text": ours.content}]
    theirs, sent = model.captured
    assert theirs.path == sent.path == f"/model/{MODEL.replace(':', '%3A')}/converse"
    assert theirs.json() == sent.json() == body


def test_botocores_own_client_reads_the_fakes_event_stream() -> None:
    use = {"toolUse": {"toolUseId": "t1", "name": "weather", "input": OSLO}}
    model = FakeBedrock([Blocks([THOUGHT, {"text": "Rain."}, use], "tool_use")])
    with bedrock_loopback(model) as base:
        streamed = _botocore_client(base).converse_stream(
            modelId=MODEL, messages=[{"role": "user", "content": [{"text": "q"}]}]
        )
        events = [next(iter(e.items())) for e in streamed["stream"]]
    turn = model.blocks({"messages": []})
    assert events == stream_events(turn)


def test_without_botocore_the_error_says_how_to_install_it(
    aws_env: pytest.MonkeyPatch,
) -> None:
    aws_env.setitem(sys.modules, "botocore.auth", None)  # what an import finds when it is absent
    with pytest.raises(ConfigError) as caught:
        create_provider("bedrock", model=MODEL)
    assert str(caught.value) == "provider bedrock needs botocore: pip install 'toolwire[bedrock]'"


def test_the_run_form_cannot_send_the_servers_aws_credentials_to_another_url(
    aws_env: pytest.MonkeyPatch,
) -> None:
    from toolwire.inspector.settings import provider_factory

    served = provider_factory(None, base_url="http://127.0.0.1:9")
    with pytest.raises(ConfigError) as caught:
        served.at("bedrock", MODEL, "https://collector.example")
    assert str(caught.value) == (
        "base_url: bedrock signs with this server's AWS credentials, so it calls only the "
        "server's own endpoint"
    )
    own = served.at("bedrock", MODEL, "http://127.0.0.1:9/")
    assert isinstance(own, BedrockProvider) and own.base_url == "http://127.0.0.1:9"


def test_the_served_providers_take_the_region_given(aws_env: pytest.MonkeyPatch) -> None:
    from toolwire.inspector.settings import provider_factory

    made = provider_factory(None, region="eu-north-1")("bedrock", MODEL)
    assert isinstance(made, BedrockProvider)
    assert (made.region, made.trust_zone) == ("eu-north-1", TrustZone.EXTERNAL_EU)
