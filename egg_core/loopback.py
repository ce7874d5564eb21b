"""Which host names and addresses are this machine: one answer for the policy and the proxy.

``egg explain`` turns ``network: ['localhost:11434']`` into a forwarded local port, and the
filtering proxy refuses loopback except for forwarded ports. If the two disagreed about a
spelling (``localhost.localdomain``, ``LOCALHOST.``, ``[::1]``, ``127.1``, ``0.0.0.0``), explain
would show a domain as allowed that the proxy then refuses — or, worse, the proxy would let a
name through to the host's own services. So both ask :func:`is_loopback`.
"""

from __future__ import annotations

import ipaddress
import re
import socket

#: names every resolver maps to this machine (``*.localhost`` too, RFC 6761)
LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})


def normalize(host: str) -> str:
    """Lower case, no trailing dot, no IPv6 brackets."""
    return host.strip().lower().rstrip(".").removeprefix("[").removesuffix("]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, any spelling) reaches this machine itself: the
    loopback names and ``*.localhost``, 127.0.0.0/8, ::1, an IPv4-mapped loopback, and the
    unspecified addresses 0.0.0.0 and ::, which a connect() on Linux sends to this machine."""
    name = normalize(host)
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    address = parse_address(name)
    return address is not None and (address.is_loopback or address.is_unspecified)


def parse_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """An IP address in any spelling the C library accepts — ``127.1``, ``2130706433``,
    ``0x7f.1`` as well as the usual forms, a zone index dropped — or None for a name. An
    IPv4-mapped IPv6 address is returned as the IPv4 address it maps."""
    text = normalize(text).split("%")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        pass
    else:
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            return address.ipv4_mapped
        return address
    if re.fullmatch(r"[0-9a-fx.]+", text) and not text.endswith("."):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    return None
