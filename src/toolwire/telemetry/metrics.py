"""The metrics of runs: runs by status, tool calls by tool and outcome, tokens, cost and
provider latency by model, bytes of tool output sent to providers (the egress ledger, by
provider, tool, data class and integrity label: see :mod:`toolwire.policy.egress`), and the
depth of the run queue when there is one.

The GenAI conventions name two of them (``gen_ai.client.token.usage`` and
``gen_ai.client.operation.duration``, with their bucket boundaries); the others are toolwire's
own, under ``toolwire.``. Attributes are names and codes only: a tool name a model made up (one
that names no registered tool, whatever became of the call) is counted as ``unknown``, at every
level, so a model can neither grow the number of series nor write into one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics

from toolwire.core.egress import Sent
from toolwire.loop.seam import Refused
from toolwire.telemetry.genai import ERROR_TYPE, STATUS, Attributes

# The conventions' explicit bucket boundaries for the two GenAI histograms.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                 16777216, 67108864)  # fmt: skip
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92)  # fmt: skip
UNKNOWN_TOOL = "unknown"
RUNS = "toolwire.runs"
TOOL_CALLS = "toolwire.tool.calls"
COST = "toolwire.cost"
QUEUE_DEPTH = "toolwire.queue.depth"
EGRESS_BYTES = "toolwire.egress.bytes"
DATA_CLASS = "toolwire.data_class"
INTEGRITY = "toolwire.integrity"
QueueDepth = Callable[[], int]


class Instruments:
    """The instruments of one meter; each ``record_*`` adds one measurement."""

    def __init__(self, provider: MeterProvider, version: str) -> None:
        meter = provider.get_meter("toolwire", version)
        self._meter = meter
        self.runs = meter.create_counter(RUNS, "{run}", "Run segments ended, by status.")
        self.tool_calls = meter.create_counter(
            TOOL_CALLS, "{call}", "Tool calls, by tool and outcome (ok, error, refused)."
        )
        self.cost = meter.create_counter(COST, "USD", "The price of model calls, by model.")
        self.egress = meter.create_counter(
            EGRESS_BYTES, "By", "Bytes of tool output sent to providers (every request and "
            "copy), by provider, tool, data class and integrity label.",
        )  # fmt: skip
        self.tokens = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE, "{token}",
            "Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )  # fmt: skip
        self.duration = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION, "s", "GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )  # fmt: skip

    def record_call(
        self, model: Attributes, seconds: float, tokens: tuple[int, int] | None, cost: float | None
    ) -> None:
        """One model call: its latency, its tokens (input, output) and its price."""
        self.duration.record(seconds, model)
        if tokens is None:
            return
        for kind, count in zip(("input", "output"), tokens, strict=True):
            self.tokens.record(count, {**model, gen_ai.GEN_AI_TOKEN_TYPE: kind})
        if cost is not None:
            self.cost.add(cost, model)

    def record_tool(
        self, name: str, refused: str | None, is_error: bool, *, registered: bool
    ) -> None:
        """One tool call; ``registered``: whether ``name`` names a registered tool."""
        outcome = "refused" if refused else "error" if is_error else "ok"
        shown = name if registered and refused != Refused.UNKNOWN_TOOL else UNKNOWN_TOOL
        attributes: Attributes = {gen_ai.GEN_AI_TOOL_NAME: shown, "toolwire.tool.outcome": outcome}
        if refused:
            attributes[ERROR_TYPE] = refused
        self.tool_calls.add(1, attributes)

    def record_egress(self, sent: Sent) -> None:
        """What one request sent one provider of tool output, every copy counted (a name
        the model made up is already ``(unregistered)``: see the ledger)."""
        for line in sent.lines:
            attributes: Attributes = {
                gen_ai.GEN_AI_PROVIDER_NAME: sent.provider, gen_ai.GEN_AI_TOOL_NAME: line.tool,
                DATA_CLASS: line.data_class, INTEGRITY: line.label,
            }  # fmt: skip
            self.egress.add(line.wire_bytes * sent.copies, attributes)

    def record_run(self, status: str, provider: str) -> None:
        self.runs.add(1, {STATUS: status, gen_ai.GEN_AI_PROVIDER_NAME: provider})

    def observe_queue_depth(self, depth: QueueDepth) -> None:
        """Report ``depth()`` (runs waiting in the queue) at each collection."""

        def observe(_: CallbackOptions) -> Iterable[Observation]:
            yield Observation(depth())

        self._meter.create_observable_gauge(QUEUE_DEPTH, [observe], "{run}",
                                            "Queued runs not yet started.")  # fmt: skip
