"""A provider of one's own: ``BaseProvider`` gives what the loop needs besides ``complete``,
and a provider lacking part of the protocol is refused when it is handed over, by name."""

from __future__ import annotations

import pytest

from toolwire import (
    BaseProvider,
    ChatMessage,
    CompletionRequest,
    CompletionResponse,
    RunOutcome,
    RunRequest,
    Runtime,
    ToolCall,
    ToolLoop,
    ToolRegistry,
    tool,
)
from toolwire.core.errors import ConfigError
from toolwire.core.trust import TrustZone
from toolwire.policy.trace import RequestStep


class EchoModel(BaseProvider):
    """The custom provider the docs show: it calls ``add`` once, then answers."""

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        if request.messages[-1].role == "tool":
            return CompletionResponse(content=f"the sum is {request.messages[-1].content}")
        return CompletionResponse(tool_calls=(ToolCall("c1", "add", '{"a": 2, "b": 3}'),))


@tool(data_class="public")
def add(a: int, b: int) -> str:
    """Add two numbers."""
    return str(a + b)


@tool(data_class="source_code")
def inventory() -> str:
    """What is in stock."""
    return "12 lamps"


def test_a_subclass_writing_only_complete_runs_a_tool_loop() -> None:
    model = EchoModel()
    assert (model.name, model.trust_zone) == ("EchoModel", TrustZone.EXTERNAL_GLOBAL)
    result = ToolLoop(model, ToolRegistry([add])).run_sync([ChatMessage.user("2 + 3?")])
    assert result.final_content == "the sum is 5"
    assert [(i.name, i.result) for i in result.trace] == [("add", "5")]


def offered(outcome: RunOutcome) -> list[str]:
    (first, *_) = [step for step in outcome.steps if isinstance(step, RequestStep)]
    return sorted(first.tool_specs)


def test_a_subclass_runs_in_the_runtime_under_the_name_and_zone_it_is_given() -> None:
    runtime = Runtime(ToolRegistry([add, inventory]))
    request = RunRequest.of("2 + 3?", provider=EchoModel(name="echo", trust_zone="local"))
    assert (request.provider_ref.name, request.provider_ref.trust_zone) == ("echo", "local")
    outcome = runtime.run_sync(request)
    assert outcome.result is not None and outcome.result.final_content == "the sum is 5"
    assert offered(outcome) == ["add", "inventory"]  # a local model may read source code


def test_the_default_zone_is_the_least_trusted_so_the_gate_offers_it_least() -> None:
    runtime = Runtime(ToolRegistry([add, inventory]))
    outcome = runtime.run_sync(RunRequest.of("2 + 3?", provider=EchoModel()))
    assert offered(outcome) == ["add"]  # a source-code tool is not offered to an unknown zone


def test_a_class_level_name_and_zone_are_kept() -> None:
    class Named(EchoModel):
        name = "house model"
        trust_zone = TrustZone.PRIVATE_HOSTED

    assert (Named().name, Named().trust_zone) == ("house model", TrustZone.PRIVATE_HOSTED)


def test_a_subclass_without_complete_cannot_be_made() -> None:
    class Unfinished(BaseProvider):
        pass

    with pytest.raises(TypeError, match=r"abstract method '?complete"):
        Unfinished()  # type: ignore[abstract]


def test_an_unknown_zone_is_refused_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="unknown trust zone 'nearby': choose one of local"):
        EchoModel(trust_zone="nearby")


class WrittenBeforeSessions:
    """A provider written against the protocol before ``session()`` was part of it."""

    name = "old"
    trust_zone = TrustZone.LOCAL

    async def complete(self, request: CompletionRequest) -> CompletionResponse:
        return CompletionResponse(content="hi")


class NotAProvider:
    pass


MISSING: dict[type, str] = {
    WrittenBeforeSessions: "WrittenBeforeSessions is not a provider: it has no session()",
    NotAProvider: "NotAProvider is not a provider: it has no name, trust_zone, session(), "
    "complete()",
}


@pytest.mark.parametrize("kind", list(MISSING), ids=lambda k: k.__name__)
def test_a_provider_lacking_part_of_the_protocol_is_refused_when_handed_over(kind: type) -> None:
    for handed in (
        lambda: ToolLoop(kind(), ToolRegistry([add])),
        lambda: RunRequest.of("go", provider=kind()),
    ):
        with pytest.raises(TypeError) as refused:
            handed()
        assert str(refused.value).startswith(MISSING[kind])
        assert "Subclass toolwire.BaseProvider" in str(refused.value)


def test_a_provider_with_a_zone_nobody_knows_is_refused_by_name() -> None:
    class Elsewhere(WrittenBeforeSessions):
        trust_zone = "the moon"  # type: ignore[assignment]

        def session(self) -> object:
            return None

    with pytest.raises(ConfigError, match="unknown trust zone 'the moon'"):
        ToolLoop(Elsewhere(), ToolRegistry([add]))  # type: ignore[arg-type]
