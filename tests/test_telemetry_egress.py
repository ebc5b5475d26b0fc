"""What leaves the process, at the byte level: a real run in a real process, exporting OTLP over
HTTP to a loopback receiver. Canaries planted in the prompt, the tool's arguments, its content,
its artifacts, the thinking and the answer never appear at ``metadata``; at ``redacted`` every
planted secret is masked; artifacts never leave at any level."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import toolwire

from .otlp_receiver import Received, receiver

SOURCE = str(Path(toolwire.__file__).resolve().parents[1])
ANTHROPIC_KEY = "sk-ant-api03-Q9mZr7LwX2vTn4KpYs8Jd6Hc"
GITHUB_TOKEN = "ghp_" + "R4nd0mT0k3nB0dy7Xy9Qw2Er5Ty8Ui1Op3As6"
CANARIES = {
    "prompt": f"PROMPT-CANARY-11 {ANTHROPIC_KEY}",
    "arguments": f"ARGUMENT-CANARY-22 {GITHUB_TOKEN}",
    "content": f"CONTENT-CANARY-33 {ANTHROPIC_KEY}",
    "artifact": f"ARTIFACT-CANARY-44 {GITHUB_TOKEN}",
    "thinking": f"THINKING-CANARY-55 {ANTHROPIC_KEY}",
    "answer": f"ANSWER-CANARY-66 {GITHUB_TOKEN}",
    "refusal": f"REFUSAL-CANARY-77 {ANTHROPIC_KEY}",  # a failed tool's words: its span's error
}
SECRETS = (ANTHROPIC_KEY.removeprefix("sk-ant-"), GITHUB_TOKEN.removeprefix("ghp_"))
RUN = textwrap.dedent(
    """
    import sys
    from toolwire import Artifact, ScriptedProvider, ToolRegistry, ToolResult, tool
    from toolwire.core.errors import ToolRefusal
    from toolwire.policy.privacy import PrivacyLevel
    from toolwire.runs.runtime import RunRequest, Runtime
    from toolwire.store import RunStore

    canary = dict(arg.split("=", 1) for arg in sys.argv[3:])

    @tool(data_class="public")
    def lookup(query: str) -> ToolResult:
        return ToolResult.text(canary["content"], Artifact.text("hits", canary["artifact"]))

    @tool(data_class="public")
    def closed() -> str:
        raise ToolRefusal(canary["refusal"])

    asked = {"id": "c1", "name": "lookup", "arguments": {"query": canary["arguments"]}}
    provider = ScriptedProvider.from_turns([
        {"thinking": canary["thinking"],
         "tool_calls": [asked, {"id": "c2", "name": "closed", "arguments": {}}]},
        {"content": canary["answer"]},
    ])
    with RunStore.open(sys.argv[1], privacy=PrivacyLevel(sys.argv[2])) as store:
        runtime = Runtime(ToolRegistry([lookup, closed]), recorder=store)
        outcome = runtime.run_sync(RunRequest.of(canary["prompt"], provider=provider))
    assert outcome.status == "completed", outcome
    """
)


def export_a_run(tmp_path: Path, level: str, *, opt_in: bool) -> Received:
    with receiver() as received:
        environ = {
            "PATH": os.environ["PATH"],
            "PYTHONPATH": SOURCE,
            "OTEL_EXPORTER_OTLP_ENDPOINT": received.url,
            "OTEL_METRICS_EXPORTER": "otlp",  # the shared endpoint alone sends traces only
            "OTEL_METRIC_EXPORT_INTERVAL": "600000",  # metrics go once, when the process ends
        }
        if opt_in:
            environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
        planted = [f"{name}={value}" for name, value in CANARIES.items()]
        store = str(tmp_path / f"{level}.db")
        done = subprocess.run([sys.executable, "-c", RUN, store, level, *planted], check=False,
                              capture_output=True, text=True, env=environ, timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr
    assert received.bodies("/v1/traces") and received.bodies("/v1/metrics"), received.requests
    spans = received.bodies("/v1/traces")
    assert b"invoke_agent" in spans and b"execute_tool lookup" in spans and b"chat" in spans
    assert b"execute_tool closed" in spans and b"exception.message" in spans
    assert b"gen_ai.client.token.usage" in received.bodies("/v1/metrics")
    return received


@pytest.mark.parametrize(("level", "opt_in"), [("metadata", True), ("none", True),
                                                ("full", False)])  # fmt: skip
def test_no_canary_leaves_when_content_is_not_allowed(
    tmp_path: Path, level: str, opt_in: bool
) -> None:
    sent = export_a_run(tmp_path, level, opt_in=opt_in).everything
    assert b"CANARY" not in sent
    assert not any(secret.encode() in sent for secret in SECRETS)


def test_at_redacted_the_text_leaves_with_every_secret_masked(tmp_path: Path) -> None:
    sent = export_a_run(tmp_path, "redacted", opt_in=True).everything
    for name in ("prompt", "arguments", "content", "thinking", "answer", "refusal"):
        assert CANARIES[name].split()[0].encode() in sent, name
    assert b"sk-ant-***" in sent and b"ghp_***" in sent
    assert not any(secret.encode() in sent for secret in SECRETS)
    assert b"ARTIFACT-CANARY" not in sent


def test_at_full_the_text_leaves_but_an_artifact_never_does(tmp_path: Path) -> None:
    sent = export_a_run(tmp_path, "full", opt_in=True).everything
    for name in ("prompt", "arguments", "content", "thinking", "answer"):
        assert CANARIES[name].encode() in sent, name
    assert b"ARTIFACT-CANARY" not in sent
    assert GITHUB_TOKEN.encode() in sent  # in the arguments and the answer, not the artifact
    # A failed tool's error text (status and exception event) is masked even here.
    assert b"Error: REFUSAL-CANARY-77 sk-ant-***" in sent
