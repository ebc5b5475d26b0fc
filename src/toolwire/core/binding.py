"""A sealed value's binding: the version and the step it stands at, written before its
ciphertext.

A value sealed with a :class:`Binding` is ``tw2:<version>:<sequence>:`` + base64url(nonce ‖
ciphertext ‖ tag); the numbers are in clear so that the store (which holds no key) can guard
its write with them and a loader can compare them with the run, and they are bound into the
associated data (see :mod:`toolwire.core.sealing`), so changing one fails authentication. A value
sealed before versions is ``tw1:`` + base64url(…), with no binding. Free of the cipher, so that
the store can import it without loading ``cryptography``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from toolwire.core.errors import StateUnreadable

LEGACY_MARKER = "tw1:"  # sealed before versions: no binding in the associated data
MARKER = "tw2:"
NUMBER_DIGITS = 18  # a version or a step sequence: far below 2**63, and never a long parse
_MAX_NUMBER = 10**NUMBER_DIGITS
NOT_SEALED = "the suspended state is not sealed by toolwire"
UNREADABLE = (
    "the suspended state cannot be opened: it was changed, belongs to another run, or was "
    "sealed under another key"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Binding:
    """Where a sealed value stands in its run: the ``seal_version`` the store writes it with
    and the sequence of the run's last stored step when it was sealed (0: none yet)."""

    version: int
    sequence: int

    def __post_init__(self) -> None:
        if not (0 <= self.version < _MAX_NUMBER and 0 <= self.sequence < _MAX_NUMBER):
            raise ValueError("a seal binding's version and sequence are small non-negative numbers")


Sealer = Callable[[Binding], str]  # seals one value for the binding the store gives it


def bound(sealed: str) -> Binding | None:
    """The binding a sealed value claims (not yet authenticated: opening it checks that); None
    for a value sealed before versions. ``StateUnreadable`` when it is neither."""
    if sealed.startswith(LEGACY_MARKER):
        return None
    if not sealed.startswith(MARKER):
        raise StateUnreadable(NOT_SEALED)
    start = len(MARKER)  # find the fields without copying the (long) ciphertext
    middle = sealed.find(":", start, start + NUMBER_DIGITS + 1)
    end = sealed.find(":", middle + 1, middle + NUMBER_DIGITS + 2) if middle > 0 else -1
    version, sequence = sealed[start:middle], sealed[middle + 1 : end]
    if end < 0 or not (_number(version) and _number(sequence)):
        raise StateUnreadable(UNREADABLE)
    return Binding(version=int(version), sequence=int(sequence))


def prefix(binding: Binding | None) -> str:
    """What a value sealed with ``binding`` begins with."""
    if binding is None:
        return LEGACY_MARKER
    return f"{MARKER}{binding.version}:{binding.sequence}:"


def _number(text: str) -> bool:
    return 0 < len(text) <= NUMBER_DIGITS and text.isascii() and text.isdigit()
