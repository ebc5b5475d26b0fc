"""What a tool's output is worth as instructions, and what a call of it may do to the world.

Containment by information flow needs two facts of every tool, both its own declarations,
read here and nowhere else:

- **Integrity** (:class:`Integrity`): whether the text a call returns is ``trusted`` (written
  by the tool from facts the workspace owns: counts, schema listings, names in a folder) or
  ``untrusted`` (carrying words someone else chose: a log line, a document, a fetched page, a
  record's free-text field, a file's content, another process's answer). A tool declares it as
  ``integrity``; one that declares nothing (a user's ``@tool`` without it, an entry-point
  plug-in, an MCP server's tool) is **untrusted**: a wrong "trusted" lets an injected
  instruction steer a write, a wrong "untrusted" costs a person's approval.
- **Consequential** (:func:`is_consequential`): whether a call changes something or sends data
  out: a write effect, a tool marked as needing approval, or one that reaches outside the
  workspace (an HTTP request, another process) unless it declares that it only reads. A tool
  may say so itself (``consequential``), which wins.

What a consequential call's *sink* may receive is a data class (:func:`sink_class_of`): the
tool's own ``sink_class`` if it declares one, else its own data class (what it is cleared for).

A workspace may override a tool's integrity by name (``[containment.integrity]``): the
override is read by :func:`integrity_of` too.

A third declaration keeps a tool's output out of the model's context: ``quarantine``
(:func:`quarantine_of`; see :mod:`toolwire.policy.quarantine`). A workspace may quarantine a
tool's whole output by name (``[containment] quarantine``). A quarantining tool may declare
that what it holds lists identifiers the system holds (``identifiers=True``,
:func:`lists_identifiers`): the model may then choose one of them without reading it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from toolwire.core.errors import ConfigError
from toolwire.core.trust import DataClass, Integrity
from toolwire.tools.api import Tool, needs_approval, reaches_outside

__all__ = [
    "Integrity",
    "integrity_of",
    "is_consequential",
    "lists_identifiers",
    "quarantine_of",
    "sink_class_of",
    "stored_untrusted",
]


def declared_integrity(tool: Tool) -> Integrity | None:
    """What ``tool`` itself declares, or None when it declares nothing (or nothing readable)."""
    value = getattr(tool, "integrity", None)
    if value is None:
        return None
    try:
        return Integrity(value)
    except ValueError:
        return None


def integrity_of(tool: Tool, overrides: Mapping[str, Integrity] | None = None) -> Integrity:
    """The label of ``tool``'s results: the workspace's override for its name, else its own
    declaration, else untrusted (see the module)."""
    if overrides:
        chosen = overrides.get(tool.spec.name)
        if chosen is not None:
            return chosen
    return declared_integrity(tool) or Integrity.UNTRUSTED


def is_consequential(tool: Tool) -> bool:
    """Whether a call of ``tool`` changes something or sends data out (see the module)."""
    declared = getattr(tool, "consequential", None)
    if isinstance(declared, bool):
        return declared
    if needs_approval(tool):
        return True
    if not reaches_outside(tool):
        return False
    # reaching outside: only a tool that says it only reads (an MCP server's hint) is not
    return getattr(tool, "read_only", False) is not True


def sink_class_of(tool: Tool) -> DataClass:
    """The most sensitive class of data a call of ``tool`` may carry to where it goes."""
    declared = getattr(tool, "sink_class", None)
    if declared is not None:
        try:
            return DataClass.parse(declared)
        except ConfigError:
            return DataClass.PUBLIC  # a sink we cannot read receives nothing sensitive
    return DataClass.parse(getattr(tool, "data_class", None))


def quarantine_of(tool: Tool, names: Collection[str] = ()) -> tuple[str, ...] | None:
    """What of ``tool``'s results the run holds as variables: None, nothing; ``()``, the whole
    result (the tool says ``True``, or the workspace names it in ``names``); else the top-level
    fields of a JSON object result. A declaration we cannot read holds the whole result."""
    if tool.spec.name in names:
        return ()
    declared = getattr(tool, "quarantine", False)
    if declared is False or declared is None:
        return None
    if declared is True:
        return ()
    if (
        isinstance(declared, tuple | list)
        and declared
        and all(isinstance(f, str) for f in declared)
    ):
        return tuple(declared)
    return ()


def lists_identifiers(tool: Tool) -> bool:
    """Whether what ``tool`` holds lists identifiers of things the system holds (channel
    names, user names, file names), which a run may choose among unread; only ``True`` says
    so (see :mod:`toolwire.policy.quarantine`)."""
    return getattr(tool, "identifiers", False) is True


def stored_untrusted(tool: Tool) -> frozenset[str]:
    """The arguments of ``tool`` whose value it stores where it is read back as untrusted
    (see the module); none unless it names them as strings."""
    declared = getattr(tool, "stores_untrusted", ())
    if isinstance(declared, str) or not isinstance(declared, tuple | list | frozenset):
        return frozenset()
    return frozenset(name for name in declared if isinstance(name, str))
