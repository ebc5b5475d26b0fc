"""Reprs name and measure, never show: canaries planted in every content, argument, cell,
message, preview and input field never reach ``repr()`` or ``str()``, while the data is still
there to read through the attributes (so a blanked field would fail the test too)."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.shared.auth import OAuthToken

from toolwire import (
    Artifact,
    ArtifactType,
    ChatMessage,
    CompletionRequest,
    CompletionResponse,
    RunOptions,
    ScriptedProvider,
    ToolCall,
    ToolLoop,
    ToolRegistry,
    ToolResult,
    ToolSpec,
    tool,
)
from toolwire.core.bounding import BoundedContent
from toolwire.core.egress import Line, Sent
from toolwire.core.errors import ServerError
from toolwire.core.lifecycle import RunStatus, TerminationReason
from toolwire.core.messages import ProviderState
from toolwire.core.reprs import NAME_CHARS, utf8_size
from toolwire.core.sealing import StateKey
from toolwire.inspector.models import (
    DecisionBody,
    Defaults,
    InvokeBody,
    InvokeResult,
    PendingResult,
    RerunTemplate,
    RunBody,
    RunResult,
    RunsList,
)
from toolwire.inspector.questions import AnswerBody
from toolwire.inspector.settings import InspectorSettings, RunDefaults
from toolwire.loop.endings import LoopResult
from toolwire.loop.seam import Refused
from toolwire.loop.state import CallPreview, Contained, Pause, Recorded, RunState
from toolwire.loop.suspension import Refuse, Run
from toolwire.mcp.asks import Ask, Reply
from toolwire.mcp.auth import server_auth
from toolwire.mcp.connection import McpFailure
from toolwire.mcp.form import Field
from toolwire.policy.containment import Provenance, Source
from toolwire.policy.quarantine import Variable, Vault
from toolwire.policy.trace import (
    DecisionStep,
    FailedStep,
    LlmStep,
    RequestStep,
    RunStep,
    RunTrace,
    ToolInvocation,
    ToolStep,
)
from toolwire.providers.azure import AzureEndpoint, AzureOpenAIProvider
from toolwire.providers.base import Delta, FailedAttempt, Stop, Usage
from toolwire.providers.cloud import CloudSettings
from toolwire.providers.fallback import FallbackProvider
from toolwire.providers.http import _StreamCall
from toolwire.providers.openai import OpenAIProvider
from toolwire.providers.openai_stream import _Call
from toolwire.providers.responses import ResponsesProvider
from toolwire.providers.scripted import Script, ScriptedCall, Turn
from toolwire.providers.tokens import EntraToken
from toolwire.providers.vertex import VertexGeminiProvider, VertexLocation
from toolwire.runs.runtime import (
    OperatorDecision,
    ProviderRef,
    RunOutcome,
    RunRequest,
    Runtime,
    Waiting,
)
from toolwire.store.records import RunSummary, StoredRun
from toolwire.workspace.mcp_auth import McpAuth, ResolvedAuth
from toolwire.workspace.mcp_servers import Launch
from toolwire.workspace.prompts import PromptArgument, PromptTemplate

from .fakes import leaves

MARK = "CANARY"


class Canaries:
    """Mints unique canaries (some non-ASCII, to take the slow size path) and keeps them."""

    def __init__(self) -> None:
        self.planted: list[str] = []
        self._next = itertools.count(1)

    def __call__(self) -> str:
        n = next(self._next)
        canary = f"{MARK}-{n}-{'kanárie ✓' if n % 2 else 'plain'}"
        self.planted.append(canary)
        return canary


def shown(value: object) -> list[str]:
    """Every way a value prints: itself and in containers, repr and str."""
    texts = [repr(value), repr([value]), str([value]), repr({"k": (value,)})]
    if not isinstance(value, ToolResult):  # it has no string form at all
        texts += [str(value), f"{value}"]
    return texts


def assert_hidden(value: object, planted: Sequence[str]) -> None:
    assert planted, "the case planted no canary"
    reachable = "\n".join(leaves(value))
    for canary in planted:
        assert canary in reachable, f"{canary} is not in the value: a field was lost"
    for text in shown(value):
        assert MARK not in text, text
        assert "kanárie" not in text and "kan\\xe1rie" not in text, text


# -- every type, built by hand -----------------------------------------------------------------


ARTIFACTS: dict[str, Callable[[Canaries], Artifact]] = {
    "table": lambda c: Artifact.table(c(), [c(), c()], [[c(), c()], [1, c()]]),
    "text": lambda c: Artifact.text(c(), c()),
    "tree": lambda c: Artifact.tree(c(), [{"label": c(), "children": [{"label": c()}]}]),
    "key_value": lambda c: Artifact.key_value(c(), [("host", c()), (c(), "x")]),
    "code": lambda c: Artifact.code(c(), c(), language="python"),
    "link": lambda c: Artifact.link(c(), "https://example.org/" + c(), c()),
    "of JSON": lambda c: Artifact(ArtifactType.TEXT, c(), {"json": {"nested": [c(), {"a": c()}]}}),
}


def artifacts(c: Canaries) -> tuple[Artifact, ...]:
    return tuple(build(c) for build in ARTIFACTS.values())


def tool_call(c: Canaries) -> ToolCall:
    return ToolCall.of("call_1", "lookup", {"query": c(), "limit": 3})


def assistant(c: Canaries) -> ChatMessage:
    state = ProviderState("anthropic", [{"type": "thinking", "thinking": c(), "signature": c()}])
    return ChatMessage.assistant(c(), [tool_call(c)], state)


def messages(c: Canaries) -> tuple[ChatMessage, ...]:
    return (
        ChatMessage.system(c()),
        ChatMessage.user(c()),
        assistant(c),
        ChatMessage.tool_result("call_1", c(), is_error=True),
    )


def response(c: Canaries) -> CompletionResponse:
    return CompletionResponse(
        content=c(), tool_calls=(tool_call(c),), thinking=c(), refusal=c(),
        stop=Stop.REFUSAL, finish_reason="refusal", model="m1", usage=Usage(3, 4),
        provider_state=ProviderState("gemini", {"parts": [c()]}), raw={"body": c()},
    )  # fmt: skip


def invocation(c: Canaries) -> ToolInvocation:
    return ToolInvocation(
        name="lookup", arguments={"query": c()}, result=c(), is_error=False,
        artifacts=artifacts(c), call_id="call_1",
    )  # fmt: skip


def steps(c: Canaries) -> tuple[RunStep, ...]:
    return (
        RequestStep(round=1, messages_sent=messages(c), tool_specs=("lookup",),
                    refusals=({"tool": "rm", "reason": "disabled", "detail": c()},)),
        LlmStep(round=1, content=c(), thinking=c(), refusal=c(), finish_reason="stop",
                requested_tool_calls=(tool_call(c),), raw={"choices": [{"text": c()}]}),
        ToolStep(round=1, tool_name="lookup", tool_result=c(), tool_call_id="call_1",
                 tool_arguments={"query": c()}, tool_artifacts=artifacts(c)),
        ToolStep(round=1, tool_name="lookup", tool_result=c(), tool_arguments=c(),
                 tool_is_error=True),
        DecisionStep(round=2, decision="deny", decided_by="ann", turn_digest="ab12",
                     decided_at="2024-01-01T00:00:00+00:00", decision_reason=c()),
        FailedStep(round=2, provider="openai", error_class="ServerError", error=c(),
                   error_status=503, next_provider="anthropic"),
    )  # fmt: skip


def pause(c: Canaries) -> Pause:
    return Pause(
        status=RunStatus.AWAITING_INPUT, calls=(tool_call(c),),
        previews=(CallPreview(index=0, tool="lookup", lines=(c(), c())),), digest="ab12",
        input_tool="lookup", input_schema={"properties": {"q": {"description": c()}}},
    )  # fmt: skip


def state(c: Canaries) -> RunState:
    return RunState(messages=messages(c), rounds=2, invocations=(invocation(c),), pause=pause(c))


def loop_result(c: Canaries) -> LoopResult:
    return LoopResult(
        final_content=c(), trace=(invocation(c), invocation(c)), iterations=2, truncated=False,
        reason=TerminationReason.SUSPENDED, usage=Usage(1, 2), refusal=c(), suspended=state(c),
    )  # fmt: skip


def summary(c: Canaries) -> dict[str, Any]:
    return dict(
        id="r1", status="completed", created_at="2024-01-01", finished_at=None, provider="p",
        model=None, privacy_level="full", termination_reason="completed", truncated=False,
        rounds=1, prompt_tokens=1, completion_tokens=1, final_answer=c(), error=None,
        step_count=1,
    )  # fmt: skip


CASES: dict[str, Callable[[Canaries], object]] = {
    "ToolResult.text": lambda c: ToolResult.text(c(), *artifacts(c)),
    "ToolResult.error": lambda c: ToolResult.error(c()),
    **{f"Artifact {kind}": build for kind, build in ARTIFACTS.items()},
    "ToolCall": tool_call,
    "ProviderState": lambda c: ProviderState("anthropic", {"thinking": c()}),
    "ChatMessage": assistant,
    "messages": messages,
    "Delta": lambda c: (Delta("content", c()), Delta("thinking", c())),
    "CompletionRequest": lambda c: CompletionRequest(
        messages=messages(c), tools=(ToolSpec("lookup", "Looks up."),), temperature=0.5
    ),
    "CompletionResponse": response,
    "ToolInvocation": invocation,
    "steps": steps,
    "RunTrace": lambda c: _trace_of(steps(c)),
    "CallPreview": lambda c: CallPreview(index=0, tool="lookup", lines=(c(),)),
    "Pause": pause,
    "Recorded": lambda c: Recorded("call_1", c(), False),
    "RunState": state,
    "LoopResult": loop_result,
    "RunOutcome": lambda c: RunOutcome(
        run_id="r1",
        status=RunStatus.AWAITING_INPUT,
        result=loop_result(c),
        steps=steps(c),
        wall_ms=1.5,
    ),
    "RunRequest": lambda c: RunRequest.of(c(), system=c(), provider=ScriptedProvider([])),
    "OperatorDecision": lambda c: OperatorDecision(
        action="input", digest="ab12", actor="ann", reason=c(), values={"city": c()}
    ),
    "Waiting": lambda c: Waiting(
        run_id="r1",
        status=RunStatus.AWAITING_APPROVAL,
        sealed=c(),
        digest="ab12",
        provider=ProviderRef(name="scripted", script=c()),
        next_sequence=3,
    ),
    "BoundedContent": lambda c: BoundedContent(c(), 9),
    "CloudSettings": lambda c: CloudSettings(
        deployment="d", region="westeurope", credential=_Credential(c())
    ),
    "Run": lambda c: Run({"query": c()}),
    "Refuse": lambda c: Refuse(c(), Refused.DENIED),
    "Contained": lambda c: Contained(0, c(), Refused.UNTRUSTED_CONTEXT.value),
    "Provenance": lambda c: Provenance(untrusted=(Source(c(), 1),), classified_by=Source(c(), 2)),
    "Variable": lambda c: Variable("$v1_0badc0de", c(), tool=c(), field=c(), flowed=((c(), 2),)),
    "Vault": lambda c: Vault((Variable("$v1_0badc0de", c(), tool=c()),)),
    "RunState vault": lambda c: RunState(
        messages=(), vault=Vault((Variable("$v1_0badc0de", c()),))
    ),
    "CallPreview held": lambda c: CallPreview(index=0, tool="t", lines=(c(),), held=c()),
    "openai stream call": lambda c: _Call("call_1", "lookup", [c(), c()]),
    "http stream call": lambda c: _StreamCall(
        url="https://api.example/v1?key=" + c(),
        headers={"authorization": c()},
        content=c().encode(),
        on_event=lambda kind, data: None,
    ),
    "RunSummary": lambda c: RunSummary(**summary(c)),
    "StoredRun": lambda c: StoredRun(**summary(c), steps=[{"content": c()}]),
    "RunBody": lambda c: RunBody(prompt=c(), system_prompt=c()),
    "InvokeBody": lambda c: InvokeBody(arguments={"query": c()}),
    "DecisionBody": lambda c: DecisionBody(
        action="input", digest="ab12", reason=c(), values={"city": c()}
    ),
    "InvokeResult": lambda c: InvokeResult(
        tool="lookup",
        content=c(),
        is_error=False,
        artifacts=[ARTIFACTS["table"](c).to_dict()],
        duration_ms=1.0,
    ),
    "RunResult": lambda c: RunResult(
        context={"type": "context"}, steps=[{"content": c()}], result={"final": c()}
    ),
    "RunsList": lambda c: RunsList(runs=[{"final_answer": c()}], stored=True),
    "PendingResult": lambda c: PendingResult(
        status="awaiting_input",
        digest="ab12",
        calls=[tool_call(c).to_dict()],
        previews=[{"lines": [c()]}],
        input_tool=None,
        input_schema=None,
    ),
    "Defaults": lambda c: Defaults(prompt=c(), provider="scripted", model="m"),
    "RerunTemplate": lambda c: RerunTemplate(
        run_id="r1", available=True, prompt=c(), system_prompt=c(), provider="scripted"
    ),
    "RunBody with rerun_of": lambda c: RunBody(prompt=c(), rerun_of="r1"),
    # the ledger holds names and counts only; a tool name is the seam's, never a model's text
    "egress Sent": lambda c: Sent("openai", 2, (Line(c(), "content", "untrusted", 3, 5),)),
    "LlmStep with egress": lambda c: LlmStep(
        round=1, content=c(), egress=Sent(c(), 1, (Line(c(), "public", "trusted", 1, 1),))
    ),
    "PromptTemplate": lambda c: PromptTemplate(
        name="p",
        description=c(),
        template=c(),
        arguments=(PromptArgument(name="a", description=c(), choices=(c(), c())),),
    ),
    "InspectorSettings": lambda c: InspectorSettings(
        registry=ToolRegistry(),
        provider_factory=lambda name, model: ScriptedProvider([]),
        token=c(),
        defaults=RunDefaults(prompt=c()),
    ),
    "Script": lambda c: Script(
        turns=[
            Turn(
                content=c(),
                thinking=c(),
                refusal=c(),
                tool_calls=[ScriptedCall(name="lookup", arguments={"query": c()})],
            ),
            Turn(tool_calls=[ScriptedCall(name="lookup", arguments=c())]),
        ]
    ),
    "Field": lambda c: form_field(c),
    "Ask": lambda c: Ask(
        id="a1",
        run_id="r1",
        server="s",
        tool="s__t",
        message=c(),
        fields=(form_field(c),),
        wait_s=1.0,
        asked_at="now",
    ),
    "Reply": lambda c: Reply(
        action="accept", content={"name": c(), "tags": [c()]}, by="ops", reason=c()
    ),
    "AnswerBody": lambda c: AnswerBody(action="accept", values={"name": c()}),
}


def form_field(c: Canaries) -> Field:
    return Field(
        name="name",
        kind="choice",
        title=c(),
        description=c(),
        default=c(),
        choices=(c(),),
        labels=(c(),),
    )


@dataclasses.dataclass
class _Credential:
    """A stand-in for azure-identity's credentials, holding the token it gives."""

    token: str

    def get_token(self, *scopes: str) -> Any:
        return types.SimpleNamespace(token=self.token, expires_on=4_000_000_000)


