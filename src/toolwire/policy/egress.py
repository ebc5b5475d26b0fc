"""The egress ledger: how many bytes of tool output each provider of a run was sent.

Tool output reaches a provider one way: the ``content`` of a tool turn (``ChatMessage.tool_result``,
built only by the seam), replayed in every later request of the run. What is counted, per
provider request:

- ``wire_bytes``: the UTF-8 bytes of the text of every tool result the request carries (after
  the context window dropped old exchanges), for each copy sent. The text is the bounded
  result as the adapter puts it in the body (JSON escapes undone: what a server reads back).
- ``new_bytes``: those of the results new to the conversation since the run's previous
  request (the tool turns after its last assistant turn), for each copy sent.

A copy is an HTTP attempt that reached the server: a retry of the same request is another
copy, a fallback chain's next provider gets its own (counted under its name), a connection
refused sends nothing. Each is counted and checked against the run's limit
(:class:`~toolwire.core.egress.EgressLimit`) before it goes out.

Each line is split by tool, data class and integrity label (``trusted``, ``untrusted``, or
``runtime`` for a call the runtime answered itself, whose text is the seam's). A tool name
the registry does not know is the model's own words: it is counted as ``(unregistered)``.
A result recorded by an earlier segment of a resumed run (in any process) is labelled by its
tool, or ``runtime`` when that segment's stored steps say the runtime answered the call
(``refused``: their call ids, as the store keeps them).

Limits (:class:`~toolwire.core.egress.Ceiling`, made by :func:`ceilings_of`): the run's own
(the lower of its ``max_egress_bytes`` and its workspace's ``max_run_bytes``) counts every
segment of the run; the workspace's (``max_workspace_bytes``) counts what every run of the
workspace sent within its ``window`` (the stored ledger of the other runs, summed by the store
before each request, and this run's own bytes, whole). What passing one does is the run's
``on_egress_limit`` or its workspace's ``on_limit``: ``stop`` (the default; the run ends
``egress_limit``, the request not sent) or ``approve`` (the run waits for a person, the request
not sent yet: see :mod:`toolwire.loop.egress_pause`); a run or workspace that says ``stop``
wins, and a run nobody can be asked in (unattended) stops. Approving lets that request go and
raises the allowance of each limit it would pass to the bytes counted so far, plus the
request, plus one more limit's worth: the next crossing asks again (a limit of 0 asks before
every request that carries tool output).

Concurrency: two runs of a workspace check its budget each against the other's stored rows,
read before each request; what another run has in flight (the request it is sending, and
the rows its recorder has not written yet) is not seen. So the workspace can pass its limit
by at most the bytes of one request (every copy of it) per other run sending at the same
time.

Cost: a request is measured from the conversation's growth since the previous one (the state
extends its tuple of messages), so a round costs the size of what it added; a conversation
that changed otherwise (the window dropped exchanges, another process) is measured whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from toolwire.core.bounding import CONTENT_BYTE_CAP, TRUNCATION_MARKER
from toolwire.core.egress import (
    APPROVE,
    RUN,
    STOP,
    WORKSPACE,
    Budget,
    Ceiling,
    Granted,
    Line,
    Outgoing,
)
from toolwire.core.messages import ChatMessage
from toolwire.core.trust import DataClass
from toolwire.policy.containment import Labels
from toolwire.policy.privacy import plain_id

__all__ = [
    "RUNTIME",
    "UNREGISTERED",
    "Ledger",
    "ceilings_of",
    "limit_of",
    "limited",
    "text_bytes",
    "workspace_key",
    "workspace_limit",
]

RUNTIME = "runtime"  # the label of a result the runtime wrote itself (a refusal)
UNREGISTERED = "(unregistered)"  # a name the model made up: its words are not metadata
_PUBLIC = DataClass.PUBLIC.name.lower()
_new = tuple.__new__
_Key = tuple[str, str, str]  # tool, data class, label
_MARKER_BYTES = len(TRUNCATION_MARKER.encode("utf-8"))
_CUT_ASCII_CHARS = CONTENT_BYTE_CAP - _MARKER_BYTES + len(TRUNCATION_MARKER)


def text_bytes(text: str) -> int:
    """The UTF-8 size of ``text``: without encoding it when it is ASCII, or ASCII cut by the
    seam's bound (whose marker is not: a large output would be encoded for one character)."""
    if text.isascii():
        return len(text)
    if len(text) == _CUT_ASCII_CHARS and text.endswith(TRUNCATION_MARKER):
        # The seam cuts at CONTENT_BYTE_CAP - marker bytes: a head of that many characters
        # has one byte each (any wider character would leave fewer), so the text is the cap.
        return CONTENT_BYTE_CAP
    return len(text.encode("utf-8", "surrogatepass"))


def limit_of(max_egress_bytes: int | None, workspace: object) -> int | None:
    """A run's limit of tool output bytes on the wire: its own (``max_egress_bytes``) or its
    workspace's, whichever is lower (None: no limit)."""
    limits = [max_egress_bytes, getattr(workspace, "max_egress_bytes", None)]
    given = [limit for limit in limits if isinstance(limit, int)]
    return min(given) if given else None


def workspace_limit(workspace: object) -> int | None:
    """The bytes every run of ``workspace`` may send within its window (None: no limit)."""
    limit = getattr(workspace, "max_workspace_bytes", None)
    return limit if isinstance(limit, int) else None


