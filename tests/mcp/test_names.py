"""A remote (MCP) tool is a registered tool: its name is kept as it is below ``redacted``, where
a name the model made up is kept as ``unknown:`` and a digest."""

from __future__ import annotations

from pathlib import Path

from toolwire import RunOptions, ScriptedProvider
from toolwire.policy.privacy import PrivacyLevel, tool_name
from toolwire.runs.runtime import RunRequest, Runtime
from toolwire.store import RunStore

from ..fakes import call
from .kit import ADMIN, PYTHON, remote_registry, script, workspace

INVENTED = "canary__exfiltrate_the_notes"  # shaped like a remote tool's name, but none has it


def test_a_remote_tools_name_is_kept_and_an_invented_one_is_digested(tmp_path: Path) -> None:
    ws = workspace(tmp_path, f"""
[mcp_servers.canary]
command = "{PYTHON}"
args = [{script("canary.py")}]
pass_env = ["CANARY_0"]
enabled = true
admin_only = false
data_class = "public"
""", environ={"CANARY_0": "canary-zero"})  # fmt: skip
    registry, problems = remote_registry(ws)
    assert (problems, registry.names()) == ([], ["canary__probe"])
    provider = ScriptedProvider.from_turns([
        {"tool_calls": [call("canary__probe", {"n": 0}), call(INVENTED)]}, {"content": "done"},
    ])  # fmt: skip
    request = RunRequest.of("go", provider=provider, context=ADMIN,
                            options=RunOptions(trust_zone="local"))  # fmt: skip
    with RunStore.open(str(tmp_path / "runs.db"), privacy=PrivacyLevel.METADATA) as store:
        outcome = Runtime(registry, recorder=store).run_sync(request)
        stored = store.get_run(outcome.run_id)
    assert outcome.status == "completed", outcome
    assert stored is not None
    digest = tool_name(INVENTED, frozenset())
    assert [s["tool_name"] for s in stored.steps if s["kind"] == "tool"] == [
        "canary__probe", digest,
    ]  # fmt: skip
    (llm,) = [s for s in stored.steps if s.get("requested_tool_names")]
    assert llm["requested_tool_names"] == ["canary__probe", digest]
