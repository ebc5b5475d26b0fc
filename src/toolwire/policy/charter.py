"""A run's charter: who it acts for, on which workspace, under which policy. Fixed once, at
submission, and the only source every segment of the run uses, in any process.

A run is entered from many places (``toolwire run``, the inspector, a queue worker, an MCP
host) and carried on from more (an approval in the inspector, ``toolwire runs approve``,
``Runtime.resume``, a held call's decider, a re-run). None of them decides the run's identity:
the charter does. It holds the acting user, a reference to the workspace (the file it is loaded
from and a digest of what it points at and whom it shows personal data to), the privacy level
its steps are kept and exported at,
its trust zone, its provider (name, model, address, preset: never a key), its options (grant,
allowed tools, budgets) and the MCP servers in scope.

A process lends *capabilities* only (keys, connections, the state key), and a person deciding
is an *operator*, recorded on the decision step; an operator never becomes the acting user.

Invariants:
- A charter is made by :func:`submit` from the request and is never changed afterwards; it is
  sealed into every suspended state, queued request and checkpoint, and kept in the run's row.
- :func:`context` builds a segment's tool context from the charter alone: the workspace is
  loaded from the charter's file and must still point where it pointed at submission, and
  still show personal data to the same trust zones (``personal_data_shown_to``); a workspace
  the process lends must be that same workspace. Anything else is :class:`CharterRefused`,
  raised before the run changes.
- A charter of version 1 (sealed before the identity covered the personal-data policy) is
  read and carried on as it was: its workspace must still point where it pointed, by the
  digest it recorded, and its policy is the one its workspace names now, as a run sealed
  before charters takes its workspace as it is loaded now (:func:`legacy`). Sealed again, it
  stays version 1, so a reader never mistakes its digest for one that covers the policy. This
  never widens what the run shows: the release that sealed version 1 had no such policy and
  showed personal data to every zone, so any policy named now shows it to those zones or fewer.
- :func:`check_operator`: an operator who is not an admin decides only runs acting for them.
- ``repr`` shows names and levels, never a path or a digest of one.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from toolwire.core.errors import ConfigError, DecisionError
from toolwire.core.jsonenc import dumps
from toolwire.core.reprs import count, ident, tagged
from toolwire.core.trust import PERSONAL_DATA_ZONES, TrustZone
from toolwire.policy.options import RunOptions
from toolwire.policy.pricing import model_of
from toolwire.policy.privacy import PrivacyLevel
from toolwire.providers.base import Provider
from toolwire.tools.api import ToolContext, User, is_remote

CHARTER_VERSION = 2  # 2: the workspace's identity covers its personal-data policy
LOCATION_ONLY = 1  # the charter version whose workspace identity digests its locations only
_IDENTITY_CHARS = 32


class CharterRefused(DecisionError):
    """This process cannot run the run under its charter; nothing changed. Safe to show."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderRef:
    """How to reach a run's provider again, in another process. Never a key."""

    name: str
    model: str | None = None
    base_url: str | None = None
    trust_zone: str | None = None
    script: str | None = None
    max_tokens_field: str | None = None  # OpenAI-compatible servers differ on the name
    # The providers of a fallback chain after this one, in order (each with its own zone).
    fallback: tuple[ProviderRef, ...] = ()

    @classmethod
    def of(cls, provider: Provider, model: str | None, options: RunOptions) -> ProviderRef:
        """The reference of ``provider``; of a fallback chain, its first provider's with the
        others as ``fallback``, and the run's zone (:func:`run_zone`) as its zone."""
        members = chain_members(provider)
        first = members[0] if members else provider
        rest = tuple(cls.of(m, None, RunOptions()) for m in members[1:])
        return cls(
            name=provider.name,
            model=model or model_of(first),
            base_url=getattr(first, "base_url", None),
            trust_zone=run_zone(options.trust_zone, provider),
            script=getattr(first, "script_path", None),
            max_tokens_field=getattr(first, "max_tokens_field", None),
            fallback=rest,
        )

    @property
    def served_name(self) -> str:
        """The name a provider factory serves it under: a run replayed from a script file is
        labelled with the script's own name, and is served (resumed, re-run) as ``scripted``."""
        return "scripted" if self.script else self.name

    @property
    def zones(self) -> tuple[str | None, ...]:
        """The trust zones of every provider the run may reach: this one's and its fallback's."""
        return (self.trust_zone, *(ref.trust_zone for ref in self.fallback))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out.pop("fallback")
        if self.fallback:  # a run without a chain keeps the form it always had
            out["fallback"] = [ref.to_dict() for ref in self.fallback]
        return out


