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


def test_a_wildcard_matches_subdomains_only_at_a_label_boundary():
    """``*.example.com`` is the subdomains of example.com: a name that merely ends in the same
    letters (``evilexample.com``, registrable by anyone) is another domain."""
    rules = NetworkRules(domains=("*.example.com",))
    assert rules.match("api.example.com", 443) == (True, "allowed by *.example.com")
    assert rules.match("a.b.example.com", 443)[0]
    for host in ("evilexample.com", "EvilExample.com.", "xn--example.com", "api.evilexample.com"):
        assert rules.match(host, 443) == (False, "host not on the allowlist"), host


def test_a_wildcard_never_covers_the_domain_itself():
    """egg's documented meaning (``egg policy suggest --fold`` relies on it): ``*.example.com``
    allows the subdomains, never ``example.com`` — to allow both, list both."""
    for entry in ("*.example.com", "*.example.com:443", "*.example.com."):
        rules = NetworkRules(domains=(entry,))
        for host in ("example.com", "EXAMPLE.com", "example.com."):
            assert rules.match(host, 443) == (False, "host not on the allowlist"), (entry, host)
    both = NetworkRules(domains=("*.example.com", "example.com"))
    assert both.match("example.com", 443) == (True, "allowed by example.com")
