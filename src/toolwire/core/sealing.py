"""Sealing a run's state at rest: AES-256-GCM, bound to its run, its purpose and its version.

The key comes from ``TOOLWIRE_STATE_KEY`` (32 bytes, base64url or hex) or from a key file;
``toolwire demo`` and ``toolwire serve`` create the file (mode 0600) in their data directory
when there is none. A sealed value is ``tw2:<version>:<sequence>:`` + base64url(nonce ‖
ciphertext ‖ tag), with a fresh 96-bit nonce per seal. Its associated data binds the run id,
the value's purpose (a suspended state, a queued run's request or its checkpoint) and its
:class:`Binding`: the run's ``seal_version`` the store writes it with, and the run's last
stored step when it was sealed. The two numbers stand in clear before the ciphertext (the store
reads them to guard its write, a loader to compare them with the run); changing either fails
authentication. Which bound value is a run's latest is :mod:`toolwire.core.latest`'s rule.

Values sealed before versions (``tw1:`` + base64url(nonce ‖ ciphertext ‖ tag), associated data
the run id and the purpose only) still open with ``binding=None``. A loader accepts one only
while the run's ``seal_version`` is NULL, i.e. as version 0: a run that waited across the
upgrade resumes once (its turn not yet decided); its next write, claim, settle or cancel sets
the version, after which no ``tw1:`` value of it opens again. A queued run's checkpoint sealed
before versions says nothing of the steps after it, so it fails closed instead (see
:mod:`toolwire.core.latest`).

Invariants:
- No key, no state: sealing without a key raises ``StateKeyMissing``; nothing is ever stored
  in clear as a fallback, and nothing unmarked is read as a plaintext.
- A value that fails authentication (tampered, sealed for another run, for another version or
  step, or under another key) raises ``StateUnreadable``; it is never treated as a forged
  plaintext.
- Error messages never carry the key, the ciphertext or the plaintext.
- A value is bound to its purpose too: a held call's sealed answer (see :mod:`toolwire.runs.held`)
  never opens as a suspended state, nor the other way round.
"""

from __future__ import annotations

import base64
import binascii
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from toolwire.core.binding import (
    LEGACY_MARKER,
    MARKER,
    NOT_SEALED,
    UNREADABLE,
    Binding,
    Sealer,
    bound,
    prefix,
)
from toolwire.core.errors import ConfigError, StateKeyMissing, StateUnreadable

__all__ = [
    "CHECKPOINT", "KEY_BYTES", "KEY_FILE_NAME", "KEY_VARIABLE", "QUESTION", "QUEUED_REQUEST",
    "SUSPENDED_STATE", "Binding", "Sealer", "StateKey", "bound", "ensure_key", "load_key",
    "require",
]  # fmt: skip

KEY_VARIABLE = "TOOLWIRE_STATE_KEY"
KEY_FILE_NAME = "state.key"
KEY_BYTES = 32  # AES-256
_NONCE_BYTES = 12  # GCM's native nonce size; random per seal, so no counter to keep
# What a sealed value is for: bound as associated data with the run id, so a value moved to
# another column (a queued request into the checkpoint) fails authentication.
SUSPENDED_STATE = "suspended-state"  # the purpose of a waiting run's sealed state
QUEUED_REQUEST = "queued-request"
CHECKPOINT = "checkpoint"
CHARTER = "charter"  # a run's charter, kept in its row (see toolwire.store.runs.RunStore)
QUESTION = "question"  # a live question's words and answer (see toolwire.store.questions)
_MAX_KEY_FILE_BYTES = 1024


