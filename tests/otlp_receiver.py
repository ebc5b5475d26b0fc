"""A loopback OTLP/HTTP receiver for tests: it keeps every request body it is sent; and
``toolwire run`` in a real process exporting to it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

SCRIPT = 'turns:\n  - content: "Done."\n    prompt_tokens: 3\n'
SOURCE = str(Path(__file__).parents[1] / "src")


@dataclass
class Received:
    """What the receiver was sent: ``(path, body)`` per request, in arrival order."""

    url: str = ""
    requests: list[tuple[str, bytes]] = field(default_factory=list)

    def bodies(self, path: str) -> bytes:
        return b"".join(body for found, body in self.requests if found == path)

    @property
    def everything(self) -> bytes:
        return b"".join(body for _, body in self.requests)


@contextmanager
def receiver(refused: frozenset[str] = frozenset(), status: int = 404) -> Iterator[Received]:
    """Serve on a free loopback port until the block ends; a path in ``refused`` is answered
    ``status`` (404, or 405 as some collectors answer), as a backend that takes traces but no
    metrics answers them."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.requests.append((self.path, body))
            self.send_response(status if self.path in refused else 200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield received
    finally:
        server.shutdown()
        server.server_close()


def run_exported(
    tmp_path: Path, received: Received, *args: str, script: str = SCRIPT, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``toolwire run --script ... go`` with ``args``, exporting to ``received``; ``extra``:
    more environment variables."""
    return run_with(tmp_path, {"OTEL_EXPORTER_OTLP_ENDPOINT": received.url, **extra}, args,
                    script=script)  # fmt: skip


def run_with(
    tmp_path: Path, environment: dict[str, str], args: Sequence[str] = (), *, script: str = SCRIPT
) -> subprocess.CompletedProcess[str]:
    """``toolwire run`` of ``script`` in a real process with ``environment`` (and a data
    directory of its own), metrics sent once, when the process ends."""
    path = tmp_path / "script.yaml"
    path.write_text(script)
    environ = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": SOURCE,
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "OTEL_METRIC_EXPORT_INTERVAL": "600000",
        **environment,
    }
    return subprocess.run(
        [sys.executable, "-m", "toolwire", "run", "--script", str(path), *args, "go"],
        capture_output=True, text=True, env=environ, timeout=120, check=False,
    )  # fmt: skip
