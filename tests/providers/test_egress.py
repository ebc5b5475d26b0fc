"""Byte-level egress proof: artifacts never reach the wire, for every adapter.

Hypothesis generates multi-round runs whose tool attaches artifacts of every type, each carrying a
unique canary (plain ASCII, JSON-special characters that escaping changes, and non-ASCII). Every
request body each adapter sends is captured, through httpx's MockTransport and through a real
loopback server, and searched for every canary in every encoding it could take. Every tool
result's bounded content, by contrast, must be there.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, quote_plus

import pytest
from botocore.credentials import Credentials
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import (
    Artifact,
    ChatMessage,
    RunOptions,
    RunTrace,
    ToolLoop,
    ToolRegistry,
    ToolResult,
    tool,
)
from toolwire.core.bounding import CONTENT_BYTE_CAP, bound_content
from toolwire.core.personal import mask_personal
from toolwire.providers.aws_auth import AwsCredentials
from toolwire.providers.bedrock import BedrockProvider
from toolwire.providers.http import HttpSettings

from .bedrock_server import (
    ACCESS_KEY,
    REGION,
    SECRET_KEY,
    SESSION_TOKEN,
    FakeBedrock,
    bedrock_loopback,
)
from .servers import ADAPTERS, Captured, FakeModel, loopback, make_provider

# Characters JSON must escape, markup, and non-ASCII of 2, 3 and 4 UTF-8 bytes.
CANARY_TAIL = '"\\/\n\t\x01</script>&é€😀\u2028'
TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
OVERSIZED = "ünïcode " * (CONTENT_BYTE_CAP // 8)  # over the cap: the bounded text must go out


@st.composite
def runs(draw: st.DrawFn) -> list[list[tuple[str, str]]]:
    """Rounds of calls; each call's (content, canary)."""
    rounds = draw(st.integers(1, 3))
    out = []
    for _ in range(rounds):
        calls = draw(st.integers(1, 2))
        contents = [draw(st.one_of(TEXT, st.just(OVERSIZED))) for _ in range(calls)]
        out.append([(content, canary(draw(TEXT))) for content in contents])
    return out


def canary(extra: str) -> str:
    return f"cnry{uuid.uuid4().hex}{CANARY_TAIL}{extra}"


def core(value: str) -> str:
    return value[:36]  # "cnry" and 32 hex digits: unique, and the same in every encoding


def artifacts(secret: str) -> list[Artifact]:
    return [
        Artifact.table(secret, ["col", secret], [[secret, "x"]]),
        Artifact.text("text", secret),
        Artifact.key_value("kv", [(secret, secret)]),
        Artifact.tree("tree", [{"label": secret, "children": [{"label": secret}]}]),
        Artifact.code("code", secret, language="python"),
        Artifact.link("link", "https://example.test/" + quote(secret), secret),
    ]