class StateKey:
    """A 256-bit key that seals and opens suspended states. Its repr hides the key."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        if len(key) != KEY_BYTES:
            raise ConfigError(f"a state key must be {KEY_BYTES} bytes, not {len(key)}")
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "<StateKey>"

    @classmethod
    def generate(cls) -> StateKey:
        return cls(secrets.token_bytes(KEY_BYTES))

    @classmethod
    def parse(cls, text: str, where: str) -> StateKey:
        """A key written as 64 hex digits or 43-44 base64url characters."""
        return cls(_decode_key(text.strip(), where))

    def seal(
        self,
        run_id: str,
        plaintext: str,
        purpose: str = SUSPENDED_STATE,
        *,
        binding: Binding | None = None,
    ) -> str:
        """``plaintext`` sealed for ``run_id``, ``purpose`` (the column it is stored in) and
        ``binding``; without one, in the format of values sealed before versions."""
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = self._aead.encrypt(nonce, plaintext.encode(), _aad(run_id, purpose, binding))
        return prefix(binding) + base64.urlsafe_b64encode(nonce + sealed).decode("ascii")

    def open(
        self,
        run_id: str,
        sealed: str,
        purpose: str = SUSPENDED_STATE,
        *,
        binding: Binding | None = None,
    ) -> str:
        """The plaintext of a value sealed for ``run_id``, ``purpose`` and exactly ``binding``
        (None: a value sealed before versions); ``StateUnreadable`` for anything else."""
        head = prefix(binding)
        if not sealed.startswith(head):
            if not sealed.startswith((LEGACY_MARKER, MARKER)):
                raise StateUnreadable(NOT_SEALED)
            raise StateUnreadable(UNREADABLE)
        try:
            raw = base64.urlsafe_b64decode(sealed[len(head) :].encode("ascii"))
            nonce, body = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
            return self._aead.decrypt(nonce, body, _aad(run_id, purpose, binding)).decode()
        except (InvalidTag, ValueError, UnicodeError, binascii.Error):
            raise StateUnreadable(UNREADABLE) from None


def _aad(run_id: str, purpose: str, binding: Binding | None) -> bytes:
    """The associated data: purpose, binding and run id. A purpose has no ``@``, the numbers
    are plain digits each ended by a letter or ``:``, and the run id comes last, so no two
    values share an encoding."""
    if binding is None:
        return f"toolwire:{purpose}:{run_id}".encode()
    return f"toolwire:{purpose}@v{binding.version}s{binding.sequence}:{run_id}".encode()


def _decode_key(text: str, where: str) -> bytes:
    try:
        if len(text) == KEY_BYTES * 2:
            return bytes.fromhex(text)
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise ConfigError(f"{where}: not a {KEY_BYTES}-byte key in hex or base64url") from None


def load_key(
    key_file: Path | None = None, *, environ: Mapping[str, str] | None = None
) -> StateKey | None:
    """The key from ``TOOLWIRE_STATE_KEY``, else from ``key_file`` if it exists, else None."""
    env = os.environ if environ is None else environ
    text = env.get(KEY_VARIABLE, "").strip()
    if text:
        return StateKey.parse(text, KEY_VARIABLE)
    if key_file is not None and key_file.is_file():
        return _read_key_file(key_file)
    return None


def ensure_key(key_file: Path, *, environ: Mapping[str, str] | None = None) -> StateKey:
    """The configured key, or a new one written to ``key_file`` (mode 0600) when none exists."""
    found = load_key(key_file, environ=environ)
    if found is not None:
        return found
    key = secrets.token_bytes(KEY_BYTES)
    text = base64.urlsafe_b64encode(key).decode("ascii").rstrip("=")
    try:
        key_file.parent.mkdir(parents=True, exist_ok=True)
        _publish(key_file, text + "\n")
    except FileExistsError:
        return _read_key_file(key_file)  # another process wrote it first: use theirs
    except OSError as exc:
        raise ConfigError(f"cannot create the state key file {key_file}: {exc.strerror}") from None
    return StateKey(key)


def _publish(path: Path, text: str) -> None:
    """Write ``text`` whole under a private temporary name, then link it in as ``path``.

    A process starting beside this one never reads a half-written (empty) key file, and of two
    writers exactly one wins: ``os.link`` raises ``FileExistsError`` for the other.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.link(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def require(key: StateKey | None) -> StateKey:
    """``key``, or the error that says a run cannot suspend without one."""
    if key is None:
        raise StateKeyMissing(
            f"no state key: set {KEY_VARIABLE} (32 bytes, hex or base64url) or start "
            "toolwire serve or demo, which create one; without it a run cannot be suspended"
        )
    return key


def _read_key_file(path: Path) -> StateKey:
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read the state key file {path}: {exc.strerror}") from None
    if len(raw) > _MAX_KEY_FILE_BYTES:
        raise ConfigError(f"the state key file {path} is too large to be a key")
    return StateKey.parse(raw.decode("ascii", "replace"), str(path))
