"""The allowlist's matching (egg_core.netrules), which the proxy and ``egg policy suggest`` share."""

from __future__ import annotations

from egg_core.netrules import NetworkRules


def test_every_entry_for_a_host_counts_not_only_the_first():
    rules = NetworkRules(
        domains=("github.com", "github.com:22", "*.example.com", "a.example.com:8443")
    )
    assert rules.match("github.com", 443)[0] and rules.match("github.com", 22)[0]
    assert rules.match("a.example.com", 8443)[0] and rules.match("a.example.com", 443)[0]
    allowed, why = rules.match("github.com", 8080)
    assert not allowed and why == "port 8080 is not allowed for github.com (only 80, 443)"
    assert rules.match("other.org", 443) == (False, "host not on the allowlist")
