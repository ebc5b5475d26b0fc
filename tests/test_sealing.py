"""Sealed suspended state: keys, and every way a sealed value can be wrong, against a real
SQLite store. A refused state executes nothing and leaves the run waiting."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import create_engine, select, update

import toolwire
from toolwire import ScriptedProvider, ToolRegistry, tool
from toolwire.core.errors import ConfigError, StateKeyMissing, StateNotLatest, StateUnreadable
from toolwire.core.latest import (
    ALREADY_DECIDED,
    DECIDED_AFTER,
    EARLIER_RELEASE,
    LATER_ROUND,
    OLDER_VERSION,
    WRITE_AFTER,
    StepMark,
    open_latest,
    require_last,
    require_progress,
)
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import (
    CHECKPOINT,
    KEY_VARIABLE,
    SUSPENDED_STATE,
    Binding,
    StateKey,
    bound,
    ensure_key,
    load_key,
    require,
)
from toolwire.runs.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
from toolwire.store import RunStore, schema
from toolwire.store.engine import resolve_url

EXECUTED: list[int] = []
RAW_KEY = bytes(range(32))


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    EXECUTED.clear()
    yield
    EXECUTED.clear()


@tool(data_class="public", requires_approval=True)
def write_row(n: int) -> str:
    EXECUTED.append(n)
    return f"wrote {n}"


TURNS: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "write_row", "arguments": {"n": 1}}]},
    {"content": "done"},
]


class Rows:
    """The runs table, read and written past the store, as an attacker with the file would."""

    def __init__(self, path: Path) -> None:
        self.engine = create_engine(resolve_url(str(path)))

    def get(self, run_id: str, column: str) -> str | None:
        with self.engine.connect() as connection:
            query = select(schema.runs.c[column]).where(schema.runs.c.id == run_id)
            value: str | None = connection.execute(query).scalar_one()
            return value

    def set(self, run_id: str, column: str, value: str) -> None:
        self.write(run_id, {column: value})

    def write(self, run_id: str, values: dict[str, Any]) -> None:
        with self.engine.begin() as connection:
            statement = update(schema.runs).where(schema.runs.c.id == run_id)
            connection.execute(statement.values(values))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore.open(str(tmp_path / "runs.db")) as opened:
        yield opened


@pytest.fixture
def rows(tmp_path: Path, store: RunStore) -> Iterator[Rows]:
    found = Rows(tmp_path / "runs.db")
    yield found
    found.engine.dispose()


def suspend(store: RunStore, key: StateKey | None) -> RunOutcome:
    runtime = Runtime(ToolRegistry([write_row]), recorder=store, state_key=key)
    return runtime.run_sync(RunRequest.of("go", provider=ScriptedProvider.from_turns(TURNS)))


def approve(store: RunStore, key: StateKey | None, run_id: str, digest: str) -> RunOutcome:
    runtime = Runtime(ToolRegistry([write_row]), recorder=store, state_key=key)
    decision = OperatorDecision(action="approve", digest=digest, actor="ops")
    return runtime.resume_sync(run_id, decision, provider=ScriptedProvider.from_turns(TURNS))


def still_waiting(store: RunStore, run_id: str) -> None:
    assert EXECUTED == []
    run = store.get_run(run_id)
    assert run is not None and run.status == "awaiting_approval"
    waiting = store.waiting(run_id)
    assert waiting is not None and waiting.sealed.startswith("tw2:")


def waiting_run(store: RunStore, key: StateKey) -> tuple[str, str]:
    outcome = suspend(store, key)
    assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
    return outcome.run_id, outcome.pause.digest


UNREADABLE = (
    "the suspended state cannot be opened: it was changed, belongs to another run, "
    "or was sealed under another key"
)


def test_a_tampered_ciphertext_is_refused(store: RunStore, rows: Rows) -> None:
    key = StateKey.generate()
    run_id, digest = waiting_run(store, key)
    sealed = rows.get(run_id, "suspended_state")
    assert sealed is not None
    head, body = sealed.rsplit(":", 1)
    raw = bytearray(base64.urlsafe_b64decode(body))
    raw[20] ^= 0x01
    rows.set(run_id, "suspended_state", f"{head}:{base64.urlsafe_b64encode(bytes(raw)).decode()}")
    with pytest.raises(StateUnreadable) as caught:
        approve(store, key, run_id, digest)
    assert str(caught.value) == UNREADABLE
    still_waiting(store, run_id)


@pytest.mark.parametrize(
    "sealed",
    ["tw1:", "tw1:!!!", "tw1:" + "A" * 8, '{"version": 1}', "tw2:", "tw2:1:", "tw2:1:1:",
     "tw2:x:1:AAAA", "tw2:01:1:AAAA", "tw2:1:1:" + "A" * 8, "tw2:1:1:!!!"],
)  # fmt: skip
def test_a_truncated_or_unmarked_value_is_refused(store: RunStore, rows: Rows, sealed: str) -> None:
    key = StateKey.generate()
    run_id, digest = waiting_run(store, key)
    rows.set(run_id, "suspended_state", sealed)
    with pytest.raises(StateUnreadable):
        approve(store, key, run_id, digest)
    run = store.get_run(run_id)
    assert EXECUTED == [] and run is not None and run.status == "awaiting_approval"


def test_a_state_under_another_key_is_refused(store: RunStore) -> None:
    run_id, digest = waiting_run(store, StateKey.generate())
    with pytest.raises(StateUnreadable) as caught:
        approve(store, StateKey.generate(), run_id, digest)
    assert str(caught.value) == UNREADABLE
    still_waiting(store, run_id)


def test_without_a_key_a_waiting_run_cannot_be_resumed(store: RunStore) -> None:
    run_id, digest = waiting_run(store, StateKey.generate())
    with pytest.raises(StateKeyMissing, match=f"no state key: set {KEY_VARIABLE}"):
        approve(store, None, run_id, digest)
    still_waiting(store, run_id)


def test_the_state_of_another_run_is_refused(store: RunStore, rows: Rows) -> None:
    key = StateKey.generate()
    victim, victim_digest = waiting_run(store, key)
    donor, donor_digest = waiting_run(store, key)
    rows.set(victim, "suspended_state", rows.get(donor, "suspended_state") or "")
    rows.set(victim, "pending_digest", donor_digest)  # a consistent-looking row
    for digest in (victim_digest, donor_digest):
        with pytest.raises(StateUnreadable) as caught:
            approve(store, key, victim, digest)
        assert str(caught.value) == UNREADABLE
    still_waiting(store, victim)
    assert approve(store, key, donor, donor_digest).status is RunStatus.COMPLETED
    assert EXECUTED == [1]


def test_a_run_without_a_key_fails_and_stores_no_cleartext(store: RunStore, rows: Rows) -> None:
    outcome = suspend(store, None)
    assert outcome.status is RunStatus.FAILED and EXECUTED == []
    assert outcome.error == (
        f"the run could not be suspended: no state key: set {KEY_VARIABLE} (32 bytes, hex or "
        "base64url) or start toolwire serve or demo, which create one; without it a run "
        "cannot be suspended"
    )
    run = store.get_run(outcome.run_id)
    assert run is not None and run.status == "failed" and run.error == outcome.error
    assert rows.get(outcome.run_id, "suspended_state") is None
    assert rows.get(outcome.run_id, "pending_digest") is None


# -- keys ------------------------------------------------------------------------------------


def test_a_sealed_value_opens_only_for_its_run() -> None:
    key = StateKey(RAW_KEY)
    sealed = key.seal("run-a", "plain text")
    assert sealed.startswith("tw1:") and "plain" not in sealed
    assert sealed != key.seal("run-a", "plain text")  # a fresh nonce per seal
    assert key.open("run-a", sealed) == "plain text"
    with pytest.raises(StateUnreadable):
        key.open("run-b", sealed)


def test_ensure_key_creates_a_private_file_once(tmp_path: Path) -> None:
    path = tmp_path / "data" / "state.key"
    first = ensure_key(path, environ={})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text()
    again = ensure_key(path, environ={})
    assert path.read_text() == text
    assert again.open("r", first.seal("r", "x")) == "x"
    loaded = load_key(path, environ={})
    assert loaded is not None and loaded.open("r", first.seal("r", "x")) == "x"


RACE = """
import sys, time
from pathlib import Path
from toolwire.core.sealing import ensure_key
start = float(sys.argv[2])
while time.time() < start:
    pass
