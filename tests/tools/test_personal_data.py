"""Personal data by trust zone: shown to a local or privately hosted model, masked for external
ones, the same in the content, the artifacts and every path a call takes (a run, a direct call,
the MCP server's), and always masked in a stored copy at ``redacted``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire import ChatMessage, RunOptions, ToolCall, ToolContext, User
from toolwire.core.errors import ConfigError
from toolwire.core.trust import TrustZone
from toolwire.demo._content import CUSTOMERS
from toolwire.mcp.serve import ServedTools
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.scripted import ScriptedProvider
from toolwire.runs.runtime import RunOutcome, RunRequest, Runtime
from toolwire.store.runs import RunStore
from toolwire.tools.builtin import builtin_tools
from toolwire.tools.disclosure import personal_data_shown
from toolwire.tools.registry import ToolRegistry
from toolwire.workspace.config import Workspace, load_workspace

from ..fakes import call

ADMIN = User("admin", is_admin=True)
EMAILS = [customer[1] for customer in CUSTOMERS]
READ = {"table": "customers", "fields": ["id", "email"], "limit": 4}
SHOWN_TEXT = "".join(
    f"\n- customers row {n}\n  id: {n}\n  email: {e}" for n, e in enumerate(EMAILS, 1)
)
MASKED_TEXT = "".join(f"\n- customers row {n}\n  id: {n}\n  email: ***@***" for n in range(1, 5))


def _direct(workspace: Workspace, zone: str, store: RunStore | None = None) -> RunOutcome:
    runtime = Runtime(ToolRegistry(builtin_tools()), recorder=store)
    context = ToolContext(user=ADMIN, workspace=workspace)
    tool_call = ToolCall.of("call_1", "read_records", READ)
    return anyio.run(
        lambda: runtime.call(
            tool_call,
            context=context,
            offered=frozenset({"read_records"}),
            options=RunOptions(trust_zone=zone),
        )
    )


def _tool_step(outcome: RunOutcome) -> Any:
    (step,) = [s for s in outcome.steps if s.kind == "tool"]
    return step


@pytest.mark.parametrize("zone", ["local", "private_hosted"])
def test_a_trusted_zone_reads_email_addresses_in_text_and_artifact(
    workspace: Workspace, zone: str
) -> None:
    step = _tool_step(_direct(workspace, zone))
    assert step.tool_result.endswith(SHOWN_TEXT)
    (artifact,) = step.tool_artifacts
    assert artifact.data["rows"] == [[str(n), e] for n, e in enumerate(EMAILS, 1)]


@pytest.mark.parametrize("zone", ["external_eu", "external_global"])
def test_an_external_zone_reads_them_masked_in_text_and_artifact(
    workspace: Workspace, zone: str
) -> None:
    step = _tool_step(_direct(workspace, zone))
    assert step.tool_result.endswith(MASKED_TEXT)
    (artifact,) = step.tool_artifacts
    assert artifact.data["rows"] == [[str(n), "***@***"] for n in range(1, 5)]
    assert not any(e in step.tool_result + json.dumps(artifact.data) for e in EMAILS)


@pytest.mark.parametrize(("zone", "expected"), [(None, SHOWN_TEXT), ("external_eu", MASKED_TEXT)])
def test_a_model_run_reads_them_as_its_charter_zone_says(
    workspace: Workspace, zone: str | None, expected: str
) -> None:
    # The scripted provider runs on this machine (local); a run may name a stricter zone.
    provider = ScriptedProvider.from_turns(
        [{"tool_calls": [call("read_records", READ)]}, {"content": "done"}]
    )
    request = RunRequest(
        messages=(ChatMessage.user("who are our customers?"),),
        provider=provider,
        options=RunOptions(allowed_tools=["read_records"], trust_zone=zone),
        context=ToolContext(user=ADMIN, workspace=workspace),
    )
    outcome = Runtime(ToolRegistry(builtin_tools())).run_sync(request)
    assert _tool_step(outcome).tool_result.endswith(expected)


def test_the_mcp_server_shows_them_to_a_local_admin_only(workspace: Workspace) -> None:
    def answer(zone: TrustZone, admin: bool = True) -> str:
        served = ServedTools(
            runtime=Runtime(ToolRegistry(builtin_tools())),
            context=ToolContext(user=User("mcp", is_admin=admin), workspace=workspace),
            zone=zone,
        )
        return anyio.run(served.answer, "read_records", READ).content

    assert answer(TrustZone.LOCAL).endswith(SHOWN_TEXT)
    assert answer(TrustZone.EXTERNAL_GLOBAL).endswith(MASKED_TEXT)


def test_a_stored_copy_at_redacted_masks_them_whatever_the_zone(
    workspace: Workspace, tmp_path: Path
) -> None:
    with RunStore.open(f"sqlite:///{tmp_path / 'runs.db'}", privacy=PrivacyLevel.REDACTED) as store:
        outcome = _direct(workspace, "local", store)
        assert _tool_step(outcome).tool_result.endswith(SHOWN_TEXT)  # the model saw them
        stored = store.get_run(outcome.run_id)
    assert stored is not None
    (step,) = [s for s in stored.steps if s["kind"] == "tool"]
    assert step["tool_result"].endswith(MASKED_TEXT)
    assert step["tool_artifacts"][0]["data"]["rows"] == [[str(n), "***@***"] for n in range(1, 5)]
    assert not any(e in json.dumps(stored.steps) for e in EMAILS)


def test_the_workspace_policy_names_the_zones(tmp_path: Path, workspace: Workspace) -> None:
    file = tmp_path / "workspace.toml"
    file.write_text('personal_data_shown_to = ["local"]\n')
    strict = load_workspace(file)
    assert personal_data_shown(ToolContext(workspace=strict, trust_zone=TrustZone.LOCAL))
    hosted = ToolContext(workspace=strict, trust_zone=TrustZone.PRIVATE_HOSTED)
    assert not personal_data_shown(hosted)
    assert personal_data_shown(ToolContext(trust_zone=TrustZone.PRIVATE_HOSTED))  # the default
    assert not personal_data_shown(ToolContext())  # no zone known: the least trusted
    file.write_text('personal_data_shown_to = ["moon"]\n')
    with pytest.raises(Exception, match="personal_data_shown_to: unknown trust zone 'moon'"):
        load_workspace(file)


@pytest.mark.parametrize(
    ("zones", "missing"),
    [('["external_eu"]', "local, private_hosted"), ('["local", "external_global"]',
     "private_hosted, external_eu")],
)  # fmt: skip
def test_a_policy_showing_a_zone_but_not_a_more_trusted_one_is_refused(
    tmp_path: Path, zones: str, missing: str
) -> None:
    # The least trusted zone a run can reach (a fallback chain's least trusted provider's)
    # decides what it is shown; that holds for every zone it reaches only on such a policy.
    file = tmp_path / "workspace.toml"
    file.write_text(f"personal_data_shown_to = {zones}\n")
    with pytest.raises(ConfigError, match=f"but not {missing}: a zone more trusted"):
        load_workspace(file)
    file.write_text('personal_data_shown_to = ["external_eu", "private_hosted", "local"]\n')
    shown = load_workspace(file).personal_data_shown_to
    assert shown == {TrustZone.LOCAL, TrustZone.PRIVATE_HOSTED, TrustZone.EXTERNAL_EU}


def test_secrets_stay_masked_in_a_local_zone(workspace: Workspace) -> None:
    runtime = Runtime(ToolRegistry(builtin_tools()))
    context = ToolContext(user=ADMIN, workspace=workspace)
    tool_call = ToolCall.of("call_1", "fetch_logs", {"lines": 50})
    outcome = anyio.run(
        lambda: runtime.call(
            tool_call,
            context=context,
            offered=frozenset({"fetch_logs"}),
            options=RunOptions(trust_zone="local"),
        )
    )
    shown = _tool_step(outcome).tool_result
    assert CUSTOMERS[0][1] in shown  # ada's address: personal data, shown here
    assert CUSTOMERS[0][4] not in shown and "token=***" in shown  # her API token: a secret
