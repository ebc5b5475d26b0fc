from __future__ import annotations

import json
from pathlib import Path

from toolwire import ArtifactType, ScriptedProvider, ToolContext, User
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.demo import prepare_demo
from toolwire.demo._content import CUSTOMERS, ENV_SECRETS, HISTORY, JOB_TOKEN, LOG_JWT, STAFF
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.tools.defaults import default_registry

# Fake secrets in the demo's configuration, crontab, unit files and documents.
CONFIG_SECRETS = [
    "Sup3rS3cret", "correct-horse-battery-staple", "glpat-DEMO1234567890abcdefghij",
    "ghp_R3p0rtT0k3nR3p0rtT0k3nR3p0rtT0k3nabc", "B4ckupS3cret", "op_oncall_7f3a9c2e",
]  # fmt: skip


def test_the_demo_replay_runs_and_leaks_no_secret(tmp_path: Path) -> None:
    demo = prepare_demo(tmp_path)
    provider = ScriptedProvider.from_file(demo.script_path)
    assert provider.name == "demo replay"
    context = ToolContext(user=User("admin", is_admin=True), workspace=demo.workspace)
    runtime = Runtime(default_registry(), state_key=StateKey.generate())
    outcome = runtime.run_sync(RunRequest.of(demo.prompt, provider=provider, context=context))
    assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
    assert [c.name for c in outcome.pause.calls] == ["write_file"]
    approve = OperatorDecision(action="approve", digest=outcome.pause.digest, actor="admin")
    resumed = runtime.resume_sync(outcome.run_id, approve, provider=provider, context=context)
    demo.workspace.dispose()
    assert resumed.status is RunStatus.COMPLETED and resumed.result is not None
    assert [i.name for i in resumed.result.trace] == ["write_file"]
    assert (demo.root / "files" / "notes" / "review.md").read_text().startswith("# Review")
    assert outcome.result is not None
    invocations = outcome.result.trace
    assert [i.name for i in invocations] == [
        "read_records", "browse_folder", "read_source", "get_system_status", "get_relations",
        "search_documents", "check_config", "list_scheduled_jobs", "record_history",
    ]  # fmt: skip
    assert not any(i.is_error for i in invocations)
    found = {i.name: i.result for i in invocations}
    assert "1. guides/discounts.md: Volume discount" in found["search_documents"]
    assert "- app.toml:7: schema: database.port: must be of type integer" in found["check_config"]
    assert (
        "schedule 61 * * * *; runs python -m shop.stock check; invalid schedule"
        in (found["list_scheduled_jobs"])
    )
    assert "  field: password_hash\n  old_value: withheld\n" in found["record_history"]
    types = {a.type for i in invocations for a in i.artifacts}
    assert types == {
        ArtifactType.TABLE,
        ArtifactType.TREE,
        ArtifactType.CODE,
        ArtifactType.KEY_VALUE,
    }
    assert "Fields not readable (unknown or sensitive): 'password_hash'" in invocations[0].result
    everything = json.dumps([s.to_dict() for s in outcome.steps], default=str)
    secrets = [c[3] for c in CUSTOMERS] + [c[4] for c in CUSTOMERS] + list(ENV_SECRETS.values())
    secrets += [s[4] for s in STAFF] + [HISTORY[1][3], JOB_TOKEN, *CONFIG_SECRETS]
    for secret in [*secrets, LOG_JWT]:
        assert secret not in everything
    assert resumed.result.final_content.startswith("The shop has four customers")


def test_prepare_demo_is_idempotent_and_rebuilds_a_stale_copy(tmp_path: Path) -> None:
    first = prepare_demo(tmp_path)
    marker = first.root / "files" / "marker.txt"
    marker.write_text("kept")
    second = prepare_demo(tmp_path)
    assert second.root == first.root and marker.read_text() == "kept"
    (first.root / ".ready").write_text("0")
    prepare_demo(tmp_path)
    assert not marker.exists()
    assert sorted(p.name for p in (tmp_path).iterdir()) == ["demo"]
