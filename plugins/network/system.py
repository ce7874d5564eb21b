"""The system's resolver and connector for the filtering proxy: the built-in, ``trylast`` answer
to ``egg_network_transport``.

A default that is an ordinary implementation (as datasette's and ``llm``'s defaults are) rather
than the core's fallback for ``None``: any plugin that answers the hook — a resolver of one's own,
a corporate relay, the test harness's loopback seam — is asked first and wins, and no code of the
core or of a platform tests for "no plugin answered". The proxy still decides every request.
"""

from __future__ import annotations

from egg_core.api import NetworkTransport, hookimpl, system_transport


@hookimpl(trylast=True)
def egg_network_transport() -> NetworkTransport:
    return system_transport()
