"""A run's charter against the ways a run crosses processes: whoever carries a run on, it acts
for its own user, on its own workspace, at its own privacy level; a process that cannot honour
that refuses and changes nothing. On a real SQLite file and a real PostgreSQL server.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, update

from toolwire import RunOptions, ScriptedProvider, ToolContext, User
from toolwire.core.binding import bound
from toolwire.core.errors import ConfigError, StoreError
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import CHARTER, StateKey
from toolwire.demo import prepare_demo
from toolwire.inspector.app import create_app
from toolwire.inspector.rerun import NO_CHARTER
from toolwire.inspector.settings import InspectorSettings
from toolwire.policy.charter import (
    CHARTER_VERSION,
    LOCATION_ONLY,
    Charter,
    CharterRefused,
    identity,
)
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Provider
from toolwire.runs.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore, schema
from toolwire.store.engine import resolve_url
from toolwire.tools.defaults import default_registry
from toolwire.workspace.config import load_workspace

from .conftest import Backend
from .resume_kit import run_columns

KEY = StateKey(b"c" * 32)
TOKEN = "t" * 32
NOTE = "    moved-out-canary-3f1a\n"  # what the approved write_file writes
SCRIPT = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "charter.txt", "text": NOTE}}]},
    {"tool_calls": [{"name": "list_users", "arguments": {}}]},
    {"content": "done"},
]
ANN = User("ann", is_admin=False)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return prepare_demo(tmp_path_factory.mktemp("demo")).root


def copy_of(demo: Path, where: Path) -> Path:
    """A workspace of its own (files, database), as its TOML file."""
    shutil.copytree(demo, where)
    return where / "workspace.toml"


@pytest.fixture
def places(demo: Path, tmp_path: Path) -> tuple[Path, Path]:
    return copy_of(demo, tmp_path / "a"), copy_of(demo, tmp_path / "b")


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"name": "charter-script", "turns": SCRIPT}))
    return path


def submit(
    url: str, script: Path, workspace: Path, privacy: PrivacyLevel, user: User | None = ANN
) -> RunOutcome:
    """A run submitted by one process at ``privacy``: it waits for the write's approval."""
    with RunStore.open(url, privacy=privacy) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        request = RunRequest.of(
            "write the note, then list the staff",
            provider=ScriptedProvider.from_file(script, trust_zone="local"),
            options=RunOptions(max_rounds=5),
            context=ToolContext(user=user, workspace=load_workspace(workspace)),
        )
        outcome = runtime.run_sync(request)
    assert outcome.status is RunStatus.AWAITING_APPROVAL
    return outcome


def inspector(
    url: str, script: Path, workspace: Path, privacy: PrivacyLevel
) -> Iterator[TestClient]:
    """Another process's inspector: an admin, its own workspace, its own level."""
    store = RunStore.open(url, privacy=privacy)

    def factory(name: str, model: str | None) -> Provider:
        if name != "scripted":
            raise ConfigError(f"no provider {name} here")
        return ScriptedProvider.from_file(script, trust_zone="local")

    settings = InspectorSettings(
        registry=default_registry(discover=False), provider_factory=factory, token=TOKEN,
        store=store, privacy_level=privacy.value, workspace=load_workspace(workspace),
        state_key=KEY,
    )  # fmt: skip
    client = TestClient(create_app(settings), base_url="http://127.0.0.1")
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    try:
        yield client
    finally:
        client.close()
        store.close()


def approve_in(client: TestClient, outcome: RunOutcome) -> list[dict[str, Any]]:
    pause = outcome.pause
    assert pause is not None
    body = {"action": "approve", "digest": pause.digest}
    with client.stream("POST", f"/api/runs/{outcome.run_id}/decision", json=body) as answer:
        assert answer.status_code == 200, answer.read()
        return [json.loads(line) for line in answer.iter_lines() if line]