print(ensure_key(Path(sys.argv[1]), environ={}).seal("race", "same key"))
"""


def test_processes_creating_the_key_at_once_all_get_the_one_key(tmp_path: Path) -> None:
    path = tmp_path / "data" / "state.key"
    src = str(Path(toolwire.__file__).resolve().parents[1])
    env = {k: v for k, v in os.environ.items() if k != KEY_VARIABLE} | {"PYTHONPATH": src}
    start = str(time.time() + 1.5)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE, str(path), start],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    outputs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in outputs]
    key = load_key(path, environ={})
    assert key is not None
    assert {key.open("race", out.strip()) for out, _ in outputs} == {"same key"}
    assert sorted(f.name for f in path.parent.iterdir()) == ["state.key"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_environment_wins_over_the_file(tmp_path: Path) -> None:
    path = tmp_path / "state.key"
    ensure_key(path, environ={})
    from_env = load_key(path, environ={KEY_VARIABLE: RAW_KEY.hex()})
    assert from_env is not None
    assert StateKey(RAW_KEY).open("r", from_env.seal("r", "x")) == "x"
    assert ensure_key(path, environ={KEY_VARIABLE: RAW_KEY.hex()}).open(
        "r", StateKey(RAW_KEY).seal("r", "x")
    ) == "x"  # fmt: skip


def test_no_variable_and_no_file_is_no_key(tmp_path: Path) -> None:
    assert load_key(tmp_path / "absent.key", environ={}) is None
    assert load_key(None, environ={KEY_VARIABLE: "  "}) is None
    with pytest.raises(StateKeyMissing):
        require(None)


@pytest.mark.parametrize(
    "text",
    [
        RAW_KEY.hex(),
        RAW_KEY.hex().upper(),
        base64.urlsafe_b64encode(RAW_KEY).decode(),
        base64.urlsafe_b64encode(RAW_KEY).decode().rstrip("="),
        f"  {RAW_KEY.hex()}\n",
    ],
)
def test_hex_and_base64url_keys_parse(text: str) -> None:
    key = StateKey.parse(text, "test")
    assert StateKey(RAW_KEY).open("r", key.seal("r", "x")) == "x"
    assert repr(key) == "<StateKey>"


SECRETISH = "z" * 63 + "q"  # 64 characters that are not hex


@pytest.mark.parametrize(
    "text", ["abc", SECRETISH, RAW_KEY.hex()[:62], base64.b64encode(os.urandom(48)).decode()]
)
def test_a_bad_key_is_a_config_error_that_does_not_echo_it(text: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_key(None, environ={KEY_VARIABLE: text})
    message = str(caught.value)
    assert text not in message and SECRETISH not in message
    assert message.startswith(
        (f"{KEY_VARIABLE}: not a 32-byte key", "a state key must be 32 bytes")
    )


def test_a_bad_key_file_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "state.key"
    path.write_text("not a key at all\n")
    with pytest.raises(ConfigError):
        load_key(path, environ={})
    path.write_bytes(b"a" * 5000)
    with pytest.raises(ConfigError, match="too large to be a key"):
        load_key(path, environ={})


# -- versions: a value is bound to its version and step (see toolwire.core.latest) ----------------


BOUND = Binding(version=2, sequence=5)


def test_the_binding_is_in_clear_before_the_ciphertext_and_in_the_associated_data() -> None:
    key = StateKey(RAW_KEY)
    sealed = key.seal("run-a", "plain text", CHECKPOINT, binding=BOUND)
    assert sealed.startswith("tw2:2:5:") and bound(sealed) == BOUND
    raw = base64.urlsafe_b64decode(sealed[len("tw2:2:5:") :])
    aad = b"toolwire:checkpoint@v2s5:run-a"
    assert AESGCM(RAW_KEY).decrypt(raw[:12], raw[12:], aad) == b"plain text"
    assert key.open("run-a", sealed, CHECKPOINT, binding=BOUND) == "plain text"
    others = [Binding(version=1, sequence=5), Binding(version=2, sequence=4),
              Binding(version=25, sequence=0), None]  # fmt: skip
    for other in others:
        with pytest.raises(StateUnreadable) as caught:
            key.open("run-a", sealed, CHECKPOINT, binding=other)
        assert str(caught.value) == UNREADABLE
    for forged in ("tw2:1:5:", "tw2:2:6:", "tw2:20:5:"):  # the clear numbers changed
        moved = forged + sealed[len("tw2:2:5:") :]
        with pytest.raises(StateUnreadable):
            key.open("run-a", moved, CHECKPOINT, binding=bound(moved))


def test_a_value_sealed_before_versions_still_opens_without_a_binding() -> None:
    nonce = bytes(12)  # as the previous release sealed: run id and purpose only
    old = AESGCM(RAW_KEY).encrypt(nonce, b"old state", b"toolwire:suspended-state:run-a")
    sealed = "tw1:" + base64.urlsafe_b64encode(nonce + old).decode()
    key = StateKey(RAW_KEY)
    assert bound(sealed) is None and key.open("run-a", sealed) == "old state"
    with pytest.raises(StateUnreadable):
        key.open("run-a", sealed, binding=Binding(version=0, sequence=0))
    assert open_latest(key, "run-a", sealed, SUSPENDED_STATE, version=None) == ("old state", None)
    with pytest.raises(StateNotLatest) as caught:  # the run has sealed values since
        open_latest(key, "run-a", sealed, SUSPENDED_STATE, version=1)
    assert str(caught.value) == EARLIER_RELEASE


def test_only_the_version_the_row_holds_opens() -> None:
    key = StateKey(RAW_KEY)
    sealed = key.seal("run-a", "state", binding=BOUND)
    assert open_latest(key, "run-a", sealed, SUSPENDED_STATE, version=2) == ("state", BOUND)
    for version in (1, 3, None):  # an older value, or a row whose version was cleared
        with pytest.raises(StateNotLatest) as caught:
            open_latest(key, "run-a", sealed, SUSPENDED_STATE, version=version)
        assert str(caught.value) == OLDER_VERSION
    forged = "tw1:" + "A" * 40  # a forgery is unreadable, never merely "not the latest"
    with pytest.raises(StateUnreadable) as unreadable:
        open_latest(key, "run-a", forged, SUSPENDED_STATE, version=2)
    assert type(unreadable.value) is StateUnreadable


def test_a_waiting_state_opens_only_while_its_step_is_the_last() -> None:
    require_last(BOUND, 5)
    for last in (4, 6):
        with pytest.raises(StateNotLatest, match="recorded steps after it"):
            require_last(BOUND, last)


def mark(sequence: int, kind: str, round_: int, tool: str | None = None, **more: Any) -> StepMark:
    return StepMark(sequence=sequence, kind=kind, round=round_, tool_name=tool, **more)


def is_write(name: str) -> bool:
    return name == "send"


@pytest.mark.parametrize(
    ("after", "started", "error"),
    [
        ([], [], None),
        ([mark(6, "tool", 2, "look"), mark(7, "tool", 2, "look")], [], None),  # a cut turn
        ([mark(6, "tool", 2, "send")], ["send"], None),  # the write it marked started
        ([mark(6, "tool", 2, "send", refused=True)], [], None),  # denied: it never ran
        ([mark(6, "tool", 2, "send")], [], WRITE_AFTER),  # fenced by a later value
        ([mark(6, "tool", 2, "send"), mark(7, "tool", 2, "send")], ["send"], WRITE_AFTER),
        ([mark(6, "decision", 2)], [], DECIDED_AFTER),
        ([mark(6, "tool", 2, "look"), mark(7, "request", 3)], [], LATER_ROUND),
        ([mark(6, "llm", 1)], [], LATER_ROUND),
    ],
)
def test_what_a_worker_recorded_after_a_checkpoint_tells_whether_it_is_the_latest(
    after: list[StepMark], started: list[str], error: str | None
) -> None:
    if error is None:
        require_progress(after, round_=2, started=started, is_write=is_write)
        return
    with pytest.raises(StateNotLatest) as caught:
        require_progress(after, round_=2, started=started, is_write=is_write)
    assert str(caught.value) == error


def test_a_state_sealed_before_versions_resumes_once(store: RunStore, rows: Rows) -> None:
    key = StateKey.generate()
    run_id, digest = waiting_run(store, key)
    sealed = rows.get(run_id, "suspended_state")
    assert sealed is not None
    plain = key.open(run_id, sealed, binding=bound(sealed))
    old = key.seal(run_id, plain)  # as the previous release stored it: no version, NULL column
    restore = {"suspended_state": old, "seal_version": None}
    rows.write(run_id, restore)
    assert approve(store, key, run_id, digest).status is RunStatus.COMPLETED
    assert EXECUTED == [1]
    assert rows.get(run_id, "seal_version") is not None  # set by the claim and the settle
    rows.write(run_id, restore | {"status": "awaiting_approval", "pending_digest": digest,
                                  "settled": False})  # fmt: skip
    with pytest.raises(StateNotLatest) as caught:  # put back once more: its turn was decided
        approve(store, key, run_id, digest)
    assert str(caught.value) == ALREADY_DECIDED
    assert EXECUTED == [1]
