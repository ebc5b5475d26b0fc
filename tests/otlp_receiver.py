"""A loopback OTLP/HTTP receiver for tests: it keeps every request body it is sent."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
def receiver(refused: frozenset[str] = frozenset()) -> Iterator[Received]:
    """Serve on a free loopback port until the block ends; a path in ``refused`` is answered
    404, as a backend that takes traces but no metrics answers them."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.requests.append((self.path, body))
            self.send_response(404 if self.path in refused else 200)
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
