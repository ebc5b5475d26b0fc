"""An MCP server (the SDK's MCPServer over stdio) that misbehaves on request.

Tools: ``echo`` answers; ``crash`` kills the process mid-call; ``quit_soon`` answers, then the
process exits between calls; ``hang`` never answers; ``leak`` prints the value of
$TROUBLE_SECRET on stderr and answers without it; ``flood`` writes megabytes to stderr
without a newline, then one short line, and answers; ``flood_stdout`` writes megabytes to
stdout (where its answers go) without a newline; ``environment`` answers with the names of
its environment variables. With
``--once MARKER`` the server starts once: if MARKER exists it prints an error and exits 1,
else it creates MARKER and serves.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from mcp.server import MCPServer
from mcp.server import stdio as sdk_stdio

app = MCPServer("trouble")


@app.tool()
def echo(text: str) -> str:
    """Answer with the text."""
    return f"echo: {text}"


@app.tool()
def crash() -> str:
    """Die in the middle of the call."""
    print("crashing now", file=sys.stderr, flush=True)
    os._exit(3)


@app.tool()
def quit_soon() -> str:
    """Answer, then exit a moment later."""
    threading.Timer(0.2, os._exit, args=(0,)).start()
    return "bye"


@app.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "too late"


@app.tool()
def leak(text: str) -> str:
    """Print a secret on stderr, answer without it."""
    print(f"debug: token={os.environ.get('TROUBLE_SECRET', '')}", file=sys.stderr, flush=True)
    return f"done: {text}"


@app.tool()
def flood(megabytes: int) -> str:
    """Write ``megabytes`` MB to stderr with no newline, then a short line; answer."""
    block = b"x" * 2**20
    for _ in range(megabytes):
        sys.stderr.buffer.write(block)
    sys.stderr.buffer.write(b"\nflood over\n")
    sys.stderr.buffer.flush()
    return f"flooded {megabytes} MB"


@app.tool()
def flood_stdout(megabytes: int) -> str:
    """Write ``megabytes`` MB to the client, under the SDK's own writer, with no newline."""
    # While it serves, the SDK points fd 1 at stderr and writes its messages to a duplicate.
    claim = sdk_stdio._claims.get(1)
    wire = 1 if claim is None or claim.private_fd is None else claim.private_fd
    block = b"x" * 2**20
    for _ in range(megabytes):
        os.write(wire, block)
    return f"flooded stdout with {megabytes} MB"


@app.tool()
def environment() -> str:
    """The names of this process's environment variables, sorted."""
    return " ".join(sorted(os.environ))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--once":
        marker = Path(sys.argv[2])
        if marker.exists():
            print("cannot start: the database is locked", file=sys.stderr, flush=True)
            sys.exit(1)
        marker.touch()
    app.run()


if __name__ == "__main__":
    main()
