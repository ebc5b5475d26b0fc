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
- Whatever a tool matches a model's words against is text as the run's zone reads it
  (:func:`visible`, :func:`personal_view`), so neither a hit nor a count confirms what the zone
  sees masked. A worker process that cannot import this package loads
  :mod:`toolwire.core.personal` by its path (:func:`worker_masks`), so it masks by the same
  shapes and checks.
- A filter value or search phrase that is itself personal data, in a zone that sees personal
  data masked, could never match: it is refused (:func:`check_matchable`, the one text a model
  reads about it) rather than answered with "nothing found", which the model would take as a
  fact about the data.
- Only strings are masked (artifact values at any depth, and mapping keys); an image's pixels
  are not text and are left to the image rules of the store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolwire.core import personal
from toolwire.core.errors import ToolRefusal
from toolwire.core.personal import mask_personal
from toolwire.core.redact import catalogue_spec, mask_secrets
from toolwire.core.result import Artifact, ArtifactType, ToolResult
from toolwire.core.trust import PERSONAL_DATA_ZONES, TrustZone
from toolwire.tools.api import ToolContext

MAX_DEPTH = 64  # the artifact bounder's depth; deeper data is cut there anyway
NOT_MATCHABLE = (
    "{what} is personal data (an e-mail address, phone number, IBAN or card number), which "
    "this run's trust zone reads masked, so nothing can match it; filter or search on another "
    "field, such as an id or a name."
)


def personal_data_shown(context: ToolContext) -> bool:
    """Whether the run's model may read personal data: its zone is one the policy lists."""
    last = _last
    if last[0] is context:  # every call of a run asks with the run's one context
        return last[1]
    zone = TrustZone.parse(context.trust_zone)  # None: the least trusted zone
    shown = zone in getattr(context.workspace, "personal_data_shown_to", PERSONAL_DATA_ZONES)
    _remember(context, shown)
    return shown


def _remember(context: ToolContext, shown: bool) -> None:
    """Keep the last answer, for the context asked about (one tuple: a thread that reads it
    while another writes sees the old pair or the new one, never half of each)."""
    global _last  # noqa: PLW0603 (a one-entry cache of a pure function of a frozen value)
    _last = (context, shown)


_last: tuple[ToolContext | None, bool] = (None, False)


def personal_view(context: ToolContext) -> Callable[[str], str]:
    """How the run's zone reads personal data in a text (secrets already masked): as it is
    where the policy shows it, masked everywhere else."""
    return _as_it_is if personal_data_shown(context) else mask_personal


def visible(text: str, context: ToolContext) -> str:
    """``text`` as the run's model may read it: secrets masked, personal data by its zone. What
    a tool matches a model's words against, so that a match cannot confirm what it masks."""
    return personal_view(context)(mask_secrets(text))


def check_matchable(text: str, context: ToolContext, what: str) -> None:
    """Refuse a model's filter value or phrase ``text`` that is (or holds) personal data the
    run's zone reads masked: it cannot match anything shown there. ``what`` names it for the
    model (``the filter on 'email'``); the value itself is never echoed."""
    if not personal_data_shown(context) and mask_personal(text) != text:
        raise ToolRefusal(NOT_MATCHABLE.format(what=what))


def worker_masks(context: ToolContext) -> dict[str, Any]:
    """What a worker process masks lines with before matching them, for this zone, as data:
    the secret catalogue (``masks``), and where personal data is masked the path of
    :mod:`toolwire.core.personal` (``personal``; None where it is shown), which imports the
    standard library only, so a worker that cannot import this package loads it by its path."""
    shown = personal_data_shown(context)
    return {"masks": catalogue_spec(), "personal": None if shown else personal.__file__}


def _as_it_is(text: str) -> str:
    return text


def disclosed(result: ToolResult, context: ToolContext) -> ToolResult:
    """``result`` as the run's zone may read it: personal data masked unless it is shown."""
    last = _last
    if last[1] if last[0] is context else personal_data_shown(context):  # the cache, inline
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