def test_no_cloud_route_shows_its_key_or_its_token() -> None:
    """A key given to Azure, and the bearer tokens both clouds' sources hold once fetched."""
    c = Canaries()
    key, token = c(), c()
    source = EntraToken(_Credential(token))
    assert asyncio.run(source.token()) == token  # the source now holds it
    endpoint = AzureEndpoint.of("https://res.openai.azure.com", "dep")
    keyed = AzureOpenAIProvider(endpoint=endpoint, api_key=key)
    borne = AzureOpenAIProvider(endpoint=endpoint, token_source=source)
    vertex = VertexGeminiProvider(model="gemini-2.5-flash", token_source=source,
                                  location=VertexLocation.of("p", "europe-west4"))  # fmt: skip
    for value in (source, keyed, borne, vertex):
        for text in shown(value):
            assert MARK not in text and "kanárie" not in text, text


def test_no_mcp_sign_in_shows_its_secret_its_key_or_its_tokens(tmp_path: Path) -> None:
    """A server's resolved auth table (in its launch), the auth wrapping the SDK's provider
    once it holds tokens, its token file, and a refusal whose server quoted all of them."""
    c = Canaries()
    secret, key, access, refresh = c(), c(), c(), c()
    table = McpAuth(kind="client_credentials", client_id="machine", client_secret_env="S",
                    tokens=tmp_path)  # fmt: skip
    for resolved, held in ((ResolvedAuth(settings=table, client_secret=secret), secret),
                           (ResolvedAuth(settings=table, private_key=key), key)):  # fmt: skip
        launch = Launch(name="notes", timeout=5, url="https://mcp.example.com/mcp", auth=resolved)
        auth = server_auth(launch, None)
        assert auth is not None
        tokens = OAuthToken(access_token=access, refresh_token=refresh, expires_in=60)
        auth.provider.context.current_tokens = tokens
        storage = auth.provider.context.storage
        asyncio.run(storage.set_tokens(tokens))
        quoted = httpx2.Response(401, json={"error": "invalid_client", "error_description":
                                            f"not {held} {access} {refresh}"})  # fmt: skip
        quoted.read()
        failure = auth._failure(quoted, "the token request was refused")
        assert failure.description is not None and failure.description.startswith("not ***")
        for value in (launch, resolved, auth, storage, failure, McpFailure("start", str(failure))):
            for text in shown(value):
                assert MARK not in text and "kanárie" not in text, text


