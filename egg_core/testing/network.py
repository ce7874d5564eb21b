"""The test harness's network seam: names resolve to given addresses, and connections go to
loopback ports instead, so tests exercise the proxy's allow path with nothing leaving the machine.

An egg plugin (entry point ``test-network``) implementing ``egg_network_transport``; it acts only
when ``EGG_TEST_NETWORK`` is set, as ``name=ADDRESS@127.0.0.1:PORT,...``: ``name`` resolves to
ADDRESS (a public-looking address, so the proxy's address checks run as in production), and a
connection to ADDRESS goes to the loopback PORT. Targets that are not loopback are ignored; a
name it does not list does not resolve at all (no test can reach a real resolver by mistake).
The proxy itself never reads the variable: without this plugin (``EGG_DISABLE_PLUGINS=
test-network``) it has no effect. With it, ``EGG_TEST_PROXY_HEAD_TIMEOUT=SECONDS`` shortens the
time a client has to send its request head, so that a test of slow clients need not wait out
the production deadline (:data:`egg_core.netproxy.HEAD_TIMEOUT`).
"""

from __future__ import annotations

import asyncio

from egg_core import observe
from egg_core.hookspecs import hookimpl
from egg_core.loopback import is_loopback
from egg_core.netproxy import NetworkTransport

SEAM_ENV = "EGG_TEST_NETWORK"
HEAD_TIMEOUT_ENV = "EGG_TEST_PROXY_HEAD_TIMEOUT"


def transport(raw: str, head_timeout: float | None = None) -> NetworkTransport:
    """The seam described by ``raw`` (see the module docstring)."""
    names: dict[str, str] = {}
    targets: dict[str, tuple[str, int]] = {}
    for item in raw.split(","):
        name, _, rest = item.partition("=")
        address, _, target = rest.partition("@")
        host, _, port = target.rpartition(":")
        if not (name and address and host and port.isdigit()) or not is_loopback(host):
            continue
        names[name.lower()] = address
        targets[address] = (host, int(port))

    async def resolve(host: str, port: int) -> list[str]:
        if host.lower() in names:
            return [names[host.lower()]]
        raise OSError(f"{SEAM_ENV} does not know {host}")

    async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        target_host, target_port = targets.get(host, (host, port))
        return await asyncio.open_connection(target_host, target_port)

    return NetworkTransport(resolver=resolve, connector=connect, head_timeout=head_timeout)


@hookimpl
def egg_network_transport() -> NetworkTransport | None:
    # read through observe: egg exec's cache keys on it (a launch with the seam is not cached,
    # so one cached without it must not be used once it is set)
    raw = observe.getenv(SEAM_ENV, "")
    if not raw:
        return None
    timeout = observe.getenv(HEAD_TIMEOUT_ENV, "")
    try:
        head_timeout = float(timeout) if timeout else None
    except ValueError:
        head_timeout = None
    return transport(raw, head_timeout)
