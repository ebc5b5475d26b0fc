"""Real model servers on loopback: llama-cpp-python's OpenAI-compatible server with the
SmolLM2-135M-Instruct GGUF, and a LiteLLM proxy in front of it.

Both come from the cache ``scripts/real-servers`` fills (its manifest names the interpreters
and the model; ``TOOLWIRE_REAL_SERVERS`` holds the manifest's path). Each server runs with
``guard/`` on its path, which refuses and logs every connection to a host that is not
loopback: the tests show that neither server reaches out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from ..served import free_port

GUARD = Path(__file__).with_name("guard")
MODEL = "smollm2"  # the name both servers give the GGUF
MASTER_KEY = "sk-toolwire-real-servers"  # LiteLLM's master key: loopback only, made up here
START_TIMEOUT_S = 240  # LiteLLM imports for tens of seconds on two busy cores
CONTEXT = 2048  # tokens; small, so a test can overflow it cheaply


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    llama_python: Path
    litellm: Path
    model: Path
    versions: dict[str, str]

    @classmethod
    def load(cls, path: Path) -> Manifest:
        body = json.loads(path.read_text())
        return cls(
            llama_python=Path(body["llama_python"]),
            litellm=Path(body["litellm"]),
            model=Path(body["model"]),
            versions=dict(body["versions"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    """A running server: its root URL (no path), the key it takes (None: none), and the file
    its output goes to."""

    url: str
    key: str | None
    log: Path
    egress: Path

    def refused(self) -> list[str]:
        """Every connection the server tried to a host that is not loopback."""
        return self.egress.read_text().splitlines() if self.egress.exists() else []


def _environment(folder: Path, extra: dict[str, str]) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        PYTHONPATH=str(GUARD),
        TOOLWIRE_EGRESS_LOG=str(folder / "egress.log"),
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        NO_PROXY="*",
        **extra,
    )
    return env


@contextmanager
def _process(
    command: Sequence[str], folder: Path, env: dict[str, str], ready: str, key: str | None
) -> Iterator[Server]:
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(command), cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    url = _url_of(command)
    try:
        _wait(process, url + ready, log, key)
        yield Server(url=url, key=key, log=log, egress=folder / "egress.log")
    finally:
        _stop(process)


def _url_of(command: Sequence[str]) -> str:
    port = command[list(command).index("--port") + 1]
    return f"http://127.0.0.1:{port}"


def _wait(process: subprocess.Popen[bytes], url: str, log: Path, key: str | None) -> None:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{url}: the server ended ({process.returncode}):\n{_tail(log)}")
        try:
            if httpx.get(url, timeout=2, headers=headers).is_success:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"{url}: not up after {START_TIMEOUT_S} s:\n{_tail(log)}")


def _tail(log: Path) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-40:])


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextmanager
def llama_server(manifest: Manifest, folder: Path) -> Iterator[Server]:
    """llama-cpp-python's server, one thread (two cores are shared), tools by chatml."""
    command = [
        str(manifest.llama_python), "-m", "llama_cpp.server",
        "--model", str(manifest.model), "--model_alias", MODEL,
        "--chat_format", "chatml-function-calling",
        "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", str(CONTEXT),
        "--host", "127.0.0.1", "--port", str(free_port()),
    ]  # fmt: skip
    with _process(command, folder, _environment(folder, {}), "/v1/models", None) as server:
        yield server


LITELLM_CONFIG = """\
model_list:
  - model_name: {model}
    litellm_params:
      model: openai/{model}
      api_base: {upstream}/v1
      api_key: none
litellm_settings:
  telemetry: false
  use_chat_completions_url_for_anthropic_messages: true
general_settings:
  master_key: {key}
"""


@contextmanager
def litellm_proxy(manifest: Manifest, upstream: Server, folder: Path) -> Iterator[Server]:
    """A LiteLLM proxy in front of ``upstream``: a master key, its local cost map, no
    telemetry, no database."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yaml"
    config.write_text(LITELLM_CONFIG.format(model=MODEL, upstream=upstream.url, key=MASTER_KEY))
    env = _environment(
        folder,
        {
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_MODE": "PRODUCTION",  # no .env read from the working folder
            "LITELLM_TELEMETRY": "False",
            "LITELLM_LOG": "ERROR",
        },
    )
    command = [
        str(manifest.litellm), "--config", str(config), "--host", "127.0.0.1",
        "--port", str(free_port()), "--num_workers", "1", "--telemetry", "False",
    ]  # fmt: skip
    with _process(command, folder, env, "/health/liveliness", MASTER_KEY) as server:
        yield server
