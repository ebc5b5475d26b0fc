"""A workspace's containment policy: the ``[containment]`` table of its TOML file.

```toml
[containment]
untrusted_actions = "approve"   # or "refuse"

[containment.integrity]          # a tool's integrity label, by name, over its own
get_config = "trusted"
docs__get_page = "untrusted"
```

``untrusted_actions`` says what happens to a consequential call planned while untrusted output
(or data more sensitive than the call's sink may receive) is in the model's context: it waits
for a person's approval (``approve``, the default) or is refused with a text the model reads
(``refuse``). What the labels and that check are: :mod:`toolwire.policy.containment`.
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

    @property
    def is_default(self) -> bool:
        return self.untrusted_actions is UntrustedActions.APPROVE and not self.integrity

    def to_dict(self) -> dict[str, object]:
        """Plain data, for the workspace's identity (see :mod:`toolwire.policy.charter`)."""
        return {"untrusted_actions": self.untrusted_actions.value,
                "integrity": {k: v.value for k, v in sorted(self.integrity.items())}}  # fmt: skip


DEFAULT_CONTAINMENT = Containment()


class ContainmentSettings(BaseModel):
    """The ``[containment]`` table as written."""

    model_config = ConfigDict(extra="forbid", strict=True)
    untrusted_actions: str = UntrustedActions.APPROVE.value
    integrity: dict[str, str] = {}


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
    )