def _trace_of(recorded: Sequence[Any]) -> tuple[RunTrace, list[Any]]:
    trace = RunTrace()
    for step in recorded:
        trace.record(step)
    return trace, trace.steps


@pytest.mark.parametrize("build", CASES.values(), ids=CASES.keys())
def test_no_repr_or_str_shows_a_canary(build: Callable[[Canaries], object]) -> None:
    c = Canaries()
    value = build(c)
    assert_hidden(value, c.planted)


def test_reprs_name_and_measure() -> None:
    c = Canaries()
    text = "é" * 10
    assert repr(Artifact.table("t", ["a", "b"], [[1, 2], [3, 4], [5, 6]])) == (
        "<Artifact type='table' label_bytes=1 columns=2 rows=3>"
    )
    assert repr(ToolCall("call_1", "lookup", text)) == (
        "<ToolCall id='call_1' name='lookup' arguments_bytes=20>"
    )
    assert repr(ChatMessage.tool_result("call_1", "ok", is_error=True)) == (
        "<ChatMessage role=tool content_bytes=2 tool_call_id='call_1' is_error=True>"
    )
    step = ToolStep(
        round=2,
        tool_name="lookup",
        tool_result="abc",
        tool_arguments={"q": c()},
        tool_result_bytes=60_000,
        tool_artifacts=artifacts(c),
        duration_ms=1.234,
    )
    assert repr(step) == (
        "<ToolStep round=2 tool_name='lookup' arguments=dict(1 keys) is_error=False "
        "result_bytes=3 original_bytes=60000 artifacts=7 duration_ms=1.23>"
    )
    assert repr(OperatorDecision(action="input", digest="ab", actor="ann", values={"x": 5})) == (
        "<OperatorDecision action='input' digest='ab' actor='ann' values=dict(1 keys)>"
    )
    assert utf8_size(text) == 20 and utf8_size("\ud800") == 3
    sent = Sent("openai", 2, (Line("lookup", "public", "trusted", 3, 5),))
    assert repr(sent) == "<Sent provider='openai' copies=2 lines=1 wire_bytes=10>"


