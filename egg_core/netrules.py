"""The network allowlist as pure rules: which (host, port) an effective policy lets through, and
what a decision says. No sockets, no resolver, no event loop — the filtering proxy
(:mod:`egg_core.netproxy`) is the transport that asks these rules, resolves, and dials.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from egg_core.converters import to_tuple

#: the ports a listed name may be reached on when its entry names none
DEFAULT_PORTS = (80, 443)


@attrs.frozen
class Decision:
    allow: bool
    reason: str
    address: str | None = None  # the checked address to connect to
    would_deny: bool = False  # observe mode: enforce would have denied
    #: the policy allows this destination but it cannot be reached (the name does not resolve):
    #: not a policy decision, so it is logged as allowed, with this, and the client told so
    unreachable: str | None = None
    #: whether the host was on the allowlist (loopback names: whether the port is forwarded)
    listed: bool = False


@attrs.frozen(kw_only=True)
class NetworkRules:
    """The allowlist part of an effective policy."""

    domains: tuple[str, ...] = attrs.field(default=(), converter=to_tuple)
    local_ports: tuple[int, ...] = attrs.field(default=(), converter=to_tuple)
    mode: str = "enforce"

    def match(self, host: str, port: int) -> tuple[bool, str]:
        """Whether (host, port) is on the list, and which entry (or why not)."""
        host = host.lower().rstrip(".")
        refusal: str | None = None
        for entry in self.domains:
            name, entry_port = split_entry(entry.lower())
            name = name.rstrip(".")
            ports = (int(entry_port),) if entry_port else DEFAULT_PORTS
            if name == "*":
                return True, "network '*'"
            if name.startswith("*."):
                hit = host.endswith(name[1:]) and host != name[2:]
            else:
                hit = host == name
            if hit and port in ports:
                return True, f"allowed by {entry}"
            if hit and refusal is None:
                # another entry may still allow this port (github.com and github.com:22)
                refusal = f"port {port} is not allowed for {entry} (only {_ports(ports)})"
        return False, refusal or "host not on the allowlist"


def split_entry(entry: str) -> tuple[str, str]:
    """An allowlist entry as (name, port as written or ""): ``host``, ``host:port``,
    ``[v6]:port``, a bare IPv6 address (more than one colon: no port)."""
    if entry.startswith("["):
        name, _, rest = entry[1:].partition("]")
        return name, rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        name, _, port = entry.rpartition(":")
        return name, port
    return entry, ""


def _ports(ports: Iterable[int]) -> str:
    return ", ".join(str(p) for p in ports)
