"""The filtered ssh agent's wiring, for any platform whose proxy thread serves it: whether a
launch gets one, and the handler of its connections (:class:`egg_core.agentfilter.AgentFilter`
does the filtering)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

SSH_AUTH_SOCK = "SSH_AUTH_SOCK"


def wanted(env: dict[str, str]) -> bool:
    """Whether egg.yaml passes ``SSH_AUTH_SOCK`` (by name: :mod:`egg_core.env`) and the host has
    an agent there: the sandbox then gets a filtered agent of egg's, never the host's socket."""
    path = env.get(SSH_AUTH_SOCK, "")
    return bool(path) and os.path.isabs(path)


def handler(host_keys: Sequence[str], upstream: str, log: Any) -> Any:
    """The filtered agent's connection handler: signatures only for sessions bound to a host
    key of ``host_keys`` (the allowed hosts' known_hosts lines), refusals logged in ``log``
    (kind ``ssh-agent``, which ``egg policy suggest`` skips)."""
    from egg_core.api.platform import AgentFilter, agent_key_blobs

    def record(**fields: Any) -> None:
        log.write(kind="ssh-agent", **fields)

    return AgentFilter(upstream, agent_key_blobs(host_keys), record).handle


def key_count(host_keys: Sequence[str]) -> int:
    """How many host keys the agent may sign logins for (``egg explain``)."""
    from egg_core.api.platform import agent_key_blobs

    return len(agent_key_blobs(host_keys))