def chain_members(provider: object) -> tuple[Provider, ...]:
    """The providers of a fallback chain (:mod:`toolwire.providers.fallback`), else none."""
    members = getattr(provider, "members", None)
    return members if isinstance(members, tuple) else ()


def run_zone(given: TrustZone | str | None, provider: Provider) -> TrustZone:
    """A run's trust zone: the one its options name, else its provider's; with a fallback
    chain, never more trusted than any provider in it (a named zone may only narrow it), so
    the gate offers only what every provider it may reach may see."""
    zone = TrustZone.parse(given or provider.trust_zone)
    members = chain_members(provider)
    if not members:
        return zone
    return TrustZone.least_trusted([zone, *(m.trust_zone for m in members)])


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkspaceRef:
    """A run's workspace: the file it is loaded from (None: built in code, lent by the process
    that runs it) and a digest of what it points at (database, roots, logs, documents) and of
    whom it shows personal data to; ``version``: the charter version that digest is of."""

    file: str | None
    identity: str
    version: int = CHARTER_VERSION


@dataclass(frozen=True, slots=True, kw_only=True)
class Charter:
    """Who a run acts for, where, and under which policy. Made by :func:`submit`."""

    user: User | None
    workspace: WorkspaceRef | None
    privacy: PrivacyLevel
    trust_zone: TrustZone
    provider: ProviderRef
    options: RunOptions
    # The MCP servers whose tools the run may be offered; None: not recorded (a run sealed
    # before charters, a queued run, a bare loop's), so the resuming registry's decide.
    mcp_servers: tuple[str, ...] | None = None

    def __repr__(self) -> str:
        return tagged(
            "Charter",
            user=None if self.user is None else ident(self.user.name),
            admin=self.user is not None and self.user.is_admin,
            workspace=self.workspace is not None,
            privacy=self.privacy.value,
            trust_zone=self.trust_zone.value,
            provider=ident(self.provider.name),
            mcp_servers=None if self.mcp_servers is None else count(self.mcp_servers),
        )

    @property
    def workspace_file(self) -> str | None:
        return None if self.workspace is None else self.workspace.file

    def to_dict(self) -> dict[str, Any]:
        """Plain data: sealed into a run's state, and kept in its row."""
        workspace = self.workspace
        return {
            "version": CHARTER_VERSION if workspace is None else workspace.version,
            "user": None if self.user is None else [self.user.name, self.user.is_admin],
            "workspace": None if workspace is None else [workspace.file, workspace.identity],
            "privacy": self.privacy.value,
            "trust_zone": self.trust_zone.value,
            "provider": self.provider.to_dict(),
            "options": self.options.to_dict(),
            "mcp_servers": None if self.mcp_servers is None else list(self.mcp_servers),
        }

    def to_json(self) -> str:
        return dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> Charter:
        """The charter ``to_dict`` wrote; ``ValueError`` for anything else."""
        try:  # read as JSON, where arrays are the tuples the model names
            return _Charter.model_validate_json(dumps(data)).build()
        except (ValidationError, ConfigError, TypeError) as exc:
            raise ValueError("not a run charter") from exc


