"""The policy gate: which tools a run may offer, and why each refusal happened.

A tool is offered only if, in this order (cheapest and least revealing first):
1. it is registered;
2. it is enabled (group and tool cascade);
3. the acting user may use it (admin-only tools never reach a non-admin; no user is no admin);
4. the run has a workspace, if the tool works only on one (every call would fail without it);
5. it is inside the run's grant (allowed tools and allowed groups);
6. its data class is within the ceiling of the provider's trust zone.

Data classes and trust zones live in :mod:`toolwire.core.trust`: a tool's class is checked when it
is registered, a provider's zone when it is made. The invoke seam re-checks the offered set,
and the whole gate (``Gate``), when each call arrives. Of those, 3 to 6 depend only on the run
(its user, workspace, grant and zone) and on the tool's own declarations, so a run's gate
decides them once per tool; 1 and 2 (a tool disabled, or its group, while the run goes on) are
asked every time.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from toolwire.core.trust import DataClass, TrustZone

if TYPE_CHECKING:  # only named in signatures: the gate's values stay free of pydantic
    from toolwire.tools.api import Tool, ToolContext
    from toolwire.tools.registry import ToolRegistry

__all__ = [
    "DataClass", "Decision", "Gate", "Grant", "Refusal", "ToolPolicy", "TrustZone",
    "needs_workspace", "workspace_note",
]  # fmt: skip


class Refusal(StrEnum):
    NOT_REGISTERED = "not_registered"
    DISABLED = "disabled"
    REQUIRES_ADMIN = "requires_admin"
    NO_WORKSPACE = "no_workspace"
    NOT_GRANTED = "not_granted"
    TRUST_ZONE = "trust_zone"


@dataclass(frozen=True, slots=True, kw_only=True)
class Grant:
    """What a run may use. ``None`` means no restriction on that axis; empty means nothing."""

    tools: frozenset[str] | None = None
    groups: frozenset[str] | None = None

    @classmethod
    def of(
        cls, tools: Collection[str] | None = None, groups: Collection[str] | None = None
    ) -> Grant:
        return cls(
            tools=None if tools is None else frozenset(tools),
            groups=None if groups is None else frozenset(groups),
        )


def needs_workspace(tool: Tool) -> bool:
    """Whether ``tool`` can work only on the run's workspace (a run without one is not offered
    it); a tool that does not say so is offered whether or not there is one."""
    return getattr(tool, "needs_workspace", False) is True


def workspace_note(refusals: Iterable[Mapping[str, str]]) -> str | None:
    """The one note a run gives for the tools it was not offered for want of a workspace
    (``refusals``: a request step's, as :meth:`Decision.to_dict` makes them), or None."""
    count = sum(1 for r in refusals if r.get("reason") == Refusal.NO_WORKSPACE)
    if not count:
        return None
    return f"{count} tool{'' if count == 1 else 's'} not offered: no workspace"


@dataclass(frozen=True, slots=True)
class Decision:
    name: str
    allowed: bool
    reason: Refusal | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"tool": self.name, "reason": str(self.reason or "allowed")}
        if self.detail:
            out["detail"] = self.detail
        return out


class ToolPolicy:
    """Decides, per tool and run, whether the tool may be offered."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry

    def decide(self, name: str, *, context: ToolContext, grant: Grant, zone: TrustZone) -> Decision:
        tool = self.registry.get(name)
        if tool is None:
            return Decision(name, False, Refusal.NOT_REGISTERED)
        if not self.registry.is_enabled(name):
            return Decision(name, False, Refusal.DISABLED)
        return self.decide_fixed(tool, context=context, grant=grant, zone=zone)

    def decide_fixed(
        self, tool: Tool, *, context: ToolContext, grant: Grant, zone: TrustZone
    ) -> Decision:
        """Conditions 3 to 6 for a registered tool: fixed for the length of a run."""
        name = tool.spec.name
        if tool.requires_admin and not context.is_admin:
            return Decision(name, False, Refusal.REQUIRES_ADMIN)
        if context.workspace is None and needs_workspace(tool):
            return Decision(name, False, Refusal.NO_WORKSPACE)
        if (grant.tools is not None and name not in grant.tools) or (
            grant.groups is not None and tool.group not in grant.groups
        ):
            return Decision(name, False, Refusal.NOT_GRANTED)
        data_class = DataClass.parse(tool.data_class)
        if data_class > zone.ceiling:
            detail = f"data class {data_class.name.lower()} is above the {zone} ceiling"
            return Decision(name, False, Refusal.TRUST_ZONE, detail)
        return Decision(name, True)

    def gate(self, *, context: ToolContext, grant: Grant, zone: TrustZone) -> Gate:
        """The verdict for one run, to ask again when each call arrives."""
        return Gate(self, context, grant, zone)

    def offered(
        self,
        requested: Sequence[str] | None,
        *,
        context: ToolContext,
        grant: Grant,
        zone: TrustZone,
    ) -> tuple[list[str], list[Decision]]:
        """Offered names in registry order, and the refused candidates in request order.

        Candidates are ``requested``, or every enabled tool when it is ``None``.
        """
        candidates = self.registry.enabled_names() if requested is None else requested
        decisions = [
            self.decide(n, context=context, grant=grant, zone=zone)
            for n in dict.fromkeys(candidates)
        ]
        allowed = {d.name for d in decisions if d.allowed}
        offered = [n for n in self.registry.names() if n in allowed]
        return offered, [d for d in decisions if not d.allowed]


@dataclass(frozen=True, slots=True)
class Gate:
    """One run's gate. The seam asks it again for every call: a tool disabled (or its group)
    while the run goes on is refused from that moment, though it was offered. What cannot
    change while the run goes on (see the module) is decided at a tool's first call and kept."""

    policy: ToolPolicy
    context: ToolContext
    grant: Grant
    zone: TrustZone
    _fixed: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    def allows(self, name: str) -> bool:
        registry = self.policy.registry
        fixed = self._fixed.get(name)
        if fixed is None:
            tool = registry.get(name)
            if tool is None:
                return False  # not kept: a tool may be registered later
            verdict = self.policy.decide_fixed(tool, context=self.context, grant=self.grant,
                                               zone=self.zone)  # fmt: skip
            fixed = self._fixed[name] = verdict.allowed
        return fixed and registry.is_enabled(name)
