"""``egg explain`` and the filtering proxy agree on every spelling of this machine: a loopback
entry in ``network:`` is a forwarded local port for both, never a domain one of them allows and
the other refuses."""

from __future__ import annotations

import asyncio

import pytest

from egg_core.loopback import is_loopback
from egg_core.netproxy import DecisionLog, FilteringProxy
from egg_core.netrules import NetworkRules
from tests.policy.conftest import resolve

SPELLINGS = [
    "localhost",
    "LOCALHOST",
    "localhost.",
    "localhost.localdomain",
    "ip6-localhost",
    "ip6-loopback",
    "app.localhost",
    "127.0.0.1",
    "127.1.2.3",
    "127.1",
    "2130706433",
    "0.0.0.0",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "[::]",
]
NOT_LOOPBACK = ["example.com", "localhost.example.com", "128.0.0.1", "[2001:db8::1]", "10.0.0.1"]


async def never_resolve(host: str, port: int) -> list[str]:
    raise OSError(f"no resolver here ({host})")


def proxy_decides(policy, host: str, port: int):  # type: ignore[no-untyped-def]
    rules = NetworkRules(domains=policy.domains, local_ports=policy.local_ports, mode=policy.mode)
    proxy = FilteringProxy(rules, DecisionLog(None), resolver=never_resolve)
    return asyncio.run(proxy.decide(host.strip("[]"), port))


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_loopback_entry_is_a_forwarded_port_for_explain_and_the_proxy(spelling: str) -> None:
    policy = resolve("shell", f"network: ['{spelling}:4000']\n")

    assert policy.local_ports == (4000,) and policy.domains == ()
    assert [(h.kind, h.value) for h in policy.derived] == [("local_port", "4000")]
    assert proxy_decides(policy, spelling, 4000).allow
    assert not proxy_decides(policy, spelling, 4001).allow


@pytest.mark.parametrize("spelling", NOT_LOOPBACK)
def test_other_hosts_are_not_loopback(spelling: str) -> None:
    assert not is_loopback(spelling)