def limited(max_egress_bytes: int | None, workspace: object) -> bool:
    """Whether a run with these settings has any egress limit (else nothing is read for it)."""
    return (
        limit_of(max_egress_bytes, workspace) is not None or workspace_limit(workspace) is not None
    )


def asks_first(asked: str | None, workspace: object, *, attended: bool) -> bool:
    """Whether passing a limit asks a person: someone said ``approve``, nobody ``stop``, and
    a person can be asked."""
    said = getattr(workspace, "egress_on_limit", None)
    return attended and STOP not in (asked, said) and APPROVE in (asked, said)


def ceilings_of(
    max_egress_bytes: int | None,
    asked: str | None,
    workspace: object,
    granted: Granted,
    *,
    attended: bool,
) -> tuple[Ceiling, ...]:
    """The run's limits: its own and its workspace's, each with what was approved above it."""
    asks = asks_first(asked, workspace, attended=attended)
    found = [(RUN, limit_of(max_egress_bytes, workspace)), (WORKSPACE, workspace_limit(workspace))]
    return tuple(Ceiling(scope, limit, granted.of(scope), asks) for scope, limit in found
                 if limit is not None)  # fmt: skip


def workspace_key(path: str | Path) -> str:
    """What names a workspace in the store: a digest of its file's absolute path, so that
    every run of one workspace is summed together and the row says nothing of where it is."""
    absolute = str(Path(path).expanduser().resolve())
    return hashlib.sha256(absolute.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class Ledger:
    """One segment's measure of what its requests carry, and the run's budget of bytes."""

    __slots__ = (
        "_earlier", "_keys", "_known", "_labels", "_names", "_refused", "_seen", "_totals",
        "budget", "window",
    )  # fmt: skip

    def __init__(
        self,
        labels: Labels,
        knows: Callable[[str], bool],
        *,
        limit: int | None = None,
        spent: int = 0,
        ceilings: tuple[Ceiling, ...] = (),
        refused: frozenset[str] = frozenset(),
    ) -> None:
        self._labels, self._known = labels, knows
        self.budget = Budget(limit, spent, ceilings=ceilings)
        # What the workspace's other runs sent within its window, asked before each request
        # (None: the run has no workspace limit, or no store to ask).
        self.window: Callable[[], Awaitable[int]] | None = None
        self._refused: set[str] = set()  # call ids the runtime answered itself
        self._earlier = refused  # those of earlier segments, as stored (see plain_id)
        self._seen: tuple[ChatMessage, ...] = ()
        self._totals: dict[_Key, int] = {}
        self._names: dict[str, str] = {}  # call id -> its tool's name, from assistant turns
        self._keys: dict[str, _Key] = {}  # tool name -> its key, for a call that ran

    def refused(self, call_id: str) -> None:
        """The runtime answered call ``call_id`` (its text is the seam's)."""
        self._refused.add(call_id)

    @property
    def refused_calls(self) -> frozenset[str]:
        """Every call id known to be the runtime's answer: this segment's, and earlier ones'."""
        return self._earlier | self._refused

    def outgoing(self, messages: Sequence[ChatMessage], provider: str) -> Outgoing:
        """The request carrying ``messages``, for ``provider``; refused (``EgressLimit``)
        when even one copy would pass a limit of the run."""
        seen = self._seen
        if len(messages) >= len(seen) and (not seen or messages[len(seen) - 1] is seen[-1]):
            added = messages[len(seen) :]
        else:  # the window dropped exchanges, or this is the segment's first request
            self._totals, added = {}, messages
        self._seen = tuple(messages)
        new = self._add(added)
        totals = self._totals
        # Lines built as tuples in field order: a fraction of the keyword call's cost, per round
        lines = tuple([_new(Line, (*key, new.get(key, 0), size)) for key, size in totals.items()])
        size = sum(totals.values())
        self.budget.check(size)
        return Outgoing(lines, size, self.budget, provider)

    def _add(self, added: Sequence[ChatMessage]) -> dict[_Key, int]:
        """Count ``added`` into the conversation's totals; the results after its last
        assistant turn (new to the conversation), by key."""
        totals, names = self._totals, self._names
        new: dict[_Key, int] = {}
        for message in added:
            role = message.role
            if role == "assistant":
                new = {}
                for call in message.tool_calls:
                    names[call.id] = call.name
            elif role == "tool":
                key = self._key(message.tool_call_id or "", names)
                size = text_bytes(message.content)
                totals[key] = totals.get(key, 0) + size
                new[key] = new.get(key, 0) + size
        return new

    def _key(self, call_id: str, names: dict[str, str]) -> _Key:
        name = names.get(call_id, "")
        earlier = self._earlier
        if call_id in self._refused or (
            earlier and (call_id in earlier or plain_id(call_id) in earlier)
        ):
            return self._labelled(name, refused=True)
        known = self._keys.get(name)
        if known is None:
            known = self._keys[name] = self._labelled(name, refused=False)
        return known

    def _labelled(self, name: str, *, refused: bool) -> _Key:
        if not self._known(name):
            return (UNREGISTERED, _PUBLIC, RUNTIME)
        labels = self._labels
        integrity = labels.labelled.get(name)
        if integrity is None or refused:
            return (name, _PUBLIC, RUNTIME)
        return (name, labels.classes[name].name.lower(), integrity.value)
