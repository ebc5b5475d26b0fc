"""Read-only resources of ``toolwire mcp``: this server's runs, and the workspace's documents.

- ``toolwire://runs/{run_id}``: one run this server recorded (a host's call: acting for the
  server's user, on its workspace, in its trust zone), as the store keeps it, at the server's
  ``--privacy`` level or the run's, whichever keeps less, and without artifacts, which never
  reach a host. Any other run, of another server, user or workspace, is not found, the same
  answer as for a run that does not exist. ``resources/list`` names the latest ``RUNS_LISTED``.
- ``toolwire://documents/{path}``: one document of the workspace's documents folder, read by a
  call of ``fetch_document`` through the gate and the seam, so only while the gate offers that
  tool to this server, masked as its trust zone reads personal data, bounded, and recorded as a
  run like any call. Documents are not listed: ``search_documents`` finds them.
- An unknown URI, or one of a resource the server does not have, is the JSON-RPC error
  ``-32602`` (invalid params) naming it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import unquote

import mcp_types as types
from mcp.shared.exceptions import MCPError

from toolwire.core.trust import TrustZone
from toolwire.loop.run import DIRECT_CALL
from toolwire.policy.charter import Charter, workspace_ref
from toolwire.policy.privacy import PrivacyLevel, filter_step, filter_text
from toolwire.store.records import StoredRun
from toolwire.store.rows import is_run_id
from toolwire.tools.api import ToolContext
from toolwire.workspace.prompts import shown

SCHEME = "toolwire://"
RUNS = f"{SCHEME}runs/"
DOCUMENTS = f"{SCHEME}documents/"
RUN_TEMPLATE = RUNS + "{run_id}"
DOCUMENT_TEMPLATE = DOCUMENTS + "{path}"
DOCUMENT_TOOL = "fetch_document"
RUNS_LISTED = 20
RUNS_LOOKED_AT = 200  # of the newest runs, for this server's latest
URI_SHOWN_CHARS = 120  # of a host's URI, in an error: a run's or a document's whole
JSON = "application/json"
TEXT = "text/plain"


class Runs(Protocol):
    """Where runs are kept (the run store)."""

    def list_runs(self, *, limit: int = 50, offset: int = 0, waiting: bool = False) -> Any: ...
    def get_run(self, run_id: str) -> StoredRun | None: ...
    def charter_of(self, run_id: str) -> Charter | None: ...


def not_found(uri: str) -> MCPError:
    return MCPError(
        types.INVALID_PARAMS,
        f"Resource not found: {shown(uri, URI_SHOWN_CHARS)}; resources/list and "
        "resources/templates/list name the resources this server has",
    )


@dataclass(kw_only=True)
class Resources:
    """What one server's host may read: ``runs`` (None without a store), whose it is, and how
    a document is read (``fetch``: a call of ``fetch_document``, its content and error flag)."""

    runs: Runs | None
    context: ToolContext
    zone: TrustZone
    privacy: PrivacyLevel
    known: Callable[[str], bool]  # whether a tool name is one the registry has

    def templates(self, documents: bool) -> types.ListResourceTemplatesResult:
        found = []
        if self.runs is not None:
            found.append(types.ResourceTemplate(
                name="run", uri_template=RUN_TEMPLATE, mime_type=JSON,
                description="A run this server recorded, at its privacy level, no artifacts",
            ))  # fmt: skip
        if documents:
            found.append(types.ResourceTemplate(
                name="document", uri_template=DOCUMENT_TEMPLATE, mime_type=TEXT,
                description="A document of the workspace, as fetch_document reads it",
            ))  # fmt: skip
        return types.ListResourceTemplatesResult(resource_templates=found)

    async def listed(self) -> types.ListResourcesResult:
        if self.runs is None:
            return types.ListResourcesResult(resources=[])
        ids = await asyncio.to_thread(self._latest)
        return types.ListResourcesResult(resources=[
            types.Resource(uri=RUNS + i, name=f"run {i}", mime_type=JSON) for i in ids
        ])  # fmt: skip

    async def run(self, uri: str) -> types.ReadResourceResult:
        run_id = uri.removeprefix(RUNS)
        record = await asyncio.to_thread(self._record, run_id)
        if record is None:
            raise not_found(uri)
        text = json.dumps(record, ensure_ascii=False, default=str)
        contents = types.TextResourceContents(uri=uri, mime_type=JSON, text=text)
        return types.ReadResourceResult(contents=[contents])

    def run_ids(self, typed: str) -> list[str]:
        """This server's latest run ids that begin with ``typed`` (completion of ``run_id``)."""
        return [i for i in self._latest() if i.startswith(typed)]

    def _latest(self) -> list[str]:
        assert self.runs is not None
        newest = self.runs.list_runs(limit=RUNS_LOOKED_AT)
        direct = [r.id for r in newest if r.provider == DIRECT_CALL]
        return [i for i in direct if self._ours(i)][:RUNS_LISTED]

    def _ours(self, run_id: str) -> bool:
        assert self.runs is not None
        try:
            charter = self.runs.charter_of(run_id)
        except Exception:  # a charter that cannot be trusted is no run of this server
            return False
        if charter is None or charter.provider.name != DIRECT_CALL:
            return False
        workspace = self.context.workspace
        mine = None if workspace is None else workspace_ref(workspace)
        theirs = charter.workspace
        same_workspace = (mine is None and theirs is None) or (
            mine is not None and theirs is not None
            and (mine.file, mine.identity) == (theirs.file, theirs.identity)
        )  # fmt: skip
        same_actor = charter.user == self.context.user and charter.trust_zone is self.zone
        return same_actor and same_workspace

    def _record(self, run_id: str) -> dict[str, Any] | None:
        if self.runs is None or not is_run_id(run_id) or not self._ours(run_id):
            return None
        run = self.runs.get_run(run_id)
        return None if run is None else shown_run(run, self.privacy, self.known)


def shown_run(
    run: StoredRun, privacy: PrivacyLevel, known: Callable[[str], bool]
) -> dict[str, Any]:
    """``run`` as a host may read it: at ``privacy`` or the run's level, whichever keeps less
    (a tool name ``known`` to the registry is metadata, as the store has it), and no step's
    artifacts (their count stays)."""
    try:
        level = min(PrivacyLevel.parse(run.privacy_level), privacy)
    except Exception:
        level = PrivacyLevel.NONE
    record = run.to_dict()
    record["final_answer"] = filter_text(run.final_answer, level)
    steps = []
    for step in run.steps:
        artifacts = step.get("tool_artifacts")
        kept = {k: v for k, v in step.items() if k != "tool_artifacts"}
        if level < PrivacyLevel.parse(run.privacy_level):
            name = kept.get("tool_name")
            names = frozenset([name]) if isinstance(name, str) and known(name) else frozenset()
            kept = filter_step(kept, level, registered=names)
        if isinstance(artifacts, list):
            kept["tool_artifacts_count"] = len(artifacts)
        steps.append(kept)
    record["steps"] = steps
    record["privacy_level"] = level.value
    return record


def document_path(uri: str) -> str:
    return unquote(uri.removeprefix(DOCUMENTS))


def document_contents(uri: str, text: str) -> types.ReadResourceResult:
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=TEXT, text=text)]
    )
