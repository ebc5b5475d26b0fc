"""Setting the fields of a frozen slotted value from its own ``__init__``, cheaply.

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__``, which
looks the name up on the class every time. The loop builds a few such values for every call a
model makes (messages, requests, results), so the classes on that path write their
``__init__`` out and set each slot through its descriptor instead: about half the cost.

Invariant: only a class's own construction uses its setters. Everyone else still meets a
frozen value (assigning a field raises ``FrozenInstanceError``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Setter = Callable[[Any, Any], None]


def setters(cls: type, *names: str) -> tuple[Setter, ...]:
    """The slot setters of ``cls`` for ``names``, in that order."""
    return tuple(cls.__dict__[name].__set__ for name in names)
