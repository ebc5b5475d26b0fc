"""Containment by information flow: what entered a run's context, and which calls it may not
plan unattended.

Every tool result that enters the model's context carries two labels: its tool's integrity
(:mod:`toolwire.tools.labels`: trusted or untrusted, a workspace may override it by name) and
its tool's data class (:mod:`toolwire.core.trust`). A run keeps what entered, as a
:class:`Provenance`: the untrusted sources (which tool, which round) and the most sensitive data
class with where it came from. It goes with the run's state, sealed, across processes.

The trusted-action rule (:meth:`Labels.held`): a call of a *consequential* tool (it writes or
sends data out) planned while the context holds untrusted output, or data of a class above what
the call's sink may receive, is not executed unattended. Under the run's policy
(:func:`policy_of`) it waits for a person's approval, the reason shown (``approve``), or is
refused with a text the model reads (``refuse``, and always when no person can decide).

Invariants:
- Labels are sticky: content that left the conversation to fit the context window may already
  have steered the model, so what entered stays recorded for the run's life.
- A call the runtime refused (its answer is one of the seam's fixed texts) adds nothing: that
  text is the runtime's own, not the tool's.
- The labels and the rule are read once per segment (:meth:`Labels.of`); a run that offers no
  consequential tool never checks a turn.
- The policy can be made stricter by a run, never looser than its workspace's: a workspace
  that says ``refuse`` refuses, whatever the run asks.
- A value the run holds for the model (:mod:`toolwire.policy.quarantine`) carries its labels
  to where it goes: a consequential call receiving an untrusted one is held as if that output
  were in its context (:meth:`Labels.held_by_values`), one receiving a value above its sink's
  class likewise; a value that is only passed along marks no context. An identifier chosen
  from a listing of identifiers is not held for its integrity: it selects, it adds no words;
  nor is an untrusted value received only in arguments the tool stores where it is read back
  as untrusted (``stores_untrusted``): it launders nothing. Their data class still counts.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

from toolwire.core.errors import ConfigError
from toolwire.core.messages import ToolCall
from toolwire.core.reprs import count, tagged
from toolwire.core.trust import DataClass, Integrity, UntrustedActions
from toolwire.policy.quarantine import Unknown, Vault
from toolwire.tools.api import Tool
from toolwire.tools.labels import (
    integrity_of,
    is_consequential,
    lists_identifiers,
    quarantine_of,
    sink_class_of,
    stored_untrusted,
)

__all__ = ["Hold", "Labels", "Provenance", "Source", "policy_of", "quarantine_by"]

_new = tuple.__new__  # a value from its fields in order, a fraction of the keyword call's cost
# Untrusted sources a run names: one per tool (the round it was first read in). Past this many
# tools the oldest is let go of from the list; the run stays untrusted, which is all the rule
# reads.
MAX_SOURCES = 32


class Source(NamedTuple):
    """Where something in the context came from: a tool, and the round of its call."""

    tool: str
    round: int


class Provenance(NamedTuple):
    """What entered a run's context: untrusted sources in order of entry (each tool once, with
    the round it was first read in), and the most sensitive data class with its source (None:
    nothing classified above public).

    A NamedTuple rather than a frozen dataclass, like the loop's other per-round values: just
    as immutable, and a new one is made in most rounds of a run that reads untrusted output.
    Build it with keywords."""

    untrusted: tuple[Source, ...] = ()
    classified: DataClass = DataClass.PUBLIC
    classified_by: Source | None = None

    def __repr__(self) -> str:
        return tagged("Provenance", untrusted=count(self.untrusted),
                      classified=self.classified.name.lower())  # fmt: skip

    @property
    def latest_untrusted(self) -> Source | None:
        return self.untrusted[-1] if self.untrusted else None

    def entered(self, source: Source, integrity: Integrity, data_class: DataClass) -> Provenance:
        """This provenance once ``source``'s result entered the context: an untrusted tool is
        named with the round it was first read in; an unchanged provenance is returned as it
        is (on every call's path)."""
        untrusted, classified, by = self
        if integrity is _UNTRUSTED and all(s[0] != source[0] for s in untrusted):
            untrusted = (*untrusted, source)[-MAX_SOURCES:]
        if data_class > classified:
            classified, by = data_class, source
        if untrusted is self[0] and by is self[2]:
            return self
        return _new(Provenance, (untrusted, classified, by))

    def to_state(self) -> dict[str, Any]:
        by = self.classified_by
        return {"untrusted": [list(s) for s in self.untrusted],
                "classified": self.classified.name.lower(),
                "classified_by": None if by is None else list(by)}  # fmt: skip

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Provenance:
        """What :meth:`to_state` wrote; ``ValueError`` or ``KeyError`` for anything else."""
        by = data["classified_by"]
        try:
            classified = DataClass.parse(data["classified"])
        except ConfigError:
            raise ValueError("not a data class") from None
        return cls(
            untrusted=tuple(_source(s) for s in data["untrusted"]),
            classified=classified,
            classified_by=None if by is None else _source(by),
        )


NOTHING_ENTERED = Provenance()
_UNTRUSTED = Integrity.UNTRUSTED  # read once: an enum member's look-up costs on every call


def _source(value: Any) -> Source:
    tool, round_ = value
    if not isinstance(tool, str) or type(round_) is not int:
        raise ValueError("not a source")
    return Source(tool, round_)


class Hold(NamedTuple):
    """Why a call may not run unattended: untrusted output in the context (``untrusted``), or
    data above its sink's class (``sink`` < ``classified``); ``variable``: the held value it
    receives that carries it (None: the context does)."""

    tool: str
    source: Source
    untrusted: bool
    classified: DataClass = DataClass.PUBLIC
    sink: DataClass = DataClass.PUBLIC
    variable: str | None = None

    def reason(self) -> str:
        """What an approver reads: why this call waits for them."""
        if self.variable is not None:
            what = "untrusted" if self.untrusted else f"{self.classified.name.lower()} data of"
            return (
                f"receives {self.variable}, {what} output of `{self.source.tool}` "
                f"(round {self.source.round})"
                + ("" if self.untrusted else f"; `{self.tool}` may receive "
                   f"{self.sink.name.lower()} data at most")
            )  # fmt: skip
        if self.untrusted:
            return (
                f"planned after reading untrusted output of `{self.source.tool}`, "
                f"round {self.source.round}"
            )
        return (
            f"planned with {self.classified.name.lower()} data of `{self.source.tool}` "
            f"(round {self.source.round}) in context; `{self.tool}` may receive "
            f"{self.sink.name.lower()} data at most"
        )


_NO_HOLDS: Mapping[int, Hold] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class Labels:
    """One segment's labels: what each offered tool's results are, and which calls are
    consequential, with their sinks' classes."""

    labelled: Mapping[str, Integrity]  # each offered tool's results, by name
    classes: Mapping[str, DataClass]
    sinks: Mapping[str, DataClass]  # the consequential tools, by name
    policy: UntrustedActions
    # What of each quarantining tool's results is held (see toolwire.policy.quarantine), by
    # name: ``()`` the whole result, else fields; and whether a string answer is endorsed.
    quarantined: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    endorse_strings: bool = False
    # The quarantining tools whose held output lists identifiers the model may choose among.
    listings: frozenset[str] = frozenset()
    # The consequential tools' arguments that only store what they get where it is read back
    # as untrusted: a held untrusted value there does not hold the call (its class still does).
    stores: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        tools: Iterable[Tool],
        *,
        overrides: Mapping[str, Integrity] | None = None,
        policy: UntrustedActions = UntrustedActions.APPROVE,
        quarantine: Collection[str] = (),
        endorse_strings: bool = False,
    ) -> Labels:
        listed = list(tools)
        held = {t.spec.name: quarantine_of(t, quarantine) for t in listed}
        return cls(
            labelled={t.spec.name: integrity_of(t, overrides) for t in listed},
            classes={t.spec.name: DataClass.parse(t.data_class) for t in listed},
            sinks={t.spec.name: sink_class_of(t) for t in listed if is_consequential(t)},
            policy=policy,
            quarantined={name: fields for name, fields in held.items() if fields is not None},
            endorse_strings=endorse_strings,
            listings=frozenset(
                t.spec.name
                for t in listed
                if held[t.spec.name] is not None and lists_identifiers(t)
            ),
            stores={
                t.spec.name: stored
                for t in listed
                if is_consequential(t) and (stored := stored_untrusted(t))
            },
        )

    def integrity(self, name: str, *, refused: bool) -> Integrity | None:
        """The label of a call's result; None for one the runtime answered itself."""
        return None if refused else self.labelled.get(name)

    def entered(
        self, provenance: Provenance, round_: int, name: str, integrity: Integrity | None
    ) -> Provenance:
        """``provenance`` once a call's result (labelled ``integrity``) entered the context."""
        if integrity is None:
            return provenance
        data_class, (untrusted, classified, _) = self.classes[name], provenance
        if data_class <= classified and (
            integrity is not _UNTRUSTED or (untrusted and untrusted[-1][0] == name)
        ):
            return provenance  # nothing new: the common case, a tool read again
        return provenance.entered(_new(Source, (name, round_)), integrity, data_class)

    def held(self, calls: Sequence[ToolCall], provenance: Provenance) -> Mapping[int, Hold]:
        """The calls of a turn (by index) that may not run unattended, and why."""
        sinks = self.sinks
        if not sinks or (not provenance.untrusted and provenance.classified_by is None):
            return _NO_HOLDS
        if len(calls) == 1 and calls[0].name not in sinks:  # most turns: one call, no sink
            return _NO_HOLDS
        consequential = [(i, c, sinks[c.name]) for i, c in enumerate(calls) if c.name in sinks]
        if not consequential:
            return _NO_HOLDS
        latest = provenance.latest_untrusted
        classified, by = provenance.classified, provenance.classified_by
        held: dict[int, Hold] = {}
        for index, call, sink in consequential:
            if latest is not None:
                held[index] = Hold(call.name, latest, True)
            elif by is not None and sink < classified:
                held[index] = Hold(call.name, by, False, classified, sink)
        return held

    def held_by_values(
        self, calls: Sequence[ToolCall], vault: Vault, held: Mapping[int, Hold]
    ) -> Mapping[int, Hold]:
        """``held`` and the consequential calls of a turn not in it that receive a held value
        they may not act on unattended: an untrusted one, or one above their sink's class."""
        out = dict(held)
        for index, call in enumerate(calls):
            sink = self.sinks.get(call.name)
            if sink is None or index in out:
                continue
            arguments = call.decoded_arguments()
            substituted = None if arguments is None else vault.substitute(arguments)
            if substituted is None or isinstance(substituted, Unknown):
                continue  # refused by the loop when it is about to run
            stored = self._stored_only(call.name, arguments or {}, vault)
            for value in substituted.used:
                source = Source(value.tool, value.round)
                # an identifier chosen from a listing selects; it adds no words to the call
                words = not value.identifier and value.handle not in stored
                if value.integrity is _UNTRUSTED and words:
                    out[index] = Hold(call.name, source, True, variable=value.handle)
                    break
                if sink < value.data_class:
                    out[index] = Hold(call.name, source, False, value.data_class, sink,
                                      variable=value.handle)  # fmt: skip
                    break
        return out

    def _stored_only(self, name: str, arguments: Mapping[str, Any], vault: Vault) -> set[str]:
        """The handles a call of ``name`` receives only in arguments it stores untrusted."""
        stores = self.stores.get(name)
        if not stores:
            return set()
        where: dict[str, set[str]] = {}
        for argument, value in arguments.items():
            one = vault.substitute({argument: value})
            for used in () if isinstance(one, Unknown) else one.used:
                where.setdefault(used.handle, set()).add(argument)
        return {handle for handle, names in where.items() if names <= stores}


def policy_of(
    asked: UntrustedActions | None, workspace: Any, *, attended: bool
) -> UntrustedActions:
    """The policy a segment applies: refuse when the run or its workspace says so; else what
    the run asked; else approve when a person can decide (``attended``), refuse when not."""
    policy = getattr(workspace, "containment", None)
    said = None if policy is None else policy.untrusted_actions
    if UntrustedActions.REFUSE in (asked, said):
        return UntrustedActions.REFUSE
    if asked is UntrustedActions.APPROVE:
        return asked
    return UntrustedActions.APPROVE if attended else UntrustedActions.REFUSE


def overrides_of(workspace: Any) -> Mapping[str, Integrity] | None:
    """The workspace's integrity labels by tool name, if it sets any."""
    policy = getattr(workspace, "containment", None)
    return None if policy is None or not policy.integrity else policy.integrity


def quarantine_by(workspace: Any) -> tuple[frozenset[str], bool]:
    """The tools the workspace quarantines by name, and whether it endorses string answers."""
    policy = getattr(workspace, "containment", None)
    if policy is None:
        return frozenset(), False
    return policy.quarantine, policy.endorse_strings
