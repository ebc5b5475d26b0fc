"""OpenTelemetry traces and metrics of runs, configured by the standard ``OTEL_*`` variables.

This module is light: it reads the environment and decides; the SDK is imported only when
telemetry is on (``toolwire.telemetry.otel``, the ``toolwire[otel]`` extra).

When it is on. ``OTEL_SDK_DISABLED=true`` turns everything off. Otherwise a signal (traces or
metrics) is on when ``OTEL_{TRACES,METRICS}_EXPORTER`` names an exporter (``otlp``, or
``console`` to print them on stderr), or, when that variable is unset, when an OTLP endpoint is
set for it: traces with ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
metrics only with ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``. The shared endpoint alone does not
turn metrics on: trace backends (Phoenix, MLflow) refuse them, and a run would then report a
failed export every time. An endpoint that refuses a signal all the same earns one warning per
signal, naming how to turn it off, instead of the exporter's error on every export. OTLP goes
over HTTP (protobuf); a gRPC protocol is refused with a warning. Without any of this (or without
the extra, which then earns one warning) the runtime attaches nothing: a run costs what it cost
before. Everything else (headers, timeout, sampler, batch sizes, resource, service name) is the
SDK's own reading of its ``OTEL_*`` variables.

What a span may carry is :mod:`toolwire.policy.privacy`'s decision, at the store's level, lowered to
``metadata`` unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` opts in (``true``,
``SPAN_ONLY`` or ``SPAN_AND_EVENT``): content leaves the process only when both the store's
level and the operator say it may. Artifacts never leave, at any level.

Layer: above ``loop``, below ``runs`` (the runtime attaches it). May import ``core`` up to
``loop``.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from toolwire.core.messages import ToolSpec
    from toolwire.loop.run import RunOutcome
    from toolwire.policy.charter import ProviderRef
    from toolwire.policy.options import RunOptions
    from toolwire.policy.privacy import PrivacyLevel
    from toolwire.policy.trace import RunStep

__all__ = ["Carried", "RunTelemetry", "Segment", "SegmentWatch", "ToolSpecs", "content_opt_in",
           "from_environment", "signals", "span_of", "watch_segment"]  # fmt: skip

log = logging.getLogger("toolwire.telemetry")
Signal = Literal["traces", "metrics"]
Segment = Literal["run", "resume", "call"]  # a new run, a resumed one, a direct tool call
ToolSpecs = Callable[[Iterable[str]], "list[ToolSpec]"]  # the specs of the named tools
EXPORTERS = frozenset({"otlp", "console"})
HTTP_PROTOCOLS = frozenset({"http/protobuf"})
CONTENT_OPT_IN = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_OPTED_IN = frozenset({"true", "span_only", "span_and_event"})
_warned: set[str] = set()


class SegmentWatch(Protocol):
    """One segment of one run, watched: each recorded step, then how the segment ended."""

    def step(self, step: RunStep) -> None:
        """Called for every recorded step, in order; never raises."""
        ...

    def end(self, outcome: RunOutcome | None, failure: BaseException | None) -> None:
        """The segment ended (``outcome`` None: its caller was cancelled); never raises."""
        ...


class RunTelemetry(Protocol):
    """What the runtime asks of telemetry: a watch per segment."""

    def watch(
        self,
        run_id: str,
        provider: ProviderRef,
        options: RunOptions,
        segment: Segment,
        *,
        privacy: PrivacyLevel | None = None,
        before: Carried | None = None,
        tools: ToolSpecs | None = None,
    ) -> SegmentWatch:
        """``privacy``: the run's own level (its charter's); None: ``metadata``. ``before``:
        what the run had spent when this segment began (a resumed one), so that a segment that
        ends without a result still reports the whole run's totals. ``tools``: the specs of
        tools by name, for the definitions a request offered."""
        ...


@functools.cache
def _takes_tools(kind: type) -> bool:
    """Whether ``kind.watch`` takes ``tools``: asked once per telemetry class, not per run."""
    try:
        return "tools" in inspect.signature(getattr(kind, "watch")).parameters  # noqa: B009
    except (AttributeError, TypeError, ValueError):
        return False


def watch_segment(
    telemetry: RunTelemetry,
    run_id: str,
    provider: ProviderRef,
    options: RunOptions,
    segment: Segment,
    *,
    privacy: PrivacyLevel | None,
    before: Carried | None,
    tools: ToolSpecs,
) -> SegmentWatch:
    """``telemetry.watch`` of a segment; a telemetry written before ``watch`` took ``tools``
    is asked without them (its spans then have no tool definitions)."""
    if not _takes_tools(type(telemetry)):
        return telemetry.watch(run_id, provider, options, segment, privacy=privacy,
                               before=before)  # fmt: skip
    return telemetry.watch(run_id, provider, options, segment, privacy=privacy, before=before,
                           tools=tools)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Carried:
    """A run's totals when a segment of it begins: rounds, tokens in and out, dollars (of
    the priced calls; ``cost_complete`` False when a call had no price); and ``previous``,
    the span of the segment before (see :func:`span_of`), which this one links to."""

    rounds: int
    input_tokens: int
    output_tokens: int
    cost: float
    cost_complete: bool = True
    previous: str | None = None


def span_of(watch: SegmentWatch | None) -> str | None:
    """The span of ``watch``'s segment as ``{trace id}-{span id}`` (hex), kept with a paused
    run so that the segment carrying it on links to it; None when nothing traces it."""
    found = getattr(watch, "span", None)
    return found if isinstance(found, str) else None


def signals(environ: Mapping[str, str] = os.environ) -> dict[Signal, str]:
    """The signals the environment turns on, each with its exporter (``otlp`` or ``console``)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return {}
    found: dict[Signal, str] = {}
    for signal in ("traces", "metrics"):
        exporter = _exporter(signal, environ)
        if exporter is not None:
            found[signal] = exporter
    return found


