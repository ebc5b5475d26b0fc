"""The policy gate: each condition alone, their order when several fail, and the trace."""

from __future__ import annotations

from typing import Any

import pytest

from toolwire import ChatMessage, RunOptions, RunTrace, ToolContext, ToolLoop, User, tool
from toolwire.core.errors import ConfigError, ToolError
from toolwire.core.messages import ToolSpec
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.policy import DataClass, Decision, Grant, Refusal, ToolPolicy, TrustZone
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace

from .fakes import RecordingProvider

ADMIN = ToolContext(user=User("root", is_admin=True))
BOB = ToolContext(user=User("bob"))
NOBODY = ToolContext()
OPEN = Grant()
LOCAL = TrustZone.LOCAL


@tool(group="records", data_class="content")
def plain() -> str:
    return "plain"


@tool(group="system", data_class="system_diagnostics", requires_admin=True)
def diag() -> str:
    return "diag"


@tool(group="records", data_class="content", enabled_by_default=False)
def dormant() -> str:
    return "dormant"


@tool(group="mystery")
def undeclared() -> str:
    """No data class declared: the strictest class applies."""
    return "undeclared"


@tool(group="records", data_class=" Secret_Adjacent ")
def odd_class() -> str:
    return "odd"


@tool(group="code", data_class="source_code")
def source() -> str:
    return "source"


@tool(group="structure", data_class="configuration")
def config() -> str:
    return "config"


def policy() -> ToolPolicy:
    return ToolPolicy(ToolRegistry([plain, diag, dormant, undeclared, odd_class, source, config]))


def decide(
    name: str,
    context: ToolContext = ADMIN,
    grant: Grant = OPEN,
    zone: TrustZone = LOCAL,
    gate: ToolPolicy | None = None,
) -> Decision:
    return (gate or policy()).decide(name, context=context, grant=grant, zone=zone)


def test_an_unregistered_tool_is_refused() -> None:
    assert decide("ghost") == Decision("ghost", False, Refusal.NOT_REGISTERED)


def test_a_tool_disabled_by_default_is_refused_until_enabled() -> None:
    gate = policy()
    assert decide("dormant", gate=gate).reason is Refusal.DISABLED
    gate.registry.availability.set_tool("dormant", True)
    assert decide("dormant", gate=gate).allowed


def test_a_disabled_group_disables_its_tools() -> None:
    gate = policy()
    gate.registry.availability.set_group("records", False)
    assert decide("plain", gate=gate).reason is Refusal.DISABLED


def test_a_tool_override_never_re_enables_a_tool_in_a_disabled_group() -> None:
    gate = policy()
    gate.registry.availability.set_group("records", False)
    gate.registry.availability.set_tool("plain", True)
    gate.registry.availability.set_tool("dormant", True)
    assert decide("plain", gate=gate).reason is Refusal.DISABLED
    assert decide("dormant", gate=gate).reason is Refusal.DISABLED
    gate.registry.availability.set_group("records", None)
    assert decide("dormant", gate=gate).allowed


@pytest.mark.parametrize("context", [BOB, NOBODY])
def test_admin_only_tools_refuse_non_admins_and_anonymous_runs(context: ToolContext) -> None:
    assert decide("diag", context=context).reason is Refusal.REQUIRES_ADMIN
    assert decide("plain", context=context).allowed


def test_admin_only_tools_allow_admins() -> None:
    assert decide("diag", context=ADMIN).allowed


@pytest.mark.parametrize(
    ("grant", "allowed"),
    [
        (Grant.of(tools=["plain"]), True),
        (Grant.of(tools=["source"]), False),
        (Grant.of(tools=[]), False),
        (Grant.of(groups=["records"]), True),
        (Grant.of(groups=["system"]), False),
        (Grant.of(groups=[]), False),
        (Grant.of(tools=["plain"], groups=["system"]), False),
        (Grant.of(tools=["plain"], groups=["records"]), True),
    ],
)
def test_the_grant_restricts_by_tool_and_by_group(grant: Grant, allowed: bool) -> None:
    decision = decide("plain", grant=grant)
    assert decision.allowed is allowed
    assert decision.reason is (None if allowed else Refusal.NOT_GRANTED)


@pytest.mark.parametrize(
    ("zone", "highest"),
    [
        (TrustZone.LOCAL, DataClass.SECRET_ADJACENT),
        (TrustZone.PRIVATE_HOSTED, DataClass.SYSTEM_DIAGNOSTICS),
        (TrustZone.EXTERNAL_EU, DataClass.CONFIGURATION),
        (TrustZone.EXTERNAL_GLOBAL, DataClass.CONTENT),
    ],
)
def test_each_zone_admits_data_classes_up_to_its_ceiling(
    zone: TrustZone, highest: DataClass
) -> None:
    classes = {"plain": DataClass.CONTENT, "source": DataClass.SOURCE_CODE,
               "config": DataClass.CONFIGURATION, "diag": DataClass.SYSTEM_DIAGNOSTICS,
               "undeclared": DataClass.SECRET_ADJACENT}  # fmt: skip
    for name, data_class in classes.items():
        decision = decide(name, zone=zone)
        assert decision.allowed is (data_class <= highest), (name, zone)
        if not decision.allowed:
            assert decision.reason is Refusal.TRUST_ZONE
            assert decision.detail == (
                f"data class {data_class.name.lower()} is above the {zone} ceiling"
            )


