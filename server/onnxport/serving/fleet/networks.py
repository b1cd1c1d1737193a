"""The network a report comes from: votes and rates count networks, not tokens (docs/reference/fleet.md, Poisoning).

An IPv4 address counts as its /24 and an IPv6 address as its /48 (a site: one ISP customer usually has a /48
or a /56 and every host a whole /64, so counting /64s or addresses would count one site many times). An
IPv4-mapped IPv6 address (::ffff:a.b.c.d, a dual-stack socket's view of an IPv4 peer) is that IPv4 address.
The prefix is only ever held hashed (limits.key, the store's HMAC); this module never stores it.
"""

from __future__ import annotations

import ipaddress

IPV4_PREFIX = 24
IPV6_PREFIX = 48


def network(address: str | None) -> str:
    """'203.0.113.0/24' for 203.0.113.9, '2001:db8:1::/48' for 2001:db8:1:2::3; what is no IP address (a Unix
    socket's peer, none at all) is one network of its own, named as given."""
    try:
        ip = ipaddress.ip_address((address or "").split("%", 1)[0])  # a scope id (fe80::1%eth0) is no network
    except ValueError:
        return f"not-an-ip:{address or ''}"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = IPV4_PREFIX if ip.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))
