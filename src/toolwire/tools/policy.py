"""The policy gate: which tools a run may offer, and why each refusal happened.

A tool is offered only if, in this order (cheapest and least revealing first):
1. it is registered;
2. it is enabled (group and tool cascade);
3. the acting user may use it (admin-only tools never reach a non-admin; no user is no admin);
4. it is inside the run's grant (allowed tools and allowed groups);
5. its data class is within the ceiling of the provider's trust zone.

Unknown values resolve to the strictest option: an unknown data class is ``secret_adjacent``,
an unknown zone ``external_global``. The invoke seam re-checks the offered set, and the whole
gate (``Gate``), when each call arrives.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum

from toolwire.tools.api import ToolContext
from toolwire.tools.registry import ToolRegistry


class DataClass(IntEnum):
    """How sensitive the data a tool reads is, least to most."""

    PUBLIC = 0
    CONTENT = 1
    SOURCE_CODE = 2
    CONFIGURATION = 3
    SYSTEM_DIAGNOSTICS = 4
    SECRET_ADJACENT = 5

    @classmethod
    def parse(cls, value: object) -> DataClass:
        """The class named ``value``; anything unknown is the strictest class."""
        try:
            return cls[str(value).strip().upper()]
        except KeyError:
            return cls.SECRET_ADJACENT


class TrustZone(StrEnum):
    """Where the provider runs, which bounds what data may be sent to it."""

    LOCAL = "local"
    PRIVATE_HOSTED = "private_hosted"
    EXTERNAL_EU = "external_eu"
    EXTERNAL_GLOBAL = "external_global"

    @classmethod
    def parse(cls, value: object) -> TrustZone:
        """The zone named ``value``; anything unknown or empty is the least trusted zone."""
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            return cls.EXTERNAL_GLOBAL

    @property
    def ceiling(self) -> DataClass:
        return _CEILINGS[self]


_CEILINGS = {
    TrustZone.LOCAL: DataClass.SECRET_ADJACENT,
    TrustZone.PRIVATE_HOSTED: DataClass.SYSTEM_DIAGNOSTICS,
    TrustZone.EXTERNAL_EU: DataClass.CONFIGURATION,
    TrustZone.EXTERNAL_GLOBAL: DataClass.CONTENT,
}


class Refusal(StrEnum):
    NOT_REGISTERED = "not_registered"
    DISABLED = "disabled"
    REQUIRES_ADMIN = "requires_admin"
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
        if tool.requires_admin and not context.is_admin:
            return Decision(name, False, Refusal.REQUIRES_ADMIN)
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
    while the run goes on is refused from that moment, though it was offered."""

    policy: ToolPolicy
    context: ToolContext
    grant: Grant
    zone: TrustZone

    def allows(self, name: str) -> bool:
        verdict = self.policy.decide(name, context=self.context, grant=self.grant, zone=self.zone)
        return verdict.allowed
