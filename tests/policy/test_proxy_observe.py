"""What the filtering proxy's observe mode never lets through (DESIGN.md §9 B): observe allows
unlisted *names* and logs that enforce mode would deny them, but a loopback port that is not
forwarded — the host's own services — is refused as in enforce mode, in every spelling of this
machine. The sandbox-level twin is tests/linux/test_network.py's observe-mode CONNECT test."""

from __future__ import annotations

import asyncio

import pytest

from egg_core.netproxy import DecisionLog, FilteringProxy
from egg_core.netrules import Decision, NetworkRules
from tests.policy.test_loopback_agreement import SPELLINGS, never_resolve

PORT = 4000


def decide(mode: str, host: str, port: int = PORT, local_ports: tuple[int, ...] = ()) -> Decision:
    rules = NetworkRules(domains=("api.example.com",), local_ports=local_ports, mode=mode)
    proxy = FilteringProxy(rules, DecisionLog(None), resolver=never_resolve)
    return asyncio.run(proxy.decide(host.strip("[]"), port))


@pytest.mark.parametrize("mode", ["observe", "enforce"])
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_loopback_port_not_forwarded_is_refused_in_observe_mode_too(
    spelling: str, mode: str
) -> None:
    refused = Decision(False, f"loopback port {PORT} is not a forwarded local port")

    assert decide(mode, spelling) == refused


def test_observe_mode_still_reaches_a_forwarded_local_port_and_lets_unlisted_names_through() -> (
    None
):
    """The other side of the refusal above: observe mode is not simply "refuse loopback"."""
    forwarded = decide("observe", "127.0.0.1", local_ports=(PORT,))
    assert (forwarded.allow, forwarded.address) == (True, "127.0.0.1")
    unlisted = decide("observe", "unlisted.example.org", 443)
    assert unlisted.allow and unlisted.would_deny
