from __future__ import annotations

import httpx
import pytest

from toolwire import ArtifactType
from toolwire.workspace import Workspace

from .conftest import invoke

PUBLIC = "93.184.216.34"
NOT_HTTP = "Error: url must be http(s) and carry no user name or password."
CONTROL = "Error: url is too long or contains control characters or spaces."


def off(url: str) -> str:
    return f"Error: url '{url}' is not on a configured base URL."


class Resolver:
    """A DNS fake: fixed answers, and a count of look-ups."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        return self.answers.get(host, [])


def site(
    answers: dict[str, list[str]] | None = None,
    handler: object = None,
    bases: tuple[str, ...] = ("https://shop.example", "http://api.shop.example:8080"),
) -> tuple[Workspace, Resolver, list[httpx.Request]]:
    seen: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if callable(handler):
            response: httpx.Response = handler(request)
            return response
        return httpx.Response(200, text="ok from shop", headers={"content-type": "text/plain"})

    default = {"shop.example": [PUBLIC], "api.shop.example": [PUBLIC]}
    resolver = Resolver(default if answers is None else answers)
    workspace = Workspace(
        base_urls=bases, resolver=resolver, transport=httpx.MockTransport(respond)
    )
    return workspace, resolver, seen


def test_probe_connects_to_the_resolved_address_with_the_original_host() -> None:
    workspace, resolver, seen = site()
    result = invoke(workspace, "probe_url", {"url": "https://shop.example/health?x=1"})
    assert result.content == (
        "GET https://shop.example/health?x=1\nstatus: 200 OK\ncontent-type: text/plain\n"
        "body (first 8000 bytes):\nok from shop"
    )
    (request,) = seen
    assert str(request.url) == f"https://{PUBLIC}/health?x=1"
    assert request.headers["host"] == "shop.example"
    assert request.extensions["sni_hostname"] == "shop.example"
    assert resolver.calls == [("shop.example", 443)]
    (link,) = result.artifacts
    assert link.type is ArtifactType.LINK
    assert link.data == {
        "url": "https://shop.example/health?x=1",
        "text": "https://shop.example/health?x=1",
    }


def test_a_leading_slash_path_resolves_against_the_first_base() -> None:
    workspace, _, seen = site()
    invoke(workspace, "probe_url", {"url": "/products"})
    assert str(seen[0].url) == f"https://{PUBLIC}/products"


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("https://evil.example/", off("https://evil.example/")),
        ("https://shop.example:8443/", off("https://shop.example:8443/")),
        ("http://shop.example/", off("http://shop.example/")),
        ("http://api.shop.example/", off("http://api.shop.example/")),
        ("https://user:pw@shop.example/", NOT_HTTP),
        ("ftp://shop.example/", NOT_HTTP),
        ("file:///etc/passwd", NOT_HTTP),
        ("//evil.example/x", NOT_HTTP),
        ("https://shop.example.evil.example/", off("https://shop.example.evil.example/")),
        ("https://shop.example/\r\nX: y", CONTROL),
        ("https://[::1]/", off("https://[::1]/")),
    ],
)  # fmt: skip
def test_urls_off_the_configured_bases_are_refused(url: str, error: str) -> None:
    workspace, resolver, seen = site()
    assert invoke(workspace, "probe_url", {"url": url}).content == error
    assert seen == [] and resolver.calls == []


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.0.0.5",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fe80::1",
        "0.0.0.0",
        "fd00::1",
    ],
)
def test_non_public_resolutions_are_refused(address: str) -> None:
    workspace, _, seen = site({"shop.example": [PUBLIC, address]})
    result = invoke(workspace, "probe_url", {"url": "https://shop.example/"})
    assert result.content == "Error: host 'shop.example' resolves to a non-public address."
    assert seen == []


def test_unresolvable_hosts_and_missing_bases_are_refused() -> None:
    workspace, _, _ = site({})
    assert invoke(workspace, "probe_url", {"url": "https://shop.example/"}).content == (
        "Error: host 'shop.example' could not be resolved."
    )
    assert invoke(Workspace(), "probe_url", {"url": "https://shop.example/"}).content == (
        "Error: the workspace has no base URLs configured."
    )


def test_redirects_are_not_followed_and_the_body_is_bounded() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            302, headers={"location": "http://169.254.169.254/"}, content=b"x" * 100_000
        )

    workspace, _, seen = site(handler=handler)
    result = invoke(workspace, "probe_url", {"url": "https://shop.example/"})
    assert len(seen) == 1
    assert "status: 302 Found\n" in result.content
    assert "location (not followed): http://169.254.169.254/\n" in result.content
    assert result.content.endswith("body (first 8000 bytes):\n" + "x" * 8000)


def test_transport_failures_are_clear_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("slow", request=request)

    workspace, _, _ = site(handler=handler)
    assert invoke(workspace, "probe_url", {"url": "https://shop.example/"}).content == (
        "Error: https://shop.example/ did not answer within 5 seconds."
    )


def test_body_secrets_are_redacted() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(500, text="error for ann@example.com token=abc123")

    workspace, _, _ = site(handler=handler)
    result = invoke(workspace, "probe_url", {"url": "https://shop.example/"})
    assert result.content.endswith("error for ***@*** token=***")
