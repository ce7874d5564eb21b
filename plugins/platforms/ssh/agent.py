"""The filtered ssh agent's wiring, for any platform whose proxy thread serves it: whether a
launch gets one, and the handler of its connections (:class:`egg_core.agentfilter.AgentFilter`
does the filtering)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from egg_core.api import EffectivePolicy

SSH_AUTH_SOCK = "SSH_AUTH_SOCK"


def wanted(env: dict[str, str]) -> bool:
    """Whether egg.yaml passes ``SSH_AUTH_SOCK`` (by name: :mod:`egg_core.env`) and the host has
    an agent there: the sandbox then gets a filtered agent of egg's, never the host's socket."""
    path = env.get(SSH_AUTH_SOCK, "")
    return bool(path) and os.path.isabs(path)


def handler(policy: EffectivePolicy, host_keys: Sequence[str], upstream: str, log: Any) -> Any:
    """The filtered agent's connection handler: signatures only for sessions bound to a host
    key of ``host_keys`` (the allowed hosts' known_hosts lines), or to a host certificate one
    of their ``@cert-authority`` keys signed for the host it vouches for, refusals logged in
    ``log`` (kind ``ssh-agent``, which ``egg policy suggest`` skips)."""
    from egg_core.api.platform import AgentFilter, agent_key_blobs
    from egg_core.api.platform import agent_revoked_blobs as revoked

    def record(**fields: Any) -> None:
        log.write(kind="ssh-agent", **fields)

    keys = agent_key_blobs(host_keys)
    vouching = authorities(policy, host_keys)
    return AgentFilter(upstream, keys, record, vouching, revoked(host_keys)).handle


def authorities(policy: EffectivePolicy, host_keys: Sequence[str]) -> dict[bytes, set[str]]:
    """Each ``@cert-authority`` key of ``host_keys`` with the allowed host names its lines
    vouch for (as ssh matches a line: against ``host`` on port 22, ``[host]:port`` on another;
    a certificate then names the bare host among its principals)."""
    from egg_core.api.platform import agent_key_lines

    from .route import line_applies, ssh_name, targets

    found: dict[bytes, set[str]] = {}
    for marker, patterns, blob in agent_key_lines(host_keys):
        if marker != "@cert-authority":
            continue
        for host, port in targets(policy):
            if line_applies(patterns, ssh_name(host, port)):
                found.setdefault(blob, set()).add(host)
    return found


def key_count(policy: EffectivePolicy, host_keys: Sequence[str]) -> int:
    """How many host keys and certificate authorities the agent may sign logins for (``egg
    explain``)."""
    from egg_core.api.platform import agent_key_blobs

    return len(agent_key_blobs(host_keys)) + len(authorities(policy, host_keys))