def test_a_long_name_is_clipped() -> None:
    shown = repr(ToolCall("i" * 1000, "n" * 1000))
    assert "i" * NAME_CHARS + "…" in shown and "i" * (NAME_CHARS + 1) not in shown


def test_reprs_stay_small_whatever_the_size_of_the_data() -> None:
    big = "x" * 1_000_000
    result = LoopResult(
        final_content=big,
        trace=tuple(
            ToolInvocation(name="t", arguments={"a": big}, result=big, is_error=False)
            for _ in range(100)
        ),
        iterations=1, truncated=False, reason=TerminationReason.COMPLETED, usage=Usage(),
    )  # fmt: skip
    assert len(repr(result)) < 300
    assert "final_content_bytes=1000000" in repr(result) and "calls=100" in repr(result)


def test_equality_is_unchanged() -> None:
    c = Canaries()
    first, second = steps(c), steps(c)
    assert first != second  # other canaries
    assert steps(Canaries()) == steps(Canaries())
    assert ToolCall("a", "b", "{}") == ToolCall("a", "b", "{}")
    assert RunSummary(**summary(Canaries())) == RunSummary(**summary(Canaries()))


# -- real runs ---------------------------------------------------------------------------------


def _loop(c: Canaries, *, approval: bool = False) -> tuple[ToolLoop, list[ChatMessage]]:
    content, cell, label, answer, thinking, raw = c(), c(), c(), c(), c(), c()
    argument = c()

    @tool(name="lookup", data_class="public", requires_approval=approval)
    def lookup(query: str) -> ToolResult:
        return ToolResult.text(
            content + query,
            Artifact.table(label, ["k", "v"], [["cell", cell]]),
            Artifact.text("text", query),
        )

    def respond(sent: Sequence[ChatMessage]) -> CompletionResponse:
        if not any(m.role == "tool" for m in sent):
            call = ToolCall.of("call_1", "lookup", {"query": argument})
            return CompletionResponse(tool_calls=(call,), stop=Stop.TOOL_CALLS, thinking=thinking,
                                      raw={"body": raw})  # fmt: skip
        return CompletionResponse(content=answer, raw={"body": raw})

    return ToolLoop(ScriptedProvider(respond), ToolRegistry([lookup])), [ChatMessage.user(c())]


