"""What a tool's result may show the run's model: personal data by trust zone.

Secret shapes are masked by the tools themselves, for every zone (:mod:`toolwire.core.redact`).
Personal data (:mod:`toolwire.core.personal`) is shown to a run whose trust zone the
workspace's policy lists (``Workspace.personal_data_shown_to``; by default ``local`` and
``private_hosted``) and masked for any other. The seam applies :func:`disclosed` to every
result before it is bounded, so the content the model reads and the artifacts the trace, the
live inspector and the store receive follow the same rule for the same zone.

Invariants:
- A context with no zone is the least trusted zone; a context with no workspace uses the
  default policy. Masking personal data a zone may see is a defect as much as showing it to
  one that may not: a shown zone's result is returned as it is, untouched.
- Whatever a tool matches a model's words against is :func:`visible` text for the run's zone,
  so neither a hit nor a count confirms what the zone sees masked. (A worker process that
  cannot import this package masks e-mail addresses only, by :func:`masks_for`.)
- Only strings are masked (artifact values at any depth, and mapping keys); an image's pixels
  are not text and are left to the image rules of the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire.core.personal import mask_personal, worker_spec
from toolwire.core.redact import catalogue_spec, mask_secrets
from toolwire.core.result import Artifact, ArtifactType, ToolResult
from toolwire.core.trust import PERSONAL_DATA_ZONES, TrustZone
from toolwire.tools.api import ToolContext

MAX_DEPTH = 64  # the artifact bounder's depth; deeper data is cut there anyway


def personal_data_shown(context: ToolContext) -> bool:
    """Whether the run's model may read personal data: its zone is one the policy lists."""
    zone = TrustZone.parse(context.trust_zone)  # None: the least trusted zone
    shown = getattr(context.workspace, "personal_data_shown_to", PERSONAL_DATA_ZONES)
    return zone in shown


def visible(text: str, context: ToolContext) -> str:
    """``text`` as the run's model may read it: secrets masked, personal data by its zone. What
    a tool matches a model's words against, so that a match cannot confirm what it masks."""
    masked = mask_secrets(text)
    return masked if personal_data_shown(context) else mask_personal(masked)


def masks_for(context: ToolContext) -> list[tuple[str, int, str, list[str]]]:
    """The catalogue a worker process masks lines with before matching them, for this zone:
    the secret shapes, and the e-mail shape where personal data is masked."""
    spec = catalogue_spec()
    return spec if personal_data_shown(context) else spec + worker_spec()


def disclosed(result: ToolResult, context: ToolContext) -> ToolResult:
    """``result`` as the run's zone may read it: personal data masked unless it is shown."""
    if personal_data_shown(context):
        return result
    content = mask_personal(result.content)
    if result.is_error:
        return ToolResult.error(content)
    return ToolResult.text(content, *(_artifact(a) for a in result.artifacts))


def _artifact(artifact: Artifact) -> Artifact:
    if artifact.type == ArtifactType.IMAGE:
        return artifact
    return Artifact(artifact.type, mask_personal(artifact.label), _masked(artifact.data, 0))


def _masked(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return mask_personal(value)
    if depth > MAX_DEPTH:
        return value
    if isinstance(value, Mapping):
        return {_masked(k, depth + 1): _masked(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(item, depth + 1) for item in value]
    return value