def content_opt_in(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the operator lets content (at the store's level) into spans."""
    return environ.get(CONTENT_OPT_IN, "").strip().lower() in _OPTED_IN


def from_environment(
    ceiling: object = None, environ: Mapping[str, str] = os.environ
) -> RunTelemetry | None:
    """The process's telemetry as the environment configures it, or None (nothing to do).

    ``ceiling`` caps the level of every run's spans (None: none but the opt-in's); each
    segment exports at its own run's level under that cap, and at most ``metadata`` unless
    the operator opted content in.
    """
    wanted = signals(environ)
    if not wanted:
        return None
    try:
        otel = import_module("toolwire.telemetry.otel")
    except ImportError:
        _warn_once("extra", "OTEL_* is set but toolwire[otel] is not installed: no telemetry")
        return None
    made: RunTelemetry = otel.configured(wanted, level=_level(ceiling, environ))
    return made


def _level(ceiling: object, environ: Mapping[str, str]) -> PrivacyLevel:
    from toolwire.policy.privacy import PrivacyLevel

    level = ceiling if isinstance(ceiling, PrivacyLevel) else PrivacyLevel.FULL
    return level if content_opt_in(environ) else min(level, PrivacyLevel.METADATA)


def _exporter(signal: Signal, environ: Mapping[str, str]) -> str | None:
    upper = signal.upper()
    named = environ.get(f"OTEL_{upper}_EXPORTER", "").strip().lower()
    if not named:
        endpoint = environ.get(f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")
        if signal == "traces":
            endpoint = endpoint or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        named = "otlp" if endpoint else "none"
    first = named.split(",")[0].strip()  # the SDK takes a list; toolwire uses the first
    if first == "none":
        return None
    if first not in EXPORTERS:
        message = f"OTEL_{upper}_EXPORTER={first!r} is not otlp or console: no {signal}"
        _warn_once(f"{signal}:{first}", message)
        return None
    if first == "otlp" and not _http(signal, environ):
        return None
    return first


def _http(signal: Signal, environ: Mapping[str, str]) -> bool:
    protocol = (
        environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL")
        or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "http/protobuf"
    ).strip()
    if protocol in HTTP_PROTOCOLS:
        return True
    _warn_once(f"protocol:{protocol}", f"OTLP protocol {protocol!r} is not supported: toolwire "
               f"exports OTLP over HTTP (http/protobuf): no {signal}")  # fmt: skip
    return False


def warn_once(key: str, message: str) -> None:
    """Log ``message`` as a warning the first time ``key`` is seen in this process."""
    _warn_once(key, message)


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning("%s", message)
