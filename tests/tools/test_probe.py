from __future__ import annotations

from ipaddress import IPv4Address

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import ArtifactType
from toolwire.tools.builtin._public_address import is_public
from toolwire.workspace.config import Workspace

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


NON_PUBLIC = "Error: host 'shop.example' resolves to a non-public address."


@pytest.mark.parametrize(
    "address",
    [
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:10.0.0.5",
        "::127.0.0.1",  # IPv4-compatible loopback
        "::169.254.169.254",
        "::ffff:0:192.168.1.1",  # SIIT IPv4-translated
        "64:ff9b::127.0.0.1",  # NAT64 well-known prefix
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b::100.64.0.1",  # NAT64 of carrier-grade NAT
        "64:ff9b:1::5db8:d822",  # NAT64 local use, even of a public IPv4
        "64:ff9b:1:5db8:d8:2200::",
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "2002:a00:5::",  # 6to4 of 10.0.0.5
        "2002:a9fe:a9fe:1:2:3:4:5",  # 6to4 of 169.254.169.254
        "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
        "2001:0:5db8:d822::1",  # Teredo, public server
        "64:ff9b::e000:1",  # NAT64 of multicast 224.0.0.1
    ],
)
def test_ipv6_addresses_embedding_a_non_public_ipv4_are_refused(address: str) -> None:
    workspace, _, seen = site({"shop.example": [PUBLIC, address]})
    result = invoke(workspace, "probe_url", {"url": "https://shop.example/"})
    assert result.content == NON_PUBLIC
    assert seen == []


@pytest.mark.parametrize(
    "address", ["2002:5db8:d822::1", "64:ff9b::5db8:d822", "::5db8:d822", "2606:4700::1111"]
)
def test_ipv6_addresses_embedding_a_public_ipv4_are_probed(address: str) -> None:
    workspace, _, seen = site({"shop.example": [address]})
    result = invoke(workspace, "probe_url", {"url": "https://shop.example/"})
    assert result.content.startswith("GET https://shop.example/\nstatus: 200 OK\n")
    (request,) = seen
    assert request.url.host == address


def embeddings(ipv4: IPv4Address) -> list[str]:
    """Every IPv6 form that carries ``ipv4``: mapped, compatible, translated, NAT64, 6to4,
    Teredo (as server and, obfuscated, as client)."""
    v4 = int(ipv4)
    high, low = f"{v4 >> 16:x}", f"{v4 & 0xFFFF:x}"
    client = v4 ^ 0xFFFF_FFFF
    return [
        f"::ffff:{ipv4}",
        f"::{ipv4}",
        f"::ffff:0:{ipv4}",
        f"64:ff9b::{ipv4}",
        f"64:ff9b:1::{ipv4}",
        f"2002:{high}:{low}::1",
        f"2002:{high}:{low}:ffff:ffff:ffff:ffff:ffff",
        f"2001:0:{high}:{low}::1",
        f"2001:0:5db8:d822:0:ffff:{client >> 16:x}:{client & 0xFFFF:x}",
    ]


@settings(max_examples=60, deadline=None)
@given(
    ipv4=st.ip_addresses(v=4).filter(lambda ip: not ip.is_global),
    form=st.integers(min_value=0, max_value=8),
)
def test_every_ipv6_embedding_of_a_non_global_ipv4_is_refused(ipv4: IPv4Address, form: int) -> None:
    forms = embeddings(ipv4)
    assert all(not is_public(address) for address in forms)
    workspace, _, seen = site({"shop.example": [forms[form]]})
    assert invoke(workspace, "probe_url", {"url": "https://shop.example/"}).content == NON_PUBLIC
    assert seen == []


@given(ipv4=st.ip_addresses(v=4).filter(lambda ip: ip.is_global and not ip.is_multicast))
def test_public_ipv4_embeddings_are_public_outside_mapped_local_use_and_teredo(
    ipv4: IPv4Address,
) -> None:
    # IPv4-mapped (form 0) is left out: Python patch releases differ on whether it is global.
    verdicts = [is_public(address) for address in embeddings(ipv4)[1:]]
    assert verdicts == [True, True, True, False, True, True, False, False]