def encodings(secret: str) -> list[str]:
    return [
        secret,
        core(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        quote(secret),
        quote(secret, safe=""),
        quote_plus(secret),
    ]


def assert_no_canary(bodies: list[bytes], secrets: list[str]) -> None:
    for body in bodies:
        text = body.decode("utf-8")
        for secret in secrets:
            for form in encodings(secret):
                assert form not in text
                assert form.encode("utf-8") not in body


def run_probe(provider: Any, plan: list[list[tuple[str, str]]], *, stream: bool) -> Any:
    flat = [call for round_ in plan for call in round_]

    @tool(name="probe", group="demo", data_class="public")
    def probe(n: int) -> ToolResult:
        """Return result n."""
        content, secret = flat[n]
        return ToolResult.text(f"r{n}: {content}", *artifacts(secret))

    pieces: list[str] = []
    trace = RunTrace(delta_observers=[lambda _round, delta: pieces.append(delta.text)])
    result = ToolLoop(provider, ToolRegistry([probe])).run_sync(
        [ChatMessage.user("go")], options=RunOptions(stream=stream), trace=trace
    )
    assert ("".join(pieces) == "done") is stream  # the answer really streamed, or really not
    return result


def script(plan: list[list[tuple[str, str]]]) -> list[Any]:
    turns: list[Any] = []
    n = 0
    for round_ in plan:
        turns.append([("probe", {"n": n + i}) for i in range(len(round_))])
        n += len(round_)
    return [*turns, "done"]


def asked_to_stream(captured: Captured) -> bool:
    """Whether a request asked for a stream (Gemini and Bedrock say so in the path)."""
    path = captured.path
    streamed = ":streamGenerateContent" in path or path.endswith("/converse-stream")
    return streamed or captured.json().get("stream") is True


def check(
    captured: list[Captured], result: Any, plan: list[list[tuple[str, str]]], stream: bool
) -> None:
    flat = [call for round_ in plan for call in round_]
    assert result.final_content == "done"
    assert len(captured) == len(plan) + 1
    assert [asked_to_stream(c) for c in captured] == [stream] * len(captured)
    # The artifacts were really made, and reached the trace...
    for invocation, (_, secret) in zip(result.trace, flat, strict=True):
        assert invocation.artifacts[1].data == {"text": mask_personal(secret)}  # as the zone
    # ...but no byte of them reached the wire.
    assert_no_canary([c.body for c in captured], [s for _, s in flat])
    last = captured[-1].body.decode("utf-8")
    for n, (content, _) in enumerate(flat):  # the model's zone is external: no personal data
        bounded = bound_content(mask_personal(f"r{n}: {content}")).text
        assert json.dumps(bounded, ensure_ascii=False)[1:-1] in last


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("name", ADAPTERS)
@settings(max_examples=20, deadline=None)
@given(plan=runs())
def test_no_artifact_byte_reaches_the_wire_through_mock_transport(
    name: str, stream: bool, plan: list[list[tuple[str, str]]]
) -> None:
    model = FakeModel(script(plan))
    result = run_probe(make_provider(name, transport=model.transport()), plan, stream=stream)
    check(model.captured, result, plan, stream)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeModel, str]]:
    model = FakeModel()
    with loopback(model) as base:
        yield model, base


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("name", ADAPTERS)
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=runs())
def test_no_artifact_byte_reaches_the_wire_over_loopback(
    server: tuple[FakeModel, str], name: str, stream: bool, plan: list[list[tuple[str, str]]]
) -> None:
    model, base = server
    model.turns = script(plan)
    model.captured.clear()
    result = run_probe(make_provider(name, base=base), plan, stream=stream)
    check(model.captured, result, plan, stream)


@pytest.fixture(scope="module")
def bedrock_server() -> Iterator[tuple[FakeBedrock, str]]:
    model = FakeBedrock()
    with bedrock_loopback(model) as base:
        yield model, base


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=runs())
def test_no_artifact_byte_reaches_bedrock_over_signed_loopback(
    bedrock_server: tuple[FakeBedrock, str], stream: bool, plan: list[list[tuple[str, str]]]
) -> None:
    """The same proof for Bedrock's Converse and its event stream, each request's signature
    checked by the fake runtime."""
    model, base = bedrock_server
    model.turns = script(plan)
    model.captured.clear()
    credentials = AwsCredentials(Credentials(ACCESS_KEY, SECRET_KEY, SESSION_TOKEN), REGION)
    provider = BedrockProvider(model="amazon.nova-pro-v1:0", credentials=credentials,
                               base_url=base, http=HttpSettings(timeout=10))  # fmt: skip
    result = run_probe(provider, plan, stream=stream)
    check(model.captured, result, plan, stream)


def test_the_canary_search_finds_a_canary_that_does_leak() -> None:
    """The search itself can fail: each encoding of a canary in a body is caught."""
    secret = canary("ß")
    for form in encodings(secret):
        with pytest.raises(AssertionError):
            assert_no_canary([f'{{"x": "{form}"}}'.encode()], [secret])
