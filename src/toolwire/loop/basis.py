"""What a preview was computed on: digested when the preview is made, re-checked before the
approved call runs, so that what a person approves is what runs.

- A tool tells what its preview of a call is computed on with ``preview_basis(arguments,
  context) -> str`` (read through :func:`toolwire.tools.api.basis_of`): a file's identity and
  content hash, a row's current values. A tool without one has nothing re-checked.
- Only a digest of that text is kept (``BASIS_CHARS`` hex characters of SHA-256), in the
  preview, the sealed state and the turn's digest: never the data a second time.
- A basis that raises digests as the class of what it raised: at execution it raises the same
  way again (the tool will refuse the call itself), or the inputs changed.
- The basis is taken *before* the preview's lines: a change between the two comes after the
  basis, so it is caught at execution (the preview may show the newer state; the call then
  waits again on a fresh one). Nothing is missed; a change is at worst reported once too often.
- :func:`recheck` recomputes the basis of every call a decision lets run, before any call of
  the turn runs; a call whose result is already recorded (a queued run whose worker stopped
  after it) is not re-checked: it never runs again. What remains open is the moment between the
  check and the call itself, as between any read and write that hold no lock.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolwire.core.reprs import count, tagged
from toolwire.loop.state import Pause
from toolwire.policy.quarantine import EMPTY_VAULT, Vault
from toolwire.tools.api import StalePreview, Tool, ToolContext, basis_of, stale_preview_of
from toolwire.tools.registry import ToolRegistry

log = logging.getLogger("toolwire.basis")

BASIS_CHARS = 32  # 128 bits of SHA-256: a changed input never digests the same by chance


async def digest_basis(
    tool: Tool, arguments: Mapping[str, Any] | None, context: ToolContext
) -> str | None:
    """The digest of what ``tool``'s preview of a call with ``arguments`` is computed on, or
    None when the tool does not say (or the arguments are not an object)."""
    basis = basis_of(tool)
    if basis is None or arguments is None:
        return None
    try:
        text = await asyncio.to_thread(basis, arguments, context)
        if not isinstance(text, str):
            raise TypeError(f"a preview basis must be text, not {type(text).__name__}")
    except Exception as exc:
        log.info("the preview basis of %r raised %s", tool.spec.name, type(exc).__name__)
        text = f"raised {type(exc).__module__}.{type(exc).__qualname__}"
    return digest(text)


def digest(text: str) -> str:
    """A basis text's digest (``surrogatepass``: JSON can carry a lone surrogate)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:BASIS_CHARS]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stale:
    """The calls of a pending turn whose preview no longer holds, by what their tool declares:
    ``wait`` waits again on a fresh preview, ``fail`` does not run (indices into the turn)."""

    wait: tuple[int, ...] = ()
    fail: tuple[int, ...] = ()

    def __repr__(self) -> str:
        return tagged("Stale", wait=count(self.wait), fail=count(self.fail))


async def recheck(
    pause: Pause,
    running: Sequence[int],
    registry: ToolRegistry,
    context: ToolContext,
    vault: Vault = EMPTY_VAULT,
) -> Stale:
    """Which of the pending calls about to run (their indices; see the module) have a preview
    whose basis changed since it was shown. Each is taken with the arguments its preview was
    computed on: the model's, with the values its handles name (``vault``)."""
    bases = {p.index: p.basis for p in pause.previews if p.basis is not None}
    done = {r.call_id for r in pause.recorded}
    wait: list[int] = []
    fail: list[int] = []
    for index in running:
        call = pause.calls[index]
        shown, tool = bases.get(index), registry.get(call.name)
        if shown is None or tool is None or call.id in done:
            continue
        if await digest_basis(tool, vault.arguments_of(call), context) == shown:
            continue
        log.info("call %d (%r) of the approved turn changed under its preview", index, call.name)
        failing = stale_preview_of(tool) is StalePreview.FAIL
        (fail if failing else wait).append(index)
    return Stale(wait=tuple(wait), fail=tuple(fail))
