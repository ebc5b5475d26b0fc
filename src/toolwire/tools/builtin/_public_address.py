"""Which resolved addresses ``probe_url`` may connect to: public ones, and only those.

An address is public when ``ipaddress`` calls it global and it is not multicast. An IPv6
address that carries an IPv4 address inside it reaches that IPv4 host through a translator or a
tunnel, so it is public only when every IPv4 it embeds is public too:

- IPv4-mapped ``::ffff:a.b.c.d`` and IPv4-compatible ``::a.b.c.d`` (RFC 4291);
- SIIT IPv4-translated ``::ffff:0:a.b.c.d`` (RFC 2765);
- NAT64 well-known prefix ``64:ff9b::a.b.c.d`` (RFC 6052);
- 6to4 ``2002:aabb:ccdd::/48`` (RFC 3056).

Two kinds are refused whatever they embed: the NAT64 local-use prefix ``64:ff9b:1::/48``
(RFC 8215: translated by a local operator's gateway, in any of six layouts) and Teredo
``2001::/32`` (RFC 4380: relayed, with a server and an obfuscated client address).
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, IPv6Network, ip_address

NAT64_LOCAL_USE = IPv6Network("64:ff9b:1::/48")
TEREDO = IPv6Network("2001::/32")
# Prefixes whose last 32 bits are the embedded IPv4 address.
LOW_32_BIT_EMBEDDINGS = (
    IPv6Network("::ffff:0:0/96"),  # IPv4-mapped
    IPv6Network("::/96"),  # IPv4-compatible (deprecated)
    IPv6Network("::ffff:0:0:0/96"),  # SIIT IPv4-translated
    IPv6Network("64:ff9b::/96"),  # NAT64 well-known prefix
)
_LOW_32_BITS = 0xFFFF_FFFF


def is_public(address: str) -> bool:
    """True when ``address`` (an IP literal, scope id allowed) may be connected to."""
    ip = ip_address(address.split("%", 1)[0])
    if isinstance(ip, IPv6Address) and ip.sixtofour is not None:
        # The tunnel reaches the IPv4 it embeds, which alone decides: Python 3.13 (and 3.12.4
        # on) calls all of 2002::/16 non-global, following IANA's registry; 3.11 did not.
        return _plainly_public(ip.sixtofour)
    if not _plainly_public(ip):
        return False
    if isinstance(ip, IPv4Address):
        return True
    if ip in NAT64_LOCAL_USE or ip in TEREDO:
        return False
    return all(_plainly_public(inner) for inner in embedded_ipv4(ip))


def embedded_ipv4(ip: IPv6Address) -> list[IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (6to4 and the 32-bit-suffix prefixes)."""
    inner = [ip.sixtofour] if ip.sixtofour is not None else []
    if any(ip in network for network in LOW_32_BIT_EMBEDDINGS):
        inner.append(IPv4Address(int(ip) & _LOW_32_BITS))
    return inner


def _plainly_public(ip: IPv4Address | IPv6Address) -> bool:
    return ip.is_global and not ip.is_multicast
