"""Where linux-ns puts the ssh route (:mod:`egg_plugins.platforms.ssh.route`): its directory
read-only at :data:`ROUTE_INSIDE`, and its config over ``/etc/ssh/ssh_config``, which every
``ssh`` reads (wherever the agent, git or scp calls it from) and which no user config of the
sandbox's can override, since ``~/.ssh`` stays denied."""

from __future__ import annotations

import os
from collections.abc import Sequence

from egg_core.api.platform import observe

#: where the route's directory appears inside the sandbox
ROUTE_INSIDE = "/run/egg-ssh"
#: the system-wide client config every ssh reads (when the host has one, egg's is bound over it)
SYSTEM_CONFIG = "/etc/ssh/ssh_config"


def mounts_for(route: str) -> Sequence[tuple[str, str]]:
    """(source, destination) of the route's read-only binds: its directory, and its config over
    the system's when the host has one (every ssh reads it; without one, ssh is not there)."""
    binds = [(route, ROUTE_INSIDE)]
    if observe.isfile(SYSTEM_CONFIG):
        binds.append((os.path.join(route, "ssh_config"), SYSTEM_CONFIG))
    return binds
