"""YAML configuration files, read within bounds: nesting, alias expansion and time.

The events come from libyaml (PyYAML's C parser) where it is installed, about eight times
faster than the pure-Python parser, which is the fallback. The nodes are composed here, not by
libyaml's composer: that one recurses in C once per level and crashes the process on a document
nested some tens of thousands deep, while this one stops at ``MAX_NESTING`` levels before going
deeper, and checks the file's time budget as it goes (constructing values too).

Aliases are expanded lazily by every reader of the parsed data, so a document whose aliases
would expand past ``MAX_ALIAS_VALUES`` values more than it writes (a "billion laughs") is a
problem, not a hang. Problem texts never name an anchor, an alias or a value of the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent, ScalarEvent
from yaml.nodes import ScalarNode
from yaml.resolver import Resolver

from toolwire.tools.builtin._per_file import MAX_NESTING, Budget, NotChecked, nested_deeper_than

MAX_ALIAS_VALUES = 100_000  # values aliases may add to a file beyond those it writes out
_TICK = 1024  # nodes composed or built between two looks at the clock


class _Bounded(Composer, SafeConstructor, Resolver):
    """PyYAML's composer and safe constructor, bounded; the events come from a parser base."""

    if TYPE_CHECKING:  # from the parser base each loader below adds

        def peek_event(self) -> Any: ...

        def get_event(self) -> Any: ...

    def _setup(self, budget: Budget, *, typed: bool) -> None:
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.budget = budget
        self.typed = typed  # False: nodes for their lines only, scalar types not worked out
        self.depth = 0
        self.nodes = 0
        self.aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, AliasEvent):
            self.get_event()
            if event.anchor not in self.anchors:
                mark: Any = event.start_mark  # libyaml's marks are its own type, read alike
                raise ComposerError(None, None, "found undefined alias", mark)
            self.aliases += 1
            return self.anchors[event.anchor]
        anchor = event.anchor
        if anchor is not None and anchor in self.anchors:
            first = self.anchors[anchor].start_mark
            raise ComposerError(
                "found duplicate anchor; first occurrence", first, "second occurrence",
                event.start_mark,
            )  # fmt: skip
        self.nodes += 1
        if self.nodes % _TICK == 0:
            self.budget.check()
        if isinstance(event, ScalarEvent):  # inline: most nodes are scalars
            return self._scalar(self.get_event(), anchor)
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise NotChecked(nested_deeper_than(MAX_NESTING))
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def _scalar(self, event: Any, anchor: str | None) -> ScalarNode:
        # As Composer.compose_scalar_node; the safe resolver has no path resolvers to descend.
        tag = event.tag
        if not self.typed:
            tag = "?"  # the resolver's patterns are a third of composing, and lines need none
        elif tag is None or tag == "!":
            tag = self.resolve(ScalarNode, event.value, event.implicit)  # type: ignore[no-untyped-call]
        node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        if anchor is not None:
            self.anchors[anchor] = node
        return node

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        self.nodes += 1
        if self.nodes % _TICK == 0:
            self.budget.check()
        return super().construct_object(node, deep)


if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _Loader(_Bounded, CParser):
        def __init__(self, text: str, budget: Budget, *, typed: bool) -> None:
            CParser.__init__(self, text)
            self._setup(budget, typed=typed)

else:  # pragma: no cover - where PyYAML was built without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Loader(_Bounded, Reader, Scanner, Parser):  # type: ignore[no-redef]
        def __init__(self, text: str, budget: Budget, *, typed: bool) -> None:
            Reader.__init__(self, text)
            Scanner.__init__(self)
            Parser.__init__(self)
            self._setup(budget, typed=typed)


def compose(text: str, budget: Budget) -> yaml.Node | None:
    """The document's root node (None for an empty document), for the lines of its values
    (scalars are left untyped): ``yaml.YAMLError`` when it is not YAML, ``NotChecked`` when it
    is nested too deeply or slow to read."""
    return _load(text, budget, construct=False)[1]


def load(text: str, budget: Budget) -> tuple[Any, yaml.Node | None]:
    """The document and its root node (the node gives the lines values are written on)."""
    return _load(text, budget, construct=True)


class TooManyValues(Exception):
    """A document whose aliases expand past ``MAX_ALIAS_VALUES`` values."""


def _load(text: str, budget: Budget, *, construct: bool) -> tuple[Any, yaml.Node | None]:
    loader = _Loader(text, budget, typed=construct)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        if loader.aliases:
            _check_expansion(node, loader.nodes + MAX_ALIAS_VALUES, budget)
        document = loader.construct_document(node) if construct else None
        budget.check()  # a file smaller than one tick is looked at here
        return document, node
    finally:
        loader.dispose()


def _check_expansion(node: yaml.Node, budget_nodes: int, budget: Budget) -> None:
    """Walk ``node`` as its readers will, aliases expanded, counting nodes and levels:
    ``TooManyValues`` past ``budget_nodes``, ``NotChecked`` past ``MAX_NESTING`` levels (an
    alias of an ancestor nests without end)."""
    count, stack = 0, [(node, 1)]
    while stack:
        current, depth = stack.pop()
        count += 1
        if count > budget_nodes:
            raise TooManyValues
        if count % _TICK == 0:
            budget.check()
        if isinstance(current, yaml.MappingNode | yaml.SequenceNode):
            if depth > MAX_NESTING:
                raise NotChecked(nested_deeper_than(MAX_NESTING))
            parts = current.value
            if isinstance(current, yaml.MappingNode):
                parts = [part for pair in current.value for part in pair]
            stack += [(part, depth + 1) for part in parts]
