"""What one segment of a run may call, worked out once when the segment starts.

A segment's offered set does not change while it goes on, and neither do the traits of its
tools that the loop consults on every turn: whether a tool may make a turn wait for a person,
must run alone, is served by another process, or runs on the event loop wherever it is called.
Reading them once, here, keeps a turn's path to what changes per call: a run whose tools never
pause skips the suspension scan, one without remote tools skips the remote-call budget.

Invariants:
- The gate is still asked at every call (:class:`toolwire.tools.policy.Gate`): a tool disabled
  while the run goes on is refused from that moment. What the offer fixes is only what cannot
  change during a segment: which names were offered, and each tool's own declarations (read
  when the segment starts; a tool object changed later is seen by the next segment).
- A segment offering a tool that quarantines its output (:mod:`toolwire.policy.quarantine`)
  also offers ``ask_about``, answered by the loop (unless a registered tool has that name), and
  says so (``vaulting``): only such a segment, or one whose run holds values already, takes the
  holding path at all.
- ``exclusive`` says the run's event loop runs nothing but this run (see
  :func:`toolwire.loop.seam.sole_task`): where a synchronous call may run follows from it and
  from the turn, by :func:`toolwire.loop.seam.may_block_loop`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from toolwire.core.messages import ToolSpec
from toolwire.core.trust import Integrity, UntrustedActions
from toolwire.loop.seam import may_block_loop, on_loop
from toolwire.policy.containment import Labels
from toolwire.policy.quarantine import ASK_ABOUT, ASK_ABOUT_DESCRIPTION, ASK_ABOUT_PARAMETERS
from toolwire.tools.api import input_model_of, is_remote, needs_approval, runs_concurrently
from toolwire.tools.policy import Gate
from toolwire.tools.registry import ToolRegistry

__all__ = ["Offer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    """One segment's offered tools, their definitions and traits, its gate and its loop."""

    names: frozenset[str]
    specs: tuple[ToolSpec, ...]  # in registry order: what each request defines
    spec_names: tuple[str, ...]  # their names, as each request step records them
    gate: Gate
    exclusive: bool  # nothing but this run can be waiting on its event loop
    # An offered tool may make a turn wait for a person: scan every turn (a turn the run's
    # containment holds is scanned too: see toolwire.policy.containment).
    pausing: bool
    remote: bool  # an offered tool is remote: its calls spend the run's budget
    alone: frozenset[str]  # offered tools whose calls overlap nothing else of their turn
    on_loop: frozenset[str]  # offered tools that run on the event loop wherever they are called
    # Offered tools whose call runs on the loop's thread when nothing of its turn overlaps it
    # (every one when the loop is exclusive): :meth:`inline`, asked once per segment.
    inline_alone: frozenset[str]
    # What each offered tool's results are labelled, and which calls are consequential
    # (toolwire.policy.containment): read once, like every other trait here.
    labels: Labels
    vaulting: bool = False  # an offered tool quarantines its output
    asks: bool = False  # ``ask_about`` is offered, and answered by the loop
    attended: bool = True  # a person can be asked (an egress limit may wait for one)

    @classmethod
    def of(
        cls,
        registry: ToolRegistry,
        names: Collection[str],
        gate: Gate,
        *,
        exclusive: bool,
        overrides: Mapping[str, Integrity] | None = None,
        policy: UntrustedActions = UntrustedActions.APPROVE,
        quarantine: Collection[str] = (),
        endorse_strings: bool = False,
        holds: bool = False,
        attended: bool = True,
    ) -> Offer:
        """``holds``: the run holds values already (its vault is not empty); ``attended``: a
        person can be asked."""
        tools = [tool for tool in registry if tool.spec.name in names]
        labels = Labels.of(tools, overrides=overrides, policy=policy, quarantine=quarantine,
                           endorse_strings=endorse_strings)  # fmt: skip
        vaulting = bool(labels.quarantined) or holds
        asks = vaulting and registry.get(ASK_ABOUT) is None
        specs = tuple(tool.spec for tool in tools)
        if asks:
            specs = (*specs, ToolSpec(ASK_ABOUT, ASK_ABOUT_DESCRIPTION, ASK_ABOUT_PARAMETERS))
        on_loop_names = frozenset(t.spec.name for t in tools if on_loop(t))
        alone_inline = may_block_loop(exclusive=exclusive, overlapping=False)
        return cls(
            names=frozenset(names),
            specs=specs,
            spec_names=tuple(spec.name for spec in specs),
            gate=gate,
            exclusive=exclusive,
            pausing=any(needs_approval(t) or input_model_of(t) is not None for t in tools),
            remote=any(is_remote(t) for t in tools),
            alone=frozenset(t.spec.name for t in tools if not runs_concurrently(t)),
            on_loop=on_loop_names,
            inline_alone=frozenset(names) if alone_inline else on_loop_names,
            labels=labels,
            vaulting=vaulting,
            asks=asks,
            attended=attended,
        )

    def inline(self, name: str, *, overlapping: bool) -> bool:
        """Whether a call of ``name`` runs on the loop's thread: its tool always does, or a
        synchronous call may block the loop here (``overlapping``: other calls of its turn
        may run at the same time)."""
        if name in self.on_loop:
            return True
        return may_block_loop(exclusive=self.exclusive, overlapping=overlapping)