def submit(
    *,
    provider: ProviderRef,
    options: RunOptions,
    privacy: PrivacyLevel,
    user: User | None,
    workspace: Any,
    servers: Iterable[str] | None = None,
) -> Charter:
    """The charter of a run submitted now: its options' trust zone, else its provider's;
    ``servers``: the MCP servers whose tools the submitting process could offer it."""
    zone = TrustZone.parse(options.trust_zone or provider.trust_zone)
    if provider.fallback:  # a chain's zone: never more trusted than any of its providers
        zone = TrustZone.least_trusted([zone, *provider.zones])
    return Charter(
        user=user,
        workspace=None if workspace is None else workspace_ref(workspace),
        privacy=privacy,
        trust_zone=zone,
        provider=provider,
        options=options,
        mcp_servers=None if servers is None else tuple(sorted(set(servers))),
    )


def servers_of(tools: Iterable[Any]) -> tuple[str, ...]:
    """The MCP servers of ``tools`` (the remote ones)."""
    return tuple(sorted({t.server for t in tools if is_remote(t)}))


def in_scope(charter: Charter, names: frozenset[str], registry: Any) -> frozenset[str]:
    """``names`` without the remote tools of MCP servers outside the charter's scope: a
    process carrying the run on may hold more servers than the one that submitted it."""
    scope = charter.mcp_servers
    if scope is None:
        return names
    kept = set()
    for name in names:
        tool = registry.get(name)
        if tool is None or not is_remote(tool) or getattr(tool, "server", None) in scope:
            kept.add(name)
    return frozenset(kept)


def workspace_ref(workspace: Any) -> WorkspaceRef:
    source = getattr(workspace, "source", None)
    return WorkspaceRef(file=None if source is None else str(source), identity=identity(workspace))


def identity(workspace: Any, version: int = CHARTER_VERSION) -> str:
    """A digest of where ``workspace`` points: its database, file roots, logs, documents,
    base URLs and MCP servers (not its data directory: that is the process's own), the
    trust zones it shows personal data to and its containment policy, when it sets one; at
    ``LOCATION_ONLY``, as version 1 charters digested it, without them."""
    roots = getattr(workspace, "roots", None)
    located: dict[str, Any] = {
        "database": getattr(workspace, "database_url", None),
        "roots": {k: str(v) for k, v in (roots() if callable(roots) else {}).items()},
        "logs": [str(p) for p in getattr(workspace, "log_files", ())],
        "documents": str(getattr(workspace, "documents", None) or ""),
        "base_urls": list(getattr(workspace, "base_urls", ())),
        "mcp": sorted(s.name for s in getattr(workspace, "mcp_servers", ()) or ()),
    }
    if version > LOCATION_ONLY:  # the default is the one disclosure applies
        shown = getattr(workspace, "personal_data_shown_to", PERSONAL_DATA_ZONES)
        located["personal_data_shown_to"] = sorted(TrustZone.parse(z).value for z in shown)
        policy = getattr(workspace, "containment", None)
        if policy is not None and not policy.is_default:  # absent: the digest kept before it
            located["containment"] = policy.to_dict()
    return hashlib.sha256(dumps(located).encode()).hexdigest()[:_IDENTITY_CHARS]


def context(charter: Charter, *, run_id: str | None = None, lent: Any = None) -> ToolContext:
    """The tool context of a segment of the run: its user, its own workspace and its zone.

    ``lent`` is a workspace this process holds (with its connections); it is used only when it
    is the charter's workspace. ``CharterRefused`` when the workspace cannot be had here."""
    workspace = _workspace(charter, lent)
    return ToolContext(
        user=charter.user, run_id=run_id, workspace=workspace, trust_zone=charter.trust_zone
    )


def _workspace(charter: Charter, lent: Any) -> Any:
    wanted = charter.workspace
    if wanted is None:
        return None
    if lent is not None and identity(lent, wanted.version) == wanted.identity:
        return lent
    if wanted.file is None:
        raise CharterRefused(
            "the run's workspace was built in code by the process that submitted it, and "
            "this process does not hold it"
        )
    from toolwire.workspace.config import load_workspace

    try:
        loaded = load_workspace(wanted.file)
    except ConfigError as exc:
        raise CharterRefused(f"the run's workspace cannot be loaded here: {exc}") from None
    if identity(loaded, wanted.version) != wanted.identity:
        raise CharterRefused(
            "the run's workspace file now points somewhere else, or shows personal data to "
            "other trust zones, than when the run was submitted; the run is not carried on"
        )
    return loaded


