"""Why a sign-in to an MCP server failed, in words an operator can act on and nothing secret.

An :class:`AuthFailure` names the server, what was refused, the HTTP status and the OAuth
``error`` / ``error_description`` the server sent, each bounded and passed through the secret
masking of :mod:`toolwire.core.redact`, so a token or secret an error page echoes never
reaches the log. :class:`SignInNeeded` is the failure of a run nobody can sign in for: it says
which command signs in.
"""

from __future__ import annotations

from collections.abc import Sequence

from toolwire.core.redact import MASK, mask_opaque_runs, mask_secrets

ERROR_CHARS = 60  # an OAuth error code ("invalid_grant") is one short word
DESCRIPTION_CHARS = 300  # an error_description is a sentence; a page of HTML is not


def bounded(text: str | None, limit: int, hide: Sequence[str] = ()) -> str | None:
    """``text`` with the values ``hide`` names, secret shapes and long opaque runs masked, on
    one line, cut to ``limit``."""
    if text is None:
        return None
    for value in hide:
        text = text.replace(value, MASK) if value else text
    one_line = " ".join(mask_opaque_runs(mask_secrets(text)).split())
    return one_line if len(one_line) <= limit else one_line[:limit] + "…"


class AuthFailure(Exception):
    """A sign-in to ``server`` failed; ``str()`` is for the log and the command line."""

    def __init__(
        self,
        server: str,
        what: str,
        *,
        status: int | None = None,
        error: str | None = None,
        description: str | None = None,
        hide: Sequence[str] = (),
    ) -> None:
        self.server = server
        self.status = status
        self.error = bounded(error, ERROR_CHARS, hide)
        self.description = bounded(description, DESCRIPTION_CHARS, hide)
        said = ": ".join(part for part in (self.error, self.description) if part)
        super().__init__(
            f"{server}: {what}"
            + (f" (HTTP {status})" if status is not None else "")
            + (f": {said}" if said else "")
        )


class SignInNeeded(AuthFailure):
    """The server asks for a sign-in, and nobody is there to sign in."""

    def __init__(self, server: str, source: str) -> None:
        workspace = f" --workspace {source}" if source else ""
        super().__init__(server, "the server needs a sign-in (OAuth): sign in once with "
                         f"`toolwire mcp-login {server}{workspace}`, then run again")  # fmt: skip
