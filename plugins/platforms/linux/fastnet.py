"""Run a cached linux-ns launch whose network is an allowlist (``egg exec --agent claude``).

The full path's launch binds the proxy's sockets in its launch directory's ``net`` (which the
sandbox sees at ``/run/egg-net``, with the bridge beside them) and serves them from a thread.
A cached launch gets a launch directory of its own (:func:`egg_core.cachedrun.try_run`), so this
makes its ``net`` the same way — the bridge copied, the sockets bound — points the command line
at it instead of the cached one, serves the sockets from a child process under the cached rules
(:mod:`egg_core.netchild`), and runs the rest as :func:`fastrun.run` does. Nothing heavier than
``os`` is imported here.
"""

from __future__ import annotations

import os

from egg_core.api.fast import netchild

from . import fastrun

TYPE_CHECKING = False
if TYPE_CHECKING:  # importing typing costs milliseconds on the fast path
    from typing import Any

    from egg_core.api.fast import Admission

#: the proxy's socket in the ``net`` directory (the bridge's other sockets are the forwards')
PROXY_SOCKET = "proxy.sock"


def run(entry: dict[str, Any], env: dict[str, str], admit: Admission) -> int | None:
    """The command's exit code; None when the network could not be set up here (the full path
    then prepares the launch and says why) or, as for :func:`fastrun.run`, when the sandbox
    failed before the command started as the host changed under it."""
    network = entry["network"]
    net_dir = os.path.join(entry["run_dir"], "net")
    fds: list[int] = []
    try:
        os.mkdir(net_dir, 0o700)
        _copy(network["bridge"], os.path.join(net_dir, network["bridge_name"]))
        log = network["log"] or os.path.join(entry["run_dir"], "network.log")
        os.close(os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666))
        proxy_fd = netchild.bind(os.path.join(net_dir, PROXY_SOCKET))
        fds.append(proxy_fd)
        port_fds = {}
        for port, name in network["ports"].items():
            port_fds[port] = netchild.bind(os.path.join(net_dir, name))
            fds.append(port_fds[port])
        child = netchild.start(network["rules"], proxy_fd, port_fds, log)
    except OSError:
        for fd in fds:
            os.close(fd)
        return None
    try:
        old = network["net_dir"]
        argv = [net_dir if arg == old else arg for arg in entry["argv"]]
        # the socket gate grants the sandbox this run's proxy sockets, not the cached run's
        grants = dict(entry["gate_grants"])
        grants["directories"] = [net_dir if d == old else d for d in grants["directories"]]
        return fastrun.run({**entry, "argv": argv, "gate_grants": grants}, env, admit)
    finally:
        netchild.stop(child)


def _copy(source: str, destination: str) -> None:
    """``shutil.copyfile`` without shutil (its imports cost the fast path)."""
    with open(source, "rb") as src, open(destination, "xb") as dst:
        dst.write(src.read())
