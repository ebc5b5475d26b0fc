"""The person's part of an OAuth sign-in: open a URL, come back to a loopback address.

:class:`LoopbackSignIn` is the SDK's redirect and callback handler pair. The redirect handler
starts a small HTTP server on ``127.0.0.1:<port>`` (the redirect URI's), then shows the
authorization URL (``show``: print it for a person, or, in a test, fetch it as a browser
would); the callback handler waits, at most ``seconds``, for the browser to come back to
``/callback`` with the code, and stops the server.

Invariants:
- The server listens on the loopback interface only, for one sign-in, and answers only
  ``GET /callback``; a request line or header over ``REQUEST_BYTES`` is refused.
- What comes back in the query (the code, the state) is handed to the SDK, which checks the
  state; an ``error`` the authorization server sent back fails the sign-in with its words,
  bounded and redacted. The page the browser shows holds none of it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from urllib.parse import parse_qsl, urlsplit

from mcp.shared.auth import AuthorizationCodeResult

from toolwire.mcp.auth_errors import AuthFailure

CALLBACK_PATH = "/callback"
REQUEST_BYTES = 16_384  # a request line or header: a code and state are far shorter
# A person opens a link, signs in, maybe reads a consent page: five minutes, then give up.
SIGN_IN_SECONDS = 300.0
_PAGE = "<!doctype html><title>toolwire</title><p>{}</p>"
DONE_TEXT = "Signed in: toolwire has the answer. You can close this page."
FAILED_TEXT = "The sign-in did not succeed: see toolwire's terminal."


def redirect_uri(port: int) -> str:
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}"


class LoopbackSignIn:
    """One server's sign-in through a browser that comes back to ``127.0.0.1:port``."""

    def __init__(
        self,
        server: str,
        port: int,
        show: Callable[[str], Awaitable[None]],
        seconds: float = SIGN_IN_SECONDS,
    ) -> None:
        self.server = server
        self.port = port
        self.show = show
        self.seconds = seconds
        self._answer: asyncio.Future[dict[str, str]] | None = None
        self._listener: asyncio.Server | None = None

    def __repr__(self) -> str:
        return f"<LoopbackSignIn {self.server!r} port={self.port}>"

    async def redirect(self, url: str) -> None:
        """Listen for the browser's return, then show ``url`` to whoever signs in."""
        await self._close()
        self._answer = asyncio.get_running_loop().create_future()
        try:
            self._listener = await asyncio.start_server(
                self._serve, "127.0.0.1", self.port, limit=REQUEST_BYTES
            )
        except OSError as exc:
            raise AuthFailure(self.server, f"cannot listen on {redirect_uri(self.port)} for "
                              f"the sign-in: {exc.strerror}") from None  # fmt: skip
        await self.show(url)

    async def callback(self) -> AuthorizationCodeResult:
        """The code the browser brought back."""
        assert self._answer is not None, "redirect() first"
        try:
            async with asyncio.timeout(self.seconds):
                query = await self._answer
        except TimeoutError:
            why = f"no sign-in came back within {self.seconds:g} s"
            raise AuthFailure(self.server, why) from None
        finally:
            await self._close()
        if "error" in query or "code" not in query:
            raise AuthFailure(self.server, "the authorization server refused the sign-in",
                              error=query.get("error", "no code"),
                              description=query.get("error_description"))  # fmt: skip
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                       iss=query.get("iss"))  # fmt: skip

    async def _close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(listener.wait_closed(), 5)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, text = await self._read(reader)
        except (ValueError, asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            status, text = "400 Bad Request", "Not a sign-in answer."
        body = _PAGE.format(text).encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                     + body)  # fmt: skip
        with contextlib.suppress(OSError):
            await writer.drain()
            writer.close()

    async def _read(self, reader: asyncio.StreamReader) -> tuple[str, str]:
        method, target, _ = (await reader.readuntil(b"\r\n")).decode("latin-1").split(" ", 2)
        while (await reader.readuntil(b"\r\n")) != b"\r\n":
            pass  # the headers: nothing in them matters here
        parts = urlsplit(target)
        if method != "GET" or parts.path != CALLBACK_PATH:
            return "404 Not Found", "Not a sign-in answer."
        query = dict(parse_qsl(parts.query))
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(query)
        return "200 OK", (DONE_TEXT if "code" in query and "error" not in query else FAILED_TEXT)
