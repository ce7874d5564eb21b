"""Where ssh agents listen on this host: the sockets a platform masks when ``~/.ssh`` is denied.

An agent could reach an ssh agent without ``SSH_AUTH_SOCK`` by finding its socket where ssh agents
usually put it, so the policy (:func:`egg_core.policy.observe_host`) collects every live one. The
search goes through :mod:`egg_core.observe`: a socket appearing later changes egg exec's facts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from egg_core import observe

if TYPE_CHECKING:
    from collections.abc import Mapping

SSH_AUTH_SOCK = "SSH_AUTH_SOCK"


def ssh_agent_socket_paths(environ: Mapping[str, str], home: Path) -> list[str]:
    """Live ssh-agent endpoints on this host: the one in SSH_AUTH_SOCK and the usual places.

    Only paths that exist are returned (a platform masks each one); the list is sorted so that
    the same host state always yields the same sandbox.
    """
    found: set[str] = set()
    sock = environ.get(SSH_AUTH_SOCK)
    if sock:
        found.add(os.path.abspath(sock))
    for pattern in ssh_agent_socket_patterns(environ, home):
        found.update(observe.glob(pattern))
    return sorted(p for p in found if observe.lexists(p))


def ssh_agent_socket_patterns(environ: Mapping[str, str], home: Path) -> list[str]:
    """Where ssh agents usually put their socket (glob patterns)."""
    runtime = environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return [
        "/tmp/ssh-*/agent.*",
        f"{runtime}/ssh-agent*",
        f"{runtime}/openssh_agent",
        f"{runtime}/keyring/ssh",
        f"{runtime}/gcr/ssh",
        f"{runtime}/gnupg/S.gpg-agent.ssh",
        f"{home}/.ssh/agent*",
    ]
