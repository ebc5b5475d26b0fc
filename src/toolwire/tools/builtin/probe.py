"""``probe_url``: an HTTP GET to one of the workspace's own base URLs, never anywhere else.

Egress rules, checked in order:
- a path starting with ``/`` (not ``//``) is taken relative to the first configured base;
- an absolute URL must be http(s), carry no user info, and its ``host:port`` (ports defaulted
  from the scheme) must equal a configured base's exactly; hosts never come from the model;
- the host is resolved once; every address must be public (no private, loopback, link-local,
  reserved, multicast or unspecified address, nor an IPv6 address that embeds or tunnels to
  one: see ``_public_address``), and the request connects to the first of them, so a second
  DNS answer cannot redirect it (the ``Host`` header and TLS name stay the host);
- redirects are not followed, the timeout is ``PROBE_TIMEOUT_SECONDS`` and at most
  ``MAX_BODY_BYTES`` of the body are read. The body excerpt is redacted.
"""

from __future__ import annotations

import httpx

from toolwire.core.errors import ToolRefusal
from toolwire.core.redact import mask_secrets
from toolwire.core.result import Artifact, ToolResult
from toolwire.tools.api import ToolContext
from toolwire.tools.builtin._common import builtin, echo, workspace_of
from toolwire.tools.builtin._public_address import is_public
from toolwire.workspace.config import Workspace

PROBE_TIMEOUT_SECONDS = 5.0  # a health check, not a download
MAX_BODY_BYTES = 8_000  # enough to see an error page's message
MAX_URL_CHARS = 2_000
_DEFAULT_PORTS = {"http": 80, "https": 443}


@builtin(
    group="system",
    data_class="system_diagnostics",
    integrity="untrusted",
    requires_admin=True,
    open_world=True,
)
def probe_url(context: ToolContext, url: str) -> ToolResult:
    """GET a URL of the workspace's own site (a configured base URL) and report status and body.

    Artifact: ``link`` ``{url, text}`` to the probed URL.
    """
    workspace = workspace_of(context)
    target = allowed_url(workspace, url)
    address = public_address(workspace, target)
    response_text = _get(workspace, target, address)
    return ToolResult.text(response_text, Artifact.link("probed URL", str(target)))


def allowed_url(workspace: Workspace, raw: str) -> httpx.URL:
    """The URL to probe, if it belongs to a configured base; otherwise a refusal."""
    if not workspace.base_urls:
        raise ToolRefusal("the workspace has no base URLs configured.")
    if len(raw) > MAX_URL_CHARS or any(c in raw for c in "\x00\r\n\t "):
        raise ToolRefusal("url is too long or contains control characters or spaces.")
    try:
        if raw.startswith("/") and not raw.startswith("//"):
            url = httpx.URL(workspace.base_urls[0]).join(raw)
        else:
            url = httpx.URL(raw)
    except httpx.InvalidURL:
        raise ToolRefusal(f"url {echo(raw)} is not a valid URL.") from None
    if url.scheme not in _DEFAULT_PORTS or url.userinfo:
        raise ToolRefusal("url must be http(s) and carry no user name or password.")
    if _origin(url) not in {_origin(httpx.URL(b)) for b in workspace.base_urls}:
        raise ToolRefusal(f"url {echo(raw)} is not on a configured base URL.")
    return url


def public_address(workspace: Workspace, url: httpx.URL) -> str:
    """Resolve the host once; refuse if any address is not public."""
    try:
        addresses = workspace.resolver(url.host, _port(url))
    except OSError:
        raise ToolRefusal(f"host {echo(url.host)} could not be resolved.") from None
    if not addresses:
        raise ToolRefusal(f"host {echo(url.host)} could not be resolved.")
    if not all(is_public(address) for address in addresses):
        raise ToolRefusal(f"host {echo(url.host)} resolves to a non-public address.")
    return addresses[0]


def _get(workspace: Workspace, url: httpx.URL, address: str) -> str:
    host = f"[{address}]" if ":" in address else address
    pinned = url.copy_with(host=host.strip("[]"))
    headers = {"Host": url.netloc.decode("ascii"), "User-Agent": "toolwire-probe"}
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    try:
        with httpx.Client(
            transport=workspace.transport, timeout=PROBE_TIMEOUT_SECONDS, follow_redirects=False
        ) as client:
            request = client.build_request("GET", pinned, headers=headers, extensions=extensions)
            response = client.send(request, stream=True)
            try:
                return _describe(url, response, _read_bounded(response))
            finally:
                response.close()
    except httpx.TimeoutException:
        raise ToolRefusal(
            f"{url} did not answer within {PROBE_TIMEOUT_SECONDS:g} seconds."
        ) from None
    except httpx.HTTPError:
        raise ToolRefusal(f"{url} could not be reached.") from None


def _read_bounded(response: httpx.Response) -> bytes:
    body = b""
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) >= MAX_BODY_BYTES:
            break
    return body[:MAX_BODY_BYTES]


def _describe(url: httpx.URL, response: httpx.Response, body: bytes) -> str:
    lines = [f"GET {url}", f"status: {response.status_code} {response.reason_phrase}"]
    lines.append(f"content-type: {response.headers.get('content-type', 'unknown')}")
    if "location" in response.headers:
        lines.append(f"location (not followed): {mask_secrets(response.headers['location'][:500])}")
    excerpt = mask_secrets(body.decode("utf-8", "replace"))
    lines.append(f"body (first {MAX_BODY_BYTES} bytes):\n{excerpt}")
    return "\n".join(lines)


def _port(url: httpx.URL) -> int:
    return url.port or _DEFAULT_PORTS[url.scheme]


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return (url.scheme, url.host.lower(), url.port or _DEFAULT_PORTS.get(url.scheme, 0))