def test_a_real_run_prints_no_canary_but_keeps_its_data() -> None:
    c = Canaries()
    loop, prompt = _loop(c)
    trace = RunTrace(capture_raw=True)
    result = loop.run_sync(prompt, options=RunOptions(capture_raw=True), trace=trace)
    content, cell, label, answer, thinking, raw, argument, question = c.planted

    assert result.final_content == answer
    assert result.trace[0].result == content + argument
    assert result.trace[0].arguments == {"query": argument}
    assert result.trace[0].artifacts[0].data["rows"] == [["cell", cell]]
    assert result.trace[0].artifacts[0].label == label
    tool_step = trace.of_kind(ToolStep)[0]
    assert tool_step.tool_result == content + argument and tool_step.tool_artifacts is not None
    first = trace.of_kind(LlmStep)[0]
    assert first.thinking == thinking and first.raw == {"body": raw}
    assert trace.of_kind(RequestStep)[0].messages_sent[0].content == question

    assert_hidden(result, [answer, content, argument, cell, label])
    assert_hidden(trace.steps, c.planted)
    for step in trace.steps:
        assert MARK not in repr(step) and MARK not in str(step)


def test_a_fallback_chain_and_its_attempts_print_no_key_or_message() -> None:
    c = Canaries()
    key, message = c(), c()
    adapter = OpenAIProvider(model="m", api_key=key, base_url="http://127.0.0.1:1/v1")
    chain = FallbackProvider([adapter, ScriptedProvider([])])
    attempt = FailedAttempt(provider="openai", error=ServerError(message, body=message),
                            duration_ms=1.0, next="scripted")  # fmt: skip
    request = CompletionRequest(messages=(ChatMessage.user("hi"),), on_failure=print)
    for value in (chain, chain.circuits, chain.circuits.of("openai"), attempt, request):
        for text in shown(value):
            assert MARK not in text, text
    assert adapter._api_key == key and str(attempt.error) == message  # still there to use


