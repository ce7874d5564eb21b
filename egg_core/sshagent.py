"""Where ssh agents listen on this host: the sockets a platform masks when ``~/.ssh`` is denied.

An agent could reach an ssh agent without ``SSH_AUTH_SOCK`` by finding its socket where ssh agents
usually put it, so egg's protections (:func:`egg_core.protections.observe_host`) collect every
live one. The search goes through :mod:`egg_core.observe`: a socket appearing later changes egg
exec's facts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from egg_core import observe
from egg_core.agentsockets import live_sockets

if TYPE_CHECKING:
    from collections.abc import Mapping

SSH_AUTH_SOCK = "SSH_AUTH_SOCK"


def ssh_agent_socket_paths(environ: Mapping[str, str], home: Path) -> list[str]:
    """Live ssh-agent endpoints on this host: the one in SSH_AUTH_SOCK and the usual places.

    Only paths that exist are returned (a platform masks each one); the list is sorted so that
    the same host state always yields the same sandbox. The answer is one fact of its own
    (:func:`live_sockets` is asked again before a cached launch runs): the usual places include
    ``/tmp``, whose listing changes all the time for reasons that do not matter here.
    """
    sock = environ.get(SSH_AUTH_SOCK)
    arguments = (
        os.path.abspath(sock) if sock else None,
        tuple(ssh_agent_socket_patterns(environ, home)),
    )
    with observe.unrecorded():
        found = live_sockets(*arguments)
    observe.custom(CHECKER, arguments, found)
    return list(found)


#: the exec cache's checker of the fact above (a module of the standard library alone)
CHECKER = "egg_core.agentsockets:live_sockets"


def ssh_agent_socket_patterns(environ: Mapping[str, str], home: Path) -> list[str]:
    """Where ssh agents usually put their socket (patterns in which only ``*`` is a wildcard: see
    :mod:`egg_core.agentsockets`)."""
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
