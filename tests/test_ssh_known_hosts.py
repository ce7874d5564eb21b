"""Which of the host user's known_hosts lines a sandbox gets (:mod:`egg_plugins.platforms.ssh.route`): those of the
hosts its allowlist lets ssh reach, read as ssh reads them — hashed names, ``[host]:port`` for
another port than 22, wildcard and negated patterns, ``@cert-authority`` and ``@revoked`` lines —
and no other (the user's other hosts are nobody's business inside)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from egg_core.policy import EffectivePolicy
from egg_core.profiles import AgentProfile
from egg_plugins.platforms.ssh.route import allowed_lines, targets

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBase64KeyMaterialForTheTestsOnly"


def policy(*domains: str, tmp_path: Path = Path("/nonexistent")) -> EffectivePolicy:
    return EffectivePolicy(
        agent="shell",
        profile=AgentProfile(name="shell", description="a shell", binary="sh"),
        home=str(tmp_path),
        cwd=str(tmp_path),
        fs=[],
        domains=domains,
    )


def hashed(name: str) -> str:
    salt = b"0123456789abcdefghij"
    digest = hmac.new(salt, name.encode(), hashlib.sha1).digest()
    return f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(digest).decode()}"


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        (f"github.com {KEY}", True),
        (f"GitHub.com {KEY}", True),  # ssh lowers the pattern before it compares (match.c)
        (f"gitlab.com {KEY}", False),
        (f"{hashed('github.com')} {KEY}", True),
        (f"{hashed('gitlab.com')} {KEY}", False),
        (f"{hashed('[github.com]:22')} {KEY}", False),  # port 22 is named bare
        (f"[git.corp.example]:2222 {KEY}", True),
        (f"git.corp.example {KEY}", False),  # port 22 is not allowed for it
        (f"{hashed('[git.corp.example]:2222')} {KEY}", True),
        (f"*.com {KEY}", True),
        (f"*.com,!github.com {KEY}", False),
        (f"gitlab.com,github.com {KEY}", True),
        (f"@cert-authority *.com {KEY}", True),
        (f"@cert-authority *.org {KEY}", False),
        (f"@revoked github.com {KEY}", True),
        (f"@revoked gitlab.com {KEY}", False),
        (f"@unknown-marker github.com {KEY}", False),
        ("github.com", False),  # no key: not a line ssh would use
        (f"# github.com {KEY}", False),
    ],
)
def test_a_line_is_kept_when_it_names_an_allowed_host(line: str, kept: bool) -> None:
    allowed = policy("github.com:22", "[git.corp.example]:2222", "api.example.net")
    assert allowed_lines([line], allowed) == ([line] if kept else [])


def test_a_wildcard_entry_of_the_allowlist_keeps_the_plain_names_it_lets_through() -> None:
    """``*.corp.example:22`` names no host to hash, but a plain line's name is asked of the
    allowlist itself (as the proxy would decide it)."""
    allowed = policy("*.corp.example:22")
    lines = [f"git.corp.example {KEY}", f"corp.example {KEY}", f"{hashed('a.corp.example')} {KEY}"]
    assert allowed_lines(lines, allowed) == [f"git.corp.example {KEY}"]


def test_only_named_hosts_and_ports_are_targets() -> None:
    assert targets(policy("github.com:22", "*.example.com:22", "api.example.net")) == [
        ("github.com", 22),
        ("api.example.net", 80),
        ("api.example.net", 443),
    ]