def test_a_suspended_run_state_prints_no_preview_or_message() -> None:
    c = Canaries()
    loop, prompt = _loop(c, approval=True)
    result = loop.run_sync(prompt)
    argument, question = c.planted[6], c.planted[7]
    assert result.suspended is not None and result.suspended.pause is not None
    state = result.suspended
    assert any(argument in line for line in state.pause.previews[0].lines)  # type: ignore[union-attr]
    assert state.messages[0].content == question
    assert_hidden(state, [argument, question])
    assert_hidden(result, [argument, question])


def test_the_runtime_outcome_prints_no_canary() -> None:
    c = Canaries()
    loop, prompt = _loop(c, approval=True)
    runtime = Runtime(loop.registry, state_key=StateKey.generate())
    request = RunRequest(messages=tuple(prompt), provider=loop.provider)
    waiting = runtime.run_sync(request)
    assert waiting.status is RunStatus.AWAITING_APPROVAL and waiting.pause is not None
    assert_hidden(waiting, c.planted[6:])

    reason = c()
    decision = OperatorDecision(
        action="approve", digest=waiting.pause.digest, actor="ann", reason=reason
    )
    done = asyncio.run(runtime.resume(waiting.run_id, decision, provider=loop.provider))
    assert done.status is RunStatus.COMPLETED and done.result is not None
    answer, content, argument, cell = c.planted[3], c.planted[0], c.planted[6], c.planted[1]
    assert done.result.final_content == answer
    decided = [s for s in done.steps if isinstance(s, DecisionStep)]
    assert decided[0].decision_reason == reason
    assert_hidden(done, [answer, content, argument, cell, reason])
    assert_hidden(decision, [reason])