def test_an_inspector_approval_goes_on_as_the_runs_user_on_its_workspace(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, theirs = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    for client in inspector(backend.url, script, theirs, PrivacyLevel.FULL):
        events = approve_in(client, outcome)
    assert events[0]["privacy_level"] == "metadata"  # the run's, not the server's
    assert (events[-1]["type"], events[-1]["status"]) == ("end", "completed")
    steps = [e["step"] for e in events if e["type"] == "step"]
    decision = next(s for s in steps if s["kind"] == "decision")
    assert decision["decided_by"] == "admin"  # the operator is recorded ...
    listed = next(s for s in steps if s["kind"] == "tool" and s["tool_name"] == "list_users")
    assert listed["tool_is_error"]  # ... but the run still acts for ann, who is no admin
    sent = json.dumps([s.get("messages_sent") for s in steps if s["kind"] == "request"])
    assert "grace@example.com" not in sent and "Grace Hopper" not in sent
    # The approved write landed in the run's workspace, not in the server's.
    assert (ours.parent / "files" / "charter.txt").read_text() == NOTE
    assert not (theirs.parent / "files" / "charter.txt").exists()


@pytest.mark.parametrize(
    ("submitted", "decided"),
    [(PrivacyLevel.METADATA, PrivacyLevel.FULL), (PrivacyLevel.FULL, PrivacyLevel.METADATA)],
)
def test_a_resumed_run_is_stored_at_its_own_level_whoever_resumes_it(
    backend: Backend,
    script: Path,
    places: tuple[Path, Path],
    submitted: PrivacyLevel,
    decided: PrivacyLevel,
) -> None:
    ours, _ = places
    outcome = submit(backend.url, script, ours, submitted)
    with RunStore.open(backend.url, privacy=decided) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        pause = outcome.pause
        assert pause is not None
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        done = runtime.resume_sync(outcome.run_id, decision)
        assert done.status is RunStatus.COMPLETED
        stored = store.get_run(outcome.run_id)
    assert stored is not None and stored.privacy_level == submitted.value
    later = [s for s in stored.steps if s["sequence"] > len(outcome.steps)]
    assert [s["kind"] for s in later][:2] == ["decision", "tool"]
    kept = submitted is PrivacyLevel.FULL
    assert all(("content_withheld" not in s) is kept for s in later if s["kind"] != "decision")
    assert (NOTE.strip() in json.dumps(later)) is kept
    assert (stored.final_answer == "done") is kept
    assert (NOTE.strip().encode() in backend.raw_bytes()) is kept


def test_an_operator_who_is_not_an_admin_decides_only_their_own_runs(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, _ = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    pause = outcome.pause
    assert pause is not None
    with RunStore.open(backend.url) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        bob = OperatorDecision(action="approve", digest=pause.digest, actor="bob", admin=False)
        with pytest.raises(CharterRefused, match="acts for someone else"):
            runtime.resume_sync(outcome.run_id, bob)
        assert store.waiting(outcome.run_id) is not None  # nothing changed
        ann = OperatorDecision(action="deny", digest=pause.digest, actor="ann", admin=False)
        assert runtime.resume_sync(outcome.run_id, ann).status is RunStatus.COMPLETED
    assert not (ours.parent / "files" / "charter.txt").exists()


def test_a_workspace_file_that_now_points_elsewhere_is_refused(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, theirs = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    pause = outcome.pause
    assert pause is not None
    text = ours.read_text().replace('files_root = "files"', f'files_root = "{theirs.parent}/files"')
    ours.write_text(text)
    with RunStore.open(backend.url) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        with pytest.raises(CharterRefused, match="points somewhere else"):
            runtime.resume_sync(outcome.run_id, decision)
        assert store.waiting(outcome.run_id) is not None
    assert not (theirs.parent / "files" / "charter.txt").exists()
    assert run_columns(backend.url, outcome.run_id)["status"] == "awaiting_approval"


def test_a_lent_user_or_workspace_or_provider_that_is_not_the_runs_is_refused(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, theirs = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    pause = outcome.pause
    assert pause is not None
    decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
    other = ScriptedProvider.from_turns([{"content": "x"}], name="another")
    with RunStore.open(backend.url) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        attempts: list[dict[str, Any]] = [
            {"context": ToolContext(user=User("root", is_admin=True))},
            {"provider": other},
        ]
        for attempt in attempts:
            with pytest.raises(CharterRefused):
                runtime.resume_sync(outcome.run_id, decision, **attempt)
        # A lent workspace that is not the run's is not used: the run's own is loaded.
        lent = ToolContext(workspace=load_workspace(theirs))
        assert runtime.resume_sync(outcome.run_id, decision, context=lent).status.value == (
            "completed"
        )
    assert (ours.parent / "files" / "charter.txt").read_text() == NOTE
    assert not (theirs.parent / "files" / "charter.txt").exists()


def test_a_rerun_in_the_inspector_keeps_the_runs_user_workspace_and_level(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, theirs = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.FULL)
    body = {"prompt": "again", "provider": "scripted", "rerun_of": outcome.run_id,
            "max_rounds": 5}  # fmt: skip
    for client in inspector(backend.url, script, theirs, PrivacyLevel.METADATA):
        with client.stream("POST", "/api/runs", json=body) as answer:
            assert answer.status_code == 200, answer.read()
            events = [json.loads(line) for line in answer.iter_lines() if line]
    context = events[0]["context"]  # one line: the run waits for approval at once
    assert (context["privacy_level"], context["trust_zone"]) == ("full", "local")
    assert "list_users" not in context["tools"]  # offered to ann, who is no admin
    rerun = context["run_id"]
    with RunStore.open(backend.url) as store:
        store.seal_with(KEY)  # a charter is read back with the key it was sealed under
        charter = store.charter_of(rerun)
        stored = store.get_run(rerun)
    assert charter is not None and charter.user == ANN
    assert charter.workspace_file == str(ours.resolve())
    assert stored is not None and stored.privacy_level == "full"


def test_two_runtimes_in_one_process_keep_each_runs_level(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    """A store records every run at its own level at once: a resumed full run beside a new
    metadata run in the same process."""
    ours, _ = places
    waiting = submit(backend.url, script, ours, PrivacyLevel.FULL)
    pause = waiting.pause
    assert pause is not None

    async def both(runtime: Runtime) -> tuple[RunOutcome, RunOutcome]:
        fresh = RunRequest.of(
            "plain", provider=ScriptedProvider.from_turns([{"content": "plain-canary"}])
        )
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        resumed = runtime.resume(waiting.run_id, decision)
        return await asyncio.gather(resumed, runtime.run(fresh))

    with RunStore.open(backend.url, privacy=PrivacyLevel.METADATA) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        resumed, fresh = asyncio.run(both(runtime))
        first, second = store.get_run(resumed.run_id), store.get_run(fresh.run_id)
    assert first is not None and second is not None
    assert first.final_answer == "done" and first.privacy_level == "full"
    assert second.final_answer is None and second.privacy_level == "metadata"


def test_a_run_whose_workspace_file_is_gone_or_whose_provider_is_missing_here_waits_on(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, _ = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    pause = outcome.pause
    assert pause is not None
    decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")

    def no_provider(ref: object) -> Provider:
        raise ConfigError("the provider of this run cannot be built here: no key")

    with RunStore.open(backend.url) as store:
        registry = default_registry(discover=False)
        runtime = Runtime(registry, recorder=store, state_key=KEY, provider_factory=no_provider)
        with pytest.raises(ConfigError, match="cannot be built here"):
            runtime.resume_sync(outcome.run_id, decision)
        assert store.waiting(outcome.run_id) is not None
        ours.rename(ours.with_name("moved.toml"))
        with pytest.raises(CharterRefused, match="cannot be loaded here"):
            Runtime(registry, recorder=store, state_key=KEY).resume_sync(outcome.run_id, decision)
        assert store.waiting(outcome.run_id) is not None
    assert run_columns(backend.url, outcome.run_id)["status"] == "awaiting_approval"
    assert not (ours.parent / "files" / "charter.txt").exists()


def set_charter(url: str, run_id: str, text: str | None) -> None:
    """Write ``text`` into the run's charter column, as anyone with the database may."""
    engine = create_engine(resolve_url(url))
    try:
        with engine.begin() as connection:
            connection.execute(
                update(schema.runs).where(schema.runs.c.id == run_id).values(charter=text)
            )
    finally:
        engine.dispose()


def test_a_charter_written_into_the_row_is_never_what_a_rerun_acts_under(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, theirs = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    other = submit(backend.url, script, ours, PrivacyLevel.FULL, user=User("root", True))
    sealed = run_columns(backend.url, outcome.run_id)["charter"]
    assert not sealed.startswith("{") and "ann" not in sealed  # sealed, not in clear
    with RunStore.open(backend.url) as store, pytest.raises(StoreError, match="no state key"):
        store.charter_of(outcome.run_id)
    admin = json.loads(KEY.open(outcome.run_id, sealed, CHARTER))
    admin["user"] = ["root", True]
    attempts = [json.dumps(admin), run_columns(backend.url, other.run_id)["charter"]]
    body = {"prompt": "again", "provider": "scripted", "rerun_of": outcome.run_id}
    for attempt in attempts:  # in clear with an admin, or another run's sealed charter
        set_charter(backend.url, outcome.run_id, attempt)
        for client in inspector(backend.url, script, theirs, PrivacyLevel.METADATA):
            refused = client.post("/api/runs", json=body)
            assert refused.status_code == 422, refused.text
            assert "charter of run" in refused.json()["error"]["message"]
    with RunStore.open(backend.url) as store:
        assert len(store.list_runs()) == 2  # no run was started


def test_a_run_stored_before_charters_is_not_rerun_as_the_servers_user(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, theirs = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.FULL)
    set_charter(backend.url, outcome.run_id, None)  # as a row written before charters
    body = {"prompt": "again", "provider": "scripted", "rerun_of": outcome.run_id}
    for client in inspector(backend.url, script, theirs, PrivacyLevel.METADATA):
        form = client.get(f"/api/runs/{outcome.run_id}/rerun").json()
        refused = client.post("/api/runs", json=body)
    assert (form["available"], form["reason"]) == (False, NO_CHARTER)
    assert refused.status_code == 422
    assert refused.json()["error"]["message"] == (
        f"rerun_of: the run cannot be re-run: {NO_CHARTER}"
    )


@pytest.mark.parametrize(
    "policy", ['["local"]', '["local", "private_hosted", "external_eu", "external_global"]']
)
def test_a_workspace_whose_personal_data_policy_changed_is_refused(
    backend: Backend, script: Path, places: tuple[Path, Path], policy: str
) -> None:
    ours, _ = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    pause = outcome.pause
    assert pause is not None
    ours.write_text(f"personal_data_shown_to = {policy}\n" + ours.read_text())
    with RunStore.open(backend.url) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        with pytest.raises(CharterRefused, match="shows personal data to other trust zones"):
            runtime.resume_sync(outcome.run_id, decision)
        # Lent by a process that holds it, with the same places, it is still not the run's.
        lent = ToolContext(workspace=load_workspace(ours))
        with pytest.raises(CharterRefused, match="shows personal data to other trust zones"):
            runtime.resume_sync(outcome.run_id, decision, context=lent)
        assert store.waiting(outcome.run_id) is not None
    assert not (ours.parent / "files" / "charter.txt").exists()
    assert run_columns(backend.url, outcome.run_id)["status"] == "awaiting_approval"


def test_the_default_policy_written_out_is_the_same_workspace(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, _ = places
    outcome = submit(backend.url, script, ours, PrivacyLevel.METADATA)
    pause = outcome.pause
    assert pause is not None
    ours.write_text('personal_data_shown_to = ["private_hosted", "local"]\n' + ours.read_text())
    with RunStore.open(backend.url) as store:
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        assert runtime.resume_sync(outcome.run_id, decision).status is RunStatus.COMPLETED
    assert (ours.parent / "files" / "charter.txt").read_text() == NOTE


def as_version_1(url: str, run_id: str, workspace: Path) -> None:
    """Rewrite the run's sealed state and row as a process before the personal-data policy
    was part of a workspace's identity sealed them: a version 1 charter, its digest of
    places only."""
    loaded = load_workspace(workspace)
    columns = run_columns(url, run_id)
    sealed = columns["suspended_state"]
    binding = bound(sealed)
    state = json.loads(KEY.open(run_id, sealed, binding=binding))
    for charter in (
        state["charter"],
        row := json.loads(KEY.open(run_id, columns["charter"], CHARTER)),
    ):
        assert charter["version"] == CHARTER_VERSION == 2
        charter["version"] = 1
        charter["workspace"][1] = identity(loaded, LOCATION_ONLY)
    engine = create_engine(resolve_url(url))
    try:
        with engine.begin() as connection:
            connection.execute(
                update(schema.runs)
                .where(schema.runs.c.id == run_id)
                .values(
                    suspended_state=KEY.seal(run_id, json.dumps(state), binding=binding),
                    charter=KEY.seal(run_id, json.dumps(row), CHARTER),
                )
            )
    finally:
        engine.dispose()


def test_a_run_sealed_with_a_version_1_charter_still_resumes_where_it_pointed(
    backend: Backend, script: Path, places: tuple[Path, Path]
) -> None:
    ours, theirs = places
    moved, kept = (submit(backend.url, script, ours, PrivacyLevel.METADATA) for _ in range(2))
    for outcome in (moved, kept):
        as_version_1(backend.url, outcome.run_id, ours)
    with RunStore.open(backend.url) as store:
        store.seal_with(KEY)
        runtime = Runtime(default_registry(discover=False), recorder=store, state_key=KEY)
        charter = store.charter_of(kept.run_id)
        assert charter is not None and charter.to_dict()["version"] == 1  # kept as it was
        pause = kept.pause
        assert pause is not None
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        assert runtime.resume_sync(kept.run_id, decision).status is RunStatus.COMPLETED
        assert (ours.parent / "files" / "charter.txt").read_text() == NOTE
        # Its digest of places still guards it: pointed elsewhere, it is refused.
        text = ours.read_text().replace(
            'files_root = "files"', f'files_root = "{theirs.parent}/files"'
        )
        ours.write_text(text)
        pause = moved.pause
        assert pause is not None
        decision = OperatorDecision(action="approve", digest=pause.digest, actor="ops")
        with pytest.raises(CharterRefused, match="points somewhere else"):
            runtime.resume_sync(moved.run_id, decision)
        assert store.waiting(moved.run_id) is not None
    assert not (theirs.parent / "files" / "charter.txt").exists()


def test_a_charter_of_an_unknown_version_is_not_read() -> None:
    for version in (0, 3):
        data = {"version": version, "user": None, "workspace": None, "privacy": "metadata",
                "trust_zone": "local", "provider": {"name": "scripted"}, "options": {}}  # fmt: skip
        with pytest.raises(ValueError, match="charter of another version"):
            Charter.from_dict(data)