def check_operator(charter: Charter, operator: User) -> None:
    """An admin decides any run; anyone else only a run that acts for them."""
    if operator.is_admin:
        return
    if charter.user is not None and charter.user.name == operator.name:
        return
    raise CharterRefused("this operator may not decide for this run (it acts for someone else)")


def check_provider(charter: Charter, provider: Provider) -> None:
    """A provider this process lends must be the one the charter names (its key is the
    process's own; its adapter, model and address are the run's)."""
    wanted, lent = charter.provider, ProviderRef.of(provider, None, charter.options)
    same = lent.name == wanted.name or (wanted.script is not None and lent.script is not None)
    if wanted.model is not None and lent.model is not None and lent.model != wanted.model:
        same = False
    if wanted.base_url is not None and lent.base_url != wanted.base_url:
        same = False
    if not same:
        raise CharterRefused(
            "the provider offered here is not the run's own (another adapter, model or address)"
        )


def check_context(charter: Charter, given: ToolContext) -> Any:
    """The workspace a caller's ``given`` context lends; ``CharterRefused`` when it names
    another user than the run's: a segment never acts for anyone but its run's user."""
    if given.user is not None and given.user != charter.user:
        raise CharterRefused("the run acts for its own user; a segment cannot act for another")
    return given.workspace


# -- reading a charter back: every field checked ------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Provider(_Strict):
    name: str
    model: str | None = None
    base_url: str | None = None
    trust_zone: str | None = None
    script: str | None = None
    max_tokens_field: str | None = None
    fallback: list[_Provider] = []

    def build(self) -> ProviderRef:
        return ProviderRef(name=self.name, model=self.model, base_url=self.base_url,
                           trust_zone=self.trust_zone, script=self.script,
                           max_tokens_field=self.max_tokens_field,
                           fallback=tuple(ref.build() for ref in self.fallback))  # fmt: skip


class _Charter(_Strict):
    version: int
    user: tuple[str, bool] | None
    workspace: tuple[str | None, str] | None
    privacy: str
    trust_zone: str
    provider: _Provider
    options: dict[str, Any]
    mcp_servers: list[str] | None = None

    def build(self) -> Charter:
        if self.version not in (LOCATION_ONLY, CHARTER_VERSION):
            raise ValueError("a charter of another version")
        place = self.workspace
        ref = None
        if place is not None:
            ref = WorkspaceRef(file=place[0], identity=place[1], version=self.version)
        return Charter(
            user=None if self.user is None else User(*self.user),
            workspace=ref,
            privacy=PrivacyLevel.parse(self.privacy),
            trust_zone=TrustZone.parse(self.trust_zone),
            provider=self.provider.build(),
            options=RunOptions.from_dict(self.options),
            mcp_servers=None if self.mcp_servers is None else tuple(self.mcp_servers),
        )


def legacy(
    *,
    user: User | None,
    workspace_file: str | None,
    options: RunOptions,
    provider: ProviderRef,
    privacy: PrivacyLevel,
) -> Charter:
    """The charter of a run sealed before charters existed: its user and workspace file from
    its sealed state, its level and provider from its row. Its workspace is taken as it is
    loaded now (no identity was recorded)."""
    zone = TrustZone.parse(options.trust_zone or provider.trust_zone)
    place = None
    if workspace_file is not None:
        place = WorkspaceRef(file=workspace_file, identity=_loaded_identity(workspace_file))
    return Charter(user=user, workspace=place, privacy=privacy, trust_zone=zone,
                   provider=provider, options=options)  # fmt: skip


def _loaded_identity(path: str) -> str:
    from toolwire.workspace.config import load_workspace

    try:
        return identity(load_workspace(path))
    except ConfigError:
        return ""  # refused when a segment needs it: context() loads it again and says why