def test_the_responses_adapter_and_its_stream_never_show_the_key_or_the_answer() -> None:
    c = Canaries()
    key, answer, secret = c(), c(), c()
    provider = ResponsesProvider(model="gpt-5", api_key=key, auth="api-key")
    assembly = provider.assembly(None)
    item = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": secret}
    assembly.feed("", {"type": "response.output_item.done", "output_index": 0, "item": item})
    assembly.feed("", {"type": "response.output_item.added", "output_index": 1,
                       "item": {"type": "message", "id": "m", "content": []}})  # fmt: skip
    assembly.feed("", {"type": "response.output_text.delta", "output_index": 1,
                       "content_index": 0, "delta": answer})  # fmt: skip
    assert provider.headers(key) == {"api-key": key}  # the key is there to be sent
    assert secret in str(assembly.body()) and answer in str(assembly.body())
    for value in (provider, assembly):
        for text in shown(value):
            assert MARK not in text, text


def test_the_bedrock_adapter_prints_no_aws_credential_but_signs_with_it() -> None:
    from botocore.credentials import Credentials

    from toolwire.providers.aws_auth import AwsCredentials
    from toolwire.providers.bedrock import BedrockProvider

    c = Canaries()
    key, secret, token = c(), c(), c()
    credentials = AwsCredentials(Credentials(key, secret, token), "eu-west-1")
    provider = BedrockProvider(model="amazon.nova-pro-v1:0", credentials=credentials)
    signer = provider.signer()
    signed = signer.sign(provider.url(), {"content-type": "application/json"}, b"{}")
    assert f"Credential={key}/" in signed["Authorization"]
    assert signed["X-Amz-Security-Token"] == token
    assert set(signer.secrets()) == {key, secret, token}  # held, to be masked in errors
    assert_hidden(credentials.frozen(), [key, secret, token])
    for value in (provider, credentials, signer, provider.session()):
        for text in shown(value):
            assert MARK not in text and "kanárie" not in text, text
