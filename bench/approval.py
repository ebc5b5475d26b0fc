"""What an approval costs: one suspend plus resume against one plain tool round, and what
running a synchronous tool in a worker thread costs a call.

    python bench/approval.py

Both runs take the same path through the same runtime, SQLite store file and event loop: a
scripted model asks for one call, then answers. In the plain run the tool just runs; in the
approval run the tool needs approval, so the run seals its state and stores it (suspend), then
a resume reads it back, opens it, re-checks the gate, claims the run and carries on. The
difference per run is what one approval adds. Target: at most 2 ms.

Every figure is the best of interleaved batches (plain, approval, plain, ...), so a slow moment
of the machine hits both sides alike; nothing here is a timed assertion.

A fourth side decides "from another process": the run is submitted through one runtime and
store, and resumed through a second runtime with its own store (at another privacy level) and
nothing lent, so the segment runs under the run's charter alone: its provider rebuilt from the
charter's reference, its user and its workspace loaded again from the workspace file (and
checked to point where it pointed), its steps kept at the run's own level.

A third side approves a tool whose preview has a basis (a file's identity and SHA-256, as
``write_file``'s): it is taken with the preview and again before the approved call runs, so
the difference from the approval side is what re-checking a preview costs a round trip.

The second table calls the seam directly with the same tool written synchronously (run in a
worker thread by ``asyncio.to_thread``) and as a coroutine (run on the loop): the difference is
the worker thread's cost per call.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from toolwire import ScriptedProvider, ToolCall, ToolContext, ToolRegistry, User, tool
from toolwire.core.lifecycle import RunStatus
from toolwire.core.sealing import StateKey
from toolwire.loop.seam import Seam
from toolwire.policy.privacy import PrivacyLevel
from toolwire.runs.runtime import OperatorDecision, RunRequest, Runtime
from toolwire.store import RunStore
from toolwire.workspace.config import load_workspace

BATCHES = 15
RUNS_PER_BATCH = 20
CALLS_PER_BATCH = 500
TARGET_MS = 2.0
# The target was set where a plain tool round cost 0.84 ms; as a ratio to the plain round
# measured in the same process (these machines differ and are noisy), that is ~2.4 rounds.
TARGET_ROUNDS = TARGET_MS / 0.84


@tool(data_class="public")
def plain(n: int) -> str:
    return f"row {n}"


@tool(data_class="public", requires_approval=True)
def gated(n: int) -> str:
    return f"row {n}"


@tool(data_class="public", requires_approval=True)
def checked(n: int) -> str:
    return f"row {n}"


BASIS_FILE = Path(tempfile.gettempdir()) / "toolwire-bench-basis.txt"


@checked.basis
def _checked_basis(n: int) -> str:
    found = BASIS_FILE.stat()
    with BASIS_FILE.open("rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    return f"{BASIS_FILE}\n{found.st_dev}:{found.st_ino}\n{found.st_size}\nsha256 {digest}"


async def plain_async(n: int) -> str:
    return f"row {n}"


def script(name: str) -> ScriptedProvider:
    turn = {"tool_calls": [{"name": name, "arguments": {"n": 1}}]}
    return ScriptedProvider.from_turns([turn, {"content": "done"}])


def best_of(
    loop: asyncio.AbstractEventLoop, sides: dict[str, Callable[[], Awaitable[object]]], count: int
) -> dict[str, float]:
    """Seconds per action for each side: the best batch, batches interleaved."""
    best = dict.fromkeys(sides, float("inf"))
    for _ in range(BATCHES):
        for name, action in sides.items():
            started = time.perf_counter()
            for _ in range(count):
                loop.run_until_complete(action())
            best[name] = min(best[name], (time.perf_counter() - started) / count)
    return best


def approval_sides(
    runtime: Runtime, deciding: Runtime, workspace: Path
) -> dict[str, Callable[[], Awaitable[object]]]:
    plain_provider, gated_provider = script("plain"), script("gated")
    checked_provider = script("checked")
    context = ToolContext(user=User("ann"), workspace=load_workspace(workspace))

    async def plain_run() -> None:
        outcome = await runtime.run(RunRequest.of("go", provider=plain_provider))
        assert outcome.status is RunStatus.COMPLETED

    async def approved_run() -> None:
        outcome = await runtime.run(RunRequest.of("go", provider=gated_provider))
        assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
        decision = OperatorDecision(action="approve", digest=outcome.pause.digest, actor="bench")
        done = await runtime.resume(outcome.run_id, decision, provider=gated_provider)
        assert done.status is RunStatus.COMPLETED

    async def checked_run() -> None:
        outcome = await runtime.run(RunRequest.of("go", provider=checked_provider))
        assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
        decision = OperatorDecision(action="approve", digest=outcome.pause.digest, actor="bench")
        done = await runtime.resume(outcome.run_id, decision, provider=checked_provider)
        assert done.status is RunStatus.COMPLETED

    async def chartered_run() -> None:
        request = RunRequest.of("go", provider=gated_provider, context=context)
        outcome = await runtime.run(request)
        assert outcome.status is RunStatus.AWAITING_APPROVAL and outcome.pause is not None
        decision = OperatorDecision(action="approve", digest=outcome.pause.digest, actor="ops")
        done = await deciding.resume(outcome.run_id, decision)  # nothing lent: the charter
        assert done.status is RunStatus.COMPLETED

    return {"plain": plain_run, "approval": approved_run, "checked": checked_run,
            "charter": chartered_run}  # fmt: skip


def thread_sides() -> dict[str, Callable[[], Awaitable[object]]]:
    """Each side awaits ``CALLS_PER_BATCH`` calls in one coroutine: no per-call loop entry."""
    seam = Seam(ToolRegistry([plain, tool(name="plain_async", data_class="public")(plain_async)]))
    context = ToolContext()
    offered = frozenset({"plain", "plain_async"})

    def calls(call: ToolCall) -> Callable[[], Awaitable[object]]:
        async def many() -> None:
            for _ in range(CALLS_PER_BATCH):
                await seam.invoke(call, offered, context)

        return many

    return {
        "sync (worker thread)": calls(ToolCall("c1", "plain", '{"n":1}')),
        "async (on the loop)": calls(ToolCall("c2", "plain_async", '{"n":1}')),
    }


def main() -> int:
    loop = asyncio.new_event_loop()  # one loop for everything: asyncio.run() costs milliseconds
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            RunStore.open(str(Path(folder) / "bench.db")) as store,
            RunStore.open(str(Path(folder) / "bench.db"), privacy=PrivacyLevel.FULL) as other,
        ):
            BASIS_FILE.write_text("def main():\n    return 42\n" * 100)  # a 2.6 kB source file
            workspace = Path(folder) / "workspace.toml"
            (Path(folder) / "files").mkdir()
            workspace.write_text('files_root = "files"\n')
            registry, key = ToolRegistry([plain, gated, checked]), StateKey.generate()
            runtime = Runtime(registry, recorder=store, state_key=key)
            gated_again = script("gated")
            deciding = Runtime(registry, recorder=other, state_key=key,
                               provider_factory=lambda ref: gated_again)  # fmt: skip
            sides = approval_sides(runtime, deciding, workspace)
            best_of(loop, sides, 3)  # warm up imports, statements and caches
            runs = best_of(loop, sides, RUNS_PER_BATCH)
        batches = best_of(loop, thread_sides(), 1)
        calls = {name: seconds / CALLS_PER_BATCH for name, seconds in batches.items()}
    finally:
        loop.close()
        BASIS_FILE.unlink(missing_ok=True)
    added_ms = (runs["approval"] - runs["plain"]) * 1e3
    print(f"one tool round, SQLite store:  {runs['plain'] * 1e3:7.3f} ms per run")
    print(f"same run with one approval:    {runs['approval'] * 1e3:7.3f} ms per run "
          f"(suspend + resume; {runs['approval'] / runs['plain']:.2f}x)")  # fmt: skip
    met = "met" if added_ms <= TARGET_MS else "MISSED"
    print(f"added per approval:            {added_ms:7.3f} ms (target ≤ {TARGET_MS} ms: {met})")
    charter_ms = (runs["charter"] - runs["plain"]) * 1e3
    met = "met" if charter_ms <= TARGET_MS else "MISSED"
    print(f"decided elsewhere, charter:    {charter_ms:7.3f} ms added per approval "
          f"(target ≤ {TARGET_MS} ms: {met})")  # fmt: skip
    plain_ms = runs["plain"] * 1e3
    for name, added in (("approval", added_ms), ("charter", charter_ms)):
        rounds = added / plain_ms
        met = "met" if rounds <= TARGET_ROUNDS else "MISSED"
        label = f"{name} as plain rounds:"
        print(f"  {label:28s} {rounds:7.2f} (target ≤ {TARGET_ROUNDS:.2f}: {met})")
    checked_ms = (runs["checked"] - runs["approval"]) * 1e3
    print(f"re-checked preview (file):     {checked_ms:7.3f} ms more per approval "
          "(basis taken with the preview and before the call)")  # fmt: skip
    sync_us = calls["sync (worker thread)"] * 1e6
    async_us = calls["async (on the loop)"] * 1e6
    print(f"seam call, sync tool:          {sync_us:7.1f} µs (in a worker thread)")
    print(f"seam call, async tool:         {async_us:7.1f} µs (on the loop)")
    print(f"worker thread per call:        {sync_us - async_us:7.1f} µs "
          f"({sync_us / async_us:.2f}x)")  # fmt: skip
    return 0  # a benchmark reports; a noisy machine must not turn it into a failing test


if __name__ == "__main__":
    sys.exit(main())