@pytest.mark.parametrize(
    ("value", "zone"),
    [(None, TrustZone.EXTERNAL_GLOBAL), ("LOCAL ", TrustZone.LOCAL),
     (" External_EU", TrustZone.EXTERNAL_EU), (TrustZone.PRIVATE_HOSTED, TrustZone.PRIVATE_HOSTED)],
)  # fmt: skip
def test_a_missing_zone_is_the_least_trusted_and_names_are_read_in_any_case(
    value: object, zone: TrustZone
) -> None:
    assert TrustZone.parse(value) is zone


@pytest.mark.parametrize("value", ["", "moon", "externalglobal", 3])
def test_a_misspelt_zone_is_a_clear_error_not_silently_the_strictest(value: object) -> None:
    with pytest.raises(ConfigError, match=r"unknown trust zone .*: choose one of local, "):
        TrustZone.parse(value)


def test_an_unknown_group_without_a_declared_class_is_secret_adjacent() -> None:
    assert undeclared.data_class == "secret_adjacent"
    assert decide("undeclared", zone=TrustZone.PRIVATE_HOSTED).reason is Refusal.TRUST_ZONE
    assert decide("undeclared", zone=TrustZone.LOCAL).allowed


def test_a_misspelt_data_class_fails_where_the_tool_is_defined() -> None:
    with pytest.raises(ConfigError, match="unknown data class 'contnet': choose one of public"):

        @tool(data_class="contnet")
        def typo() -> str:
            return "never offered, never silently hidden"

    assert DataClass.parse(None) is DataClass.SECRET_ADJACENT  # missing is the strictest
    assert decide("odd_class", zone=TrustZone.PRIVATE_HOSTED).reason is Refusal.TRUST_ZONE
    assert decide("odd_class", zone=TrustZone.LOCAL).allowed


def test_a_tool_whose_class_is_misspelt_is_refused_at_registration() -> None:
    class Handmade:
        spec = ToolSpec("handmade", "A tool written without the decorator.")
        group, enabled_by_default, requires_admin, requires_approval = "x", True, False, False
        data_class = "secret-adjacent"

        def execute(self, arguments: Any, context: Any) -> str:
            return "x"

    with pytest.raises(ToolError, match='tool "handmade": unknown data class'):
        ToolRegistry([Handmade()])  # type: ignore[list-item]


def test_checks_run_in_order_and_the_first_failure_is_the_reason() -> None:
    gate = policy()
    gate.registry.availability.set_tool("diag", False)
    nothing = Grant.of(tools=[])
    worst = TrustZone.EXTERNAL_GLOBAL
    assert decide("diag", BOB, nothing, worst, gate).reason is Refusal.DISABLED
    gate.registry.availability.set_tool("diag", None)
    assert decide("diag", BOB, nothing, worst, gate).reason is Refusal.REQUIRES_ADMIN
    assert decide("diag", ADMIN, nothing, worst, gate).reason is Refusal.NOT_GRANTED
    assert decide("diag", ADMIN, OPEN, worst, gate).reason is Refusal.TRUST_ZONE
    assert decide("diag", ADMIN, OPEN, LOCAL, gate).allowed


def test_built_ins_offered_to_an_admin_on_an_external_provider_are_content_only() -> None:
    gate = ToolPolicy(ToolRegistry(builtin_tools()))
    admin = ToolContext(user=ADMIN.user, workspace=Workspace())
    offered, refused = gate.offered(None, context=admin, grant=OPEN, zone=TrustZone.EXTERNAL_GLOBAL)
    assert offered == [
        "read_records", "search_records", "count_records", "record_history", "record_tree",
        "browse_folder", "find_files", "file_info", "find_missing_files", "file_references",
        "search_documents", "fetch_document",
        "write_file",
    ]  # fmt: skip
    assert {d.name: d.reason for d in refused}["get_env"] is Refusal.TRUST_ZONE
    bob = ToolContext(user=BOB.user, workspace=Workspace())
    local, _ = gate.offered(None, context=bob, grant=OPEN, zone=LOCAL)
    assert "get_env" not in local and "read_source" not in local and "read_records" in local


def test_every_built_in_declares_its_group_and_a_known_data_class() -> None:
    for builtin in builtin_tools():
        assert builtin.group in {
            "records", "structure", "files", "code", "system", "editing", "documents",
            "configuration", "accounts",
        }  # fmt: skip
        assert DataClass.parse(builtin.data_class).name.lower() == builtin.data_class


def test_refusals_are_on_the_request_step_with_their_reasons() -> None:
    provider = RecordingProvider.of([{"content": "fine"}])
    provider.trust_zone = TrustZone.EXTERNAL_EU
    trace = RunTrace()
    ToolLoop(provider, policy().registry).run_sync(
        [ChatMessage.user("hi")],
        context=BOB,
        options=RunOptions(
            allowed_tools=["plain", "ghost", "dormant", "diag", "config", "source", "undeclared"],
            grant=Grant.of(groups=["records", "system", "mystery", "code"]),
        ),
        trace=trace,
    )
    request = trace.steps[0]
    assert request.kind == "request"
    assert request.tool_specs == ("plain", "source")
    assert request.to_dict()["refusals"] == [
        {"tool": "ghost", "reason": "not_registered"},
        {"tool": "dormant", "reason": "disabled"},
        {"tool": "diag", "reason": "requires_admin"},
        {"tool": "config", "reason": "not_granted"},
        {"tool": "undeclared", "reason": "trust_zone",
         "detail": "data class secret_adjacent is above the external_eu ceiling"},
    ]  # fmt: skip
    assert [t.name for t in provider.requests[0].tools] == ["plain", "source"]
