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
from sqlalchemy import create_engine, select, update

import toolwire
from toolwire import ScriptedProvider, ToolRegistry, tool
from toolwire.errors import ConfigError, StateKeyMissing, StateUnreadable
from toolwire.lifecycle import RunStatus
from toolwire.runtime import OperatorDecision, RunOutcome, RunRequest, Runtime
from toolwire.sealing import KEY_VARIABLE, StateKey, ensure_key, load_key, require
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
        with self.engine.begin() as connection:
            statement = update(schema.runs).where(schema.runs.c.id == run_id)
            connection.execute(statement.values({column: value}))


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
from toolwire.sealing import ensure_key
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
