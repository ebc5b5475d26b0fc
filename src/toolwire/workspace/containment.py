"""A workspace's containment policy: the ``[containment]`` table of its TOML file.

```toml
[containment]
untrusted_actions = "approve"   # or "refuse"
quarantine = ["read_inbox"]      # tools whose whole output the model sees only a handle of
endorse_strings = false          # a free-string answer about a quarantined value stays untrusted

[containment.integrity]          # a tool's integrity label, by name, over its own
get_config = "trusted"
docs__get_page = "untrusted"
```

``untrusted_actions`` says what happens to a consequential call planned while untrusted output
(or data more sensitive than the call's sink may receive) is in the model's context: it waits
for a person's approval (``approve``, the default) or is refused with a text the model reads
(``refuse``). What the labels and that check are: :mod:`toolwire.policy.containment`;
quarantined values: :mod:`toolwire.policy.quarantine`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from toolwire.core.trust import Integrity, UntrustedActions

__all__ = ["Containment", "ContainmentSettings", "UntrustedActions", "containment"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Containment:
    """A workspace's containment policy, validated."""

    untrusted_actions: UntrustedActions = UntrustedActions.APPROVE
    integrity: Mapping[str, Integrity] = field(default_factory=dict)  # by tool name
    quarantine: frozenset[str] = frozenset()  # tools whose whole output is held, by name
    endorse_strings: bool = False  # a string answer about a held value enters as trusted

    @property
    def is_default(self) -> bool:
        return (
            self.untrusted_actions is UntrustedActions.APPROVE
            and not self.integrity
            and not self.quarantine
            and not self.endorse_strings
        )

    def to_dict(self) -> dict[str, object]:
        """Plain data, for the workspace's identity (see :mod:`toolwire.policy.charter`)."""
        out: dict[str, object] = {
            "untrusted_actions": self.untrusted_actions.value,
            "integrity": {k: v.value for k, v in sorted(self.integrity.items())},
        }
        if self.quarantine:  # absent: the identity of a workspace that quarantines nothing
            out["quarantine"] = sorted(self.quarantine)
        if self.endorse_strings:
            out["endorse_strings"] = True
        return out


DEFAULT_CONTAINMENT = Containment()


class ContainmentSettings(BaseModel):
    """The ``[containment]`` table as written."""

    model_config = ConfigDict(extra="forbid", strict=True)
    untrusted_actions: str = UntrustedActions.APPROVE.value
    integrity: dict[str, str] = {}
    quarantine: list[str] = []
    endorse_strings: bool = False


def containment(settings: ContainmentSettings | None, source: str) -> Containment:
    """The policy ``settings`` name; ``ConfigError`` naming the file and the key."""
    if settings is None:
        return DEFAULT_CONTAINMENT
    where = f"{source}: containment"
    return Containment(
        untrusted_actions=UntrustedActions.parse(
            settings.untrusted_actions, f"{where}.untrusted_actions"
        ),
        integrity={
            name: Integrity.parse(label, f"{where}.integrity.{name[:80]}")
            for name, label in settings.integrity.items()
        },
        quarantine=frozenset(settings.quarantine),
        endorse_strings=settings.endorse_strings,
    )
